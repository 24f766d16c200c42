#!/bin/sh
# A build directory configured for another source tree (a moved or copied checkout) is removed
# by scripts/check-build-dir.sh, and one configured for this tree is kept.
set -eu
script=$1/scripts/check-build-dir.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/old" "$work/new/build"
printf 'CMAKE_HOME_DIRECTORY:INTERNAL=%s\n' "$work/old" > "$work/new/build/CMakeCache.txt"
"$script" "$work/new/build" "$work/new" | grep -q "configured for $work/old"
[ ! -e "$work/new/build" ] || { echo "FAIL: the stale build directory was kept"; exit 1; }
mkdir -p "$work/new/build"
printf 'CMAKE_HOME_DIRECTORY:INTERNAL=%s\n' "$work/new" > "$work/new/build/CMakeCache.txt"
"$script" "$work/new/build" "$work/new"
[ -f "$work/new/build/CMakeCache.txt" ] || { echo "FAIL: a build directory of this tree was removed"; exit 1; }
rm -rf "$work/new/build"
"$script" "$work/new/build" "$work/new"  # none yet: nothing to do
# The real thing: a tiny configured project, moved; cmake refuses its build directory until the
# script has removed it.
mkdir -p "$work/proj"
echo 'cmake_minimum_required(VERSION 3.16)
project(tiny NONE)' > "$work/proj/CMakeLists.txt"
cmake -S "$work/proj" -B "$work/proj/build" > /dev/null
mv "$work/proj" "$work/moved"
if cmake -S "$work/moved" -B "$work/moved/build" > /dev/null 2>&1; then
  echo "FAIL: cmake accepted a moved build directory (the test no longer shows the problem)"; exit 1
fi
"$script" "$work/moved/build" "$work/moved" > /dev/null
cmake -S "$work/moved" -B "$work/moved/build" > /dev/null
echo ok
