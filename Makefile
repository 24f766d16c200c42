# The README's two commands: `make train` and `make test`. Each installs what is missing,
# configures a Release build and builds; nothing else is needed on a fresh Debian 12.
BUILD        ?= build
BUILD_ASAN   ?= build-asan
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS  ?=
RUN_DIR      ?= runs/shakespeare
TRAIN_FLAGS  ?=

.PHONY: all deps build test train test-sanitize bench clean

all: build

deps:
	@scripts/setup-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > $(BUILD).configure.log 2>&1 || { cat $(BUILD).configure.log; exit 1; }
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Unit tests under AddressSanitizer (with LeakSanitizer) + UndefinedBehaviorSanitizer; any report fails.
test-sanitize: deps
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTOGRAD_SANITIZE=ON -DATTOGRAD_BUILD_BENCH=OFF > $(BUILD_ASAN).configure.log 2>&1 || { cat $(BUILD_ASAN).configure.log; exit 1; }
	@cmake --build $(BUILD_ASAN) -j $(JOBS) --target attograd_tests
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  OPENBLAS_NUM_THREADS=1 $(BUILD_ASAN)/attograd_tests --gtest_brief=1

train: build
	@corpus=$$(scripts/find-corpus.sh) && \
	  $(BUILD)/attograd train --data "$$corpus" --out $(RUN_DIR) $(TRAIN_FLAGS)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD).configure.log $(BUILD_ASAN).configure.log
