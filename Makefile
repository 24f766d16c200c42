# The README's two commands: `make train` and `make test`. Each installs what is missing,
# configures a Release build and builds; nothing else is needed on a fresh Debian 12.
BUILD        ?= build
BUILD_ASAN   ?= build-asan
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS  ?=
# ccache, when the machine has it, makes rebuilds (and the three builds of CI) much faster;
# results are the same with or without it. scripts/setup-deps.sh installs it, so that on a fresh
# machine ctest's python.pip_install takes most of its objects from make build's. Expanded when
# a recipe runs (=, not :=): after deps, so that the first build of a fresh machine uses it too.
LAUNCHER      = $(if $(shell command -v ccache 2>/dev/null),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# The folder a compiler runs in stays out of ccache's hash (as pip_install_check.sh sets for
# pip's build): with it in (the default, where -g is on), build/ and build-pip/ never share.
export CCACHE_NOHASHDIR = 1
RUN_DIR      ?= runs/shakespeare
TRAIN_FLAGS  ?=

.PHONY: all deps configure build program python-venv test train speedrun resume test-sanitize bench bench-torch2 clean fuzz install tensorboard-check

all: build

deps:
	@scripts/setup-deps.sh

# Optional: Graphviz, so that `attograd graph --out FILE.svg|.png` can render (nothing needs it).
.PHONY: deps-graphviz
deps-graphviz:
	@ATTOGRAD_EXTRA_PACKAGES=graphviz scripts/setup-deps.sh

# The Python package (python/, docs/python.md) is built into the Release build with a venv of
# Debian's python3 (python3-venv, python3-dev) holding nanobind, NumPy and pytest from PyPI; ctest
# runs its pytest suite with it. `pip install .` is the other way to build it (pyproject.toml).
PYTHON3     ?= $(firstword $(wildcard /usr/bin/python3) python3)
PYTHON_VENV ?= $(BUILD)/python-venv
PYTHON_PKGS ?= "nanobind>=2.4,<4" numpy pytest
python-venv: deps
	@scripts/check-build-dir.sh $(BUILD) .
	@test -x $(PYTHON_VENV)/bin/python || $(PYTHON3) -m venv $(PYTHON_VENV)
	@$(PYTHON_VENV)/bin/python -c "import nanobind, numpy, pytest" 2>/dev/null || \
	  $(PYTHON_VENV)/bin/python -m pip install --quiet --disable-pip-version-check $(PYTHON_PKGS)

# One configuration for every target below, so that `make train` then `make test` compile each
# object once.
configure: deps python-venv
	@scripts/check-build-dir.sh $(BUILD) .
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(LAUNCHER) -DATTOGRAD_PYTHON=ON \
	  -DPython_EXECUTABLE=$(abspath $(PYTHON_VENV))/bin/python $(CMAKE_FLAGS) > $(BUILD).configure.log 2>&1 || { cat $(BUILD).configure.log; exit 1; }

build: configure
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

# The attograd program alone: what train, speedrun and resume run. A first `make train` compiles
# the libraries and the program, not the test programs, the benchmarks or the Python extension
# (`make test` builds those). On a fresh clone with CCACHE_DISABLE=1 (2-core Xeon, family 6 model
# 207, idle; timed from `make train`'s start to its first step's line): 259 s,
# against 527 s at 6676df4, whose `make train` built everything first.
program: configure
	@cmake --build $(BUILD) -j $(JOBS) --target attograd -- --no-print-directory

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Unit tests under AddressSanitizer (with LeakSanitizer) + UndefinedBehaviorSanitizer; any report fails.
# -O1 and line tables only (-g1), as the sanitizers' own documentation builds: on a 2-core Zen 4,
# without ccache, the build took 808 s against about 1880 s at -O2 -g (the stage of a local CI
# run, less its tests), and the tests ran as fast (122 against 123 s). GCC's
# -Wmaybe-uninitialized reports false positives in libstdc++'s <regex> at -O1 (through
# cxxopts); the Release build keeps that warning.
SANITIZE_FLAGS ?= -O1 -g1 -DNDEBUG -Wno-maybe-uninitialized
# The Python extension is built there too, and the hardening tests of the Python front
# (python/tests/test_harden_*.py, whose crash cases run in child interpreters that inherit all
# this) run on it in Debian's python3 (not instrumented) with the sanitizer's runtime preloaded;
# the interpreter keeps memory to its exit by design, hence detect_leaks=0 there. libstdc++ is
# preloaded beside the runtime: python3 does not link it, and ASan's __cxa_throw interceptor,
# resolved when the runtime starts, would otherwise find no real __cxa_throw and abort at the
# extension's first C++ exception.
ASAN_PYTESTS ?= python/tests/test_harden_*.py
test-sanitize: deps python-venv
	@scripts/check-build-dir.sh $(BUILD_ASAN) .
	@cmake -S . -B $(BUILD_ASAN) $(LAUNCHER) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(SANITIZE_FLAGS)" -DATTOGRAD_SANITIZE=ON -DATTOGRAD_BUILD_BENCH=OFF \
	  -DATTOGRAD_PYTHON=ON -DPython_EXECUTABLE=$(abspath $(PYTHON_VENV))/bin/python > $(BUILD_ASAN).configure.log 2>&1 || { cat $(BUILD_ASAN).configure.log; exit 1; }
	@cmake --build $(BUILD_ASAN) -j $(JOBS) --target attograd_tests attograd_python
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  OPENBLAS_NUM_THREADS=1 $(BUILD_ASAN)/attograd_tests --gtest_brief=1
	@LD_PRELOAD="$$($(CXX) -print-file-name=libasan.so) $$($(CXX) -print-file-name=libstdc++.so)" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=$(BUILD_ASAN)/python \
	  PYTHONDONTWRITEBYTECODE=1 ATTOGRAD_SOURCE_DIR=$(CURDIR) \
	  $(PYTHON_VENV)/bin/python -m pytest -q -p no:cacheprovider $(ASAN_PYTESTS)

train: program
	@scripts/check-run-dir.sh $(RUN_DIR)
	@corpus=$$(scripts/find-corpus.sh) && \
	  $(BUILD)/attograd train --data "$$corpus" --out $(RUN_DIR) $(TRAIN_FLAGS)

# The speedrun (docs/speedrun.md): configs/speedrun.toml for SPEEDRUN_BUDGET seconds of wall
# time, evaluated on the whole validation split. Its folder holds the last speedrun only.
SPEEDRUN_DIR    ?= runs/speedrun
SPEEDRUN_BUDGET ?= 120
speedrun: program
	@corpus=$$(scripts/find-corpus.sh) && \
	  $(BUILD)/attograd train --config configs/speedrun.toml --time-budget $(SPEEDRUN_BUDGET) --data "$$corpus" \
	    --out $(SPEEDRUN_DIR) --overwrite

# Continues `make train`'s run (after a Ctrl-C), exactly; RESUME_FLAGS="--iters N" extends it.
RESUME_FLAGS ?=
resume: program
	@test -e $(RUN_DIR)/train_state.safetensors || { echo "make resume: no run in $(RUN_DIR) yet; start one with make train" >&2; exit 1; }
	@$(BUILD)/attograd train --resume $(RUN_DIR) $(RESUME_FLAGS)

# The attograd program into $(PREFIX)/bin, the libraries, headers, CMake package and
# pkg-config files into $(PREFIX) (see the README's "Use it as a library").
PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(BUILD)-pip $(BUILD_ASAN) $(BUILD).configure.log $(BUILD_ASAN).configure.log

# libFuzzer on the safetensors reader, on the run-configuration (TOML) reader and on the Python
# binding's argument conversion (the extension module, built here with the fuzzer's coverage, in an
# interpreter embedded in the fuzzer: tests/fuzz/fuzz_py_args.cpp, with the venv of make build),
# FUZZ_SECONDS each, from the committed seed corpora; a crash stops with its input saved in
# $(BUILD_FUZZ). Built at -O1 with line tables, as libFuzzer's tutorial builds (the stage took
# 252 s, 61 of them fuzzing, in a local CI run without ccache on a 2-core Zen 4, before the
# third target); the three fuzzers run side by side on the machine's cores.
FUZZ_SECONDS ?= 60
BUILD_FUZZ   ?= build-fuzz
fuzz: python-venv
	@ATTOGRAD_EXTRA_PACKAGES="clang libclang-rt-14-dev" scripts/setup-deps.sh
	@cmake -S . -B $(BUILD_FUZZ) $(LAUNCHER) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DATTOGRAD_FUZZ=ON \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" -DATTOGRAD_PYTHON=ON \
	  -DPython_EXECUTABLE=$(abspath $(PYTHON_VENV))/bin/python \
	  -DATTOGRAD_BUILD_BENCH=OFF > $(BUILD_FUZZ).configure.log 2>&1 || { cat $(BUILD_FUZZ).configure.log; exit 1; }
	@cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_safetensors fuzz_config_toml fuzz_py_args
	@mkdir -p $(BUILD_FUZZ)/corpus $(BUILD_FUZZ)/corpus_toml $(BUILD_FUZZ)/corpus_py
	@# The three fuzzers side by side; each one's log tail is printed and any one's failure fails.
	@# The embedded interpreter leaks by design at exit (detect_leaks=0); a size nothing can
	@# allocate is refused by attograd before the allocator sees it (allocator_may_return_null
	@# covers the rest).
	@cd $(BUILD_FUZZ) && { \
	  ./fuzz_safetensors -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -rss_limit_mb=2048 \
	    -print_final_stats=1 corpus ../tests/fuzz/corpus > fuzz_safetensors.log 2>&1 & a=$$!; \
	  ./fuzz_config_toml -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=2048 \
	    -print_final_stats=1 corpus_toml ../tests/fuzz/corpus_toml > fuzz_config_toml.log 2>&1 & b=$$!; \
	  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 OPENBLAS_NUM_THREADS=1 \
	  ./fuzz_py_args -max_total_time=$(FUZZ_SECONDS) -max_len=512 -rss_limit_mb=3072 -malloc_limit_mb=3072 \
	    -detect_leaks=0 -print_final_stats=1 corpus_py ../tests/fuzz/corpus_py > fuzz_py_args.log 2>&1 & c=$$!; \
	  wait $$a; sa=$$?; wait $$b; sb=$$?; wait $$c; sc=$$?; \
	  tail -n 15 fuzz_safetensors.log; tail -n 15 fuzz_config_toml.log; tail -n 15 fuzz_py_args.log; \
	  [ $$sa -eq 0 ] && [ $$sb -eq 0 ] && [ $$sc -eq 0 ]; }

# attograd next to PyTorch on the same models and cores (bench/compare.py). PyTorch comes from
# $TORCH_PYTHON, .venv-torch (make bench-torch2 installs pip's torch 2.x and tensorboard there), or Debian's
# python3-torch; BENCH_FLAGS=--quick for a smoke run, --speedrun-only for the speedrun beside its
# PyTorch twin (docs/speedrun.md).
BENCH_FLAGS ?=
bench: build
	@python3 bench/compare.py --attograd $(BUILD)/attograd --attograd-python $(PYTHON_VENV)/bin/python \
	  --attograd-pythonpath $(BUILD)/python $(BENCH_FLAGS)

bench-torch2:
	@python3 -m venv .venv-torch && .venv-torch/bin/pip install --quiet torch numpy tensorboard

# TensorBoard in a real browser: a short `train --tensorboard`, `tensorboard --logdir` on
# 127.0.0.1 (from .venv-torch, see bench-torch2, or $TENSORBOARD_PYTHON), a screenshot by
# headless Chromium, checked for the loss curves and saved as docs/tensorboard.png.
tensorboard-check: build
	@ATTOGRAD_EXTRA_PACKAGES=chromium scripts/setup-deps.sh
	@python3 scripts/tensorboard_check.py --attograd $(BUILD)/attograd --workdir $(BUILD)/tensorboard-check
