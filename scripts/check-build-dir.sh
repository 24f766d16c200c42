#!/bin/sh
# scripts/check-build-dir.sh BUILD_DIR SOURCE_DIR
# A build directory remembers the source directory it was configured for (CMakeCache.txt's
# CMAKE_HOME_DIRECTORY). After the checkout is moved or copied, cmake stops with an error
# about a different source directory; the Makefile calls this first, and a build directory
# configured for another source tree is removed so that it is configured afresh.
set -eu
build=$1
src=$(cd "$2" && pwd -P)
cache="$build/CMakeCache.txt"
[ -f "$cache" ] || exit 0
home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")
if [ -n "$home" ] && [ -d "$home" ] && [ "$(cd "$home" && pwd -P)" = "$src" ]; then exit 0; fi
echo "$build was configured for ${home:-another source directory}, not $src (a moved or copied checkout): removing it to configure afresh"
rm -rf "$build"
