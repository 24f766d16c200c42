#!/usr/bin/env bash
# Prints the path of tiny shakespeare (for `make train`), looking in order at
#   1. data/tinyshakespeare.txt in the repository (git-ignored),
#   2. ../shared/data/tinyshakespeare.txt next to the repository,
#   3. a fresh download into data/tinyshakespeare.txt (curl or wget).
# Only the path goes to stdout; progress and errors go to stderr. Exits 1 when nothing works.
# Works from any directory: paths are resolved from this script's own location.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
url="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
expected_bytes=1115394
local_file="$root/data/tinyshakespeare.txt"
shared_file="$root/../shared/data/tinyshakespeare.txt"

say() { echo "find-corpus: $*" >&2; }
size_of() { wc -c <"$1" | tr -d ' '; }

# A candidate is used if it is a readable file of the expected size; a file of another size is
# most likely a broken copy, so it is reported and skipped rather than trained on.
usable() {
  local f="$1"
  [ -e "$f" ] || return 1
  if [ ! -f "$f" ] || [ ! -r "$f" ]; then
    say "ignoring $f: not a readable file"
    return 1
  fi
  local n
  n="$(size_of "$f")"
  if [ "$n" -ne "$expected_bytes" ]; then
    say "ignoring $f: $n bytes, expected $expected_bytes"
    return 1
  fi
}

# Absolute path without "..", for a file whose directory exists.
canonical() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }

if usable "$local_file"; then
  canonical "$local_file"
  exit 0
fi
if usable "$shared_file"; then
  canonical "$shared_file"
  exit 0
fi

give_up() {
  say "$1"
  cat >&2 <<EOF
find-corpus: tiny shakespeare ($expected_bytes bytes) is needed for training. Either
  - download it yourself from
      $url
    and save it as
      $local_file
  - or put it at
      $(cd "$root/.." && pwd)/shared/data/tinyshakespeare.txt
then run this again.
EOF
  exit 1
}

# Never overwrite a file the user put there, even a wrong one.
[ -e "$local_file" ] && give_up "$local_file exists but is not usable; move it away or fix it"

if command -v curl >/dev/null 2>&1; then
  fetch() { curl -fsSL --retry 2 --connect-timeout 20 -o "$1" "$url"; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget -q --tries=3 --timeout=20 -O "$1" "$url"; }
else
  give_up "neither curl nor wget is installed, so it cannot be downloaded"
fi

mkdir -p "$root/data"
# Download next to the destination and move it into place only when complete, so an
# interrupted download never leaves a partial file under the final name.
tmp="$(mktemp "$root/data/.tinyshakespeare.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
say "downloading $url"
fetch "$tmp" || give_up "download failed"
got="$(size_of "$tmp")"
[ "$got" -eq "$expected_bytes" ] || give_up "downloaded file has $got bytes, expected $expected_bytes"
chmod 644 "$tmp"
mv "$tmp" "$local_file"
say "saved $local_file"
canonical "$local_file"
