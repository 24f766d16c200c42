#!/bin/sh
# make train's guard (scripts/check-run-dir.sh): a folder with a run refuses, naming make resume;
# a new or empty folder passes.
set -eu
script=$1/scripts/check-run-dir.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$script" "$work/new"
mkdir "$work/run" && "$script" "$work/run"
touch "$work/run/train_state.safetensors"
if "$script" "$work/run" 2> "$work/err"; then echo "FAIL: a run folder with a run was accepted"; exit 1; fi
grep -q "already holds a run" "$work/err" && grep -q "make resume" "$work/err" || { cat "$work/err"; exit 1; }
grep -q "^resume: program" "$1/Makefile" || { echo "FAIL: no make resume"; exit 1; }
echo ok
