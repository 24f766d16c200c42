#!/bin/sh
# ctest python.pip_install: `pip install .` of the repository into a fresh venv of Debian's
# python3, with nothing but PyPI (scikit-build-core and nanobind, fetched by pip's build
# isolation) and the Debian packages scripts/setup-deps.sh installs; then `import attograd`
# outside the source tree and one backward pass.
#   pip_install_check.sh SOURCE_DIR WORK_DIR [PYTHON [CXX [BUILD_DIR]]]
# With ccache on the machine the build goes through it, with the build folder left out of the
# hash (CCACHE_NOHASHDIR) and the same compiler as the Release build (CXX: scikit-build-core
# would take Python's own, another name for g++, which ccache tells apart), so the objects
# `make build` compiled with the same flags are reused. They are only when the compiler sees the
# same relative paths (ccache's base_dir makes them relative to the folder it compiles in): so
# BUILD_DIR, pip's CMake build folder, is best a sibling of the Release build (ctest passes
# BUILD-pip), at the same depth below the sources, and made by the same CMake generator
# (CMAKE_GENERATOR, which scikit-build-core follows: Makefiles compile each folder's targets in
# that folder, Ninja all in the top one). Default: WORK_DIR/build.
set -eu
src=$1
work=$2
py=${3:-python3}
cxx=${4:-}
build=${5:-$work/build}
rm -rf "$work" "$build"
mkdir -p "$work"
"$py" -m venv "$work/venv"
set -- --quiet --disable-pip-version-check --config-settings=build-dir="$build"
[ -n "$cxx" ] && set -- "$@" --config-settings=cmake.define.CMAKE_CXX_COMPILER="$cxx"
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_NOHASHDIR=1
  set -- "$@" --config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
"$work/venv/bin/pip" install "$@" "$src"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import attograd

x = attograd.tensor([1.0, 2.0], requires_grad=True)
(x * x).sum().backward()
assert x.grad.tolist() == [2.0, 4.0], x.grad
assert "site-packages" in attograd.__file__, attograd.__file__
print("PASS: pip install . gives attograd", attograd.__version__, "at", attograd.__file__)
PY
