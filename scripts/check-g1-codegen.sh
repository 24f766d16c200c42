#!/usr/bin/env bash
# Debug line tables (-g1 in Release, CMakeLists.txt) must not change the code GCC generates, so
# that the program runs exactly as fast as without them. GCC checks this itself with
# -fcompare-debug: it compiles each file a second time with debug information toggled off
# (-gtoggle) and fails if the final code of the two compilations differs. This script runs
# the build's own compile command of each source with -fcompare-debug added.
#
#   scripts/check-g1-codegen.sh BUILD_DIR [PATTERN]    (PATTERN: a regex on the source path,
#                                                       default: the sources of autograd/)
set -euo pipefail
build=${1:?usage: scripts/check-g1-codegen.sh BUILD_DIR [PATTERN]}
pattern=${2:-/autograd/}
db="$build/compile_commands.json"
[ -f "$db" ] || { echo "check-g1-codegen: no $db (configure the build first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$db" "$pattern" "$tmp" <<'EOF'
import json, re, shlex, subprocess, sys
db, pattern, tmp = sys.argv[1:]
entries = [e for e in json.load(open(db)) if re.search(pattern, e["file"]) and e["file"].endswith(".cpp")]
if not entries:
    sys.exit(f"check-g1-codegen: no source matches {pattern!r}")
failed = 0
for i, e in enumerate(entries):
    args = shlex.split(e["command"])
    if "-g1" not in args:
        sys.exit(f"check-g1-codegen: {e['file']} is not compiled with -g1 (a Release build is)")
    if "ccache" in args[0]:
        args = args[1:]
    out = args.index("-o")
    args[out + 1] = f"{tmp}/{i}.o"
    r = subprocess.run(args + ["-fcompare-debug"], cwd=e["directory"], capture_output=True, text=True)
    status = "same code" if r.returncode == 0 else "DIFFERS"
    failed += r.returncode != 0
    print(f"{status:9}  {e['file']}", flush=True)
    if r.returncode:
        print(r.stderr, file=sys.stderr)
print(f"{len(entries) - failed} of {len(entries)} files: the same code with and without -g1")
sys.exit(1 if failed else 0)
EOF
