# Fairshare's top-level entry points. `make demo` and `make test` work on a
# fresh Debian machine: they install what they need first.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
BUILD_ASAN ?= build-asan
BUILD_BENCH ?= build-bench

.PHONY: all deps build build-asan test test-normal test-asan demo bench fuzz clean format

all: build

deps:
	@sh scripts/install-deps.sh

# Builds print only warnings and errors (no per-file progress lines).
QUIET = -DCMAKE_RULE_MESSAGES=OFF -DCMAKE_TARGET_MESSAGES=OFF
QUIET_BUILD = -- --no-print-directory

build: deps
	@echo "== building ($(BUILD)/)"
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(QUIET) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) $(QUIET_BUILD)

build-asan: deps
	@echo "== building with ASan + UBSan ($(BUILD_ASAN)/)"
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DFAIR_SANITIZE=ON $(QUIET) >/dev/null
	@cmake --build $(BUILD_ASAN) -j $(JOBS) $(QUIET_BUILD)

# All tests, in the normal build and under ASan+UBSan.
test: test-normal test-asan
	@echo "make test: all tests passed in the normal and the sanitizer build"

test-normal: build
	@echo "== tests (normal build) =="
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	@echo "== tests (ASan + UBSan build) =="
	@cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

demo: build
	@sh scripts/demo.sh $(BUILD)

bench: deps
	@cmake -S . -B $(BUILD_BENCH) -DCMAKE_BUILD_TYPE=Release $(QUIET) >/dev/null
	@cmake --build $(BUILD_BENCH) -j $(JOBS) $(QUIET_BUILD)
	@sh scripts/bench.sh $(BUILD_BENCH)

fuzz:
	@sh scripts/install-deps.sh fuzz
	@sh scripts/fuzz.sh

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_BENCH) build-fuzz
