# Fairshare's top-level entry points. `make demo` and `make test` work on a
# fresh Debian machine: they install what they need first.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
BUILD_ASAN ?= build-asan
BUILD_BENCH ?= build-bench

.PHONY: image test-image all deps deps-browser build build-asan build-demo test test-normal test-asan test-e2e e2e demo bench bench-e2e fuzz clean format

all: build

# What the build and the demo need; Chromium only for the tests, whose
# dashboard test (tests/integration/test_dashboard.c) runs a real browser.
deps:
	@sh scripts/install-deps.sh

deps-browser:
	@sh scripts/install-deps.sh browser

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

# All tests, in the normal build and under ASan+UBSan, then the end-to-end
# suite on the real Kubernetes control plane of ../shared/k8s (skipped, with
# a line saying so, where that folder does not exist).
test: test-normal test-asan test-e2e
	@echo "make test: all tests passed"

test-normal: build deps-browser
	@echo "== tests (normal build) =="
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan deps-browser
	@echo "== tests (ASan + UBSan build) =="
	@cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

# The e2e suite on ../shared/k8s's real control plane, started and stopped
# here, with the sanitizer build's programs.
test-e2e: build-asan
	@sh tests/e2e/shared.sh $(BUILD_ASAN)

# The e2e suite against the cluster that KUBECONFIG names (see
# docs/e2e.md for what it needs).
e2e: build
	@sh tests/e2e/run.sh $(BUILD)

# The demo builds only its programs (not the tests) and runs them.
DEMO_PROGRAMS = fakekube fairshare-controller fairsharectl fairshare-demo fairshare-reserve
build-demo: deps
	@echo "== building the demo's programs ($(BUILD)/)"
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(QUIET) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_PROGRAMS) $(QUIET_BUILD)

demo: build-demo
	@sh scripts/demo.sh $(BUILD)

# The container image, built locally from Debian's packages with no
# registry (debootstrap + buildah; root): scripts/image.sh. test-image
# checks it: version, help, non-root, read-only, no shell, no build tools.
image:
	@sh scripts/install-deps.sh image
	@sh scripts/image.sh

test-image: image
	@sh scripts/test-image.sh

bench: deps
	@cmake -S . -B $(BUILD_BENCH) -DCMAKE_BUILD_TYPE=Release $(QUIET) >/dev/null
	@cmake --build $(BUILD_BENCH) -j $(JOBS) $(QUIET_BUILD)
	@sh scripts/bench.sh $(BUILD_BENCH)

# Bind throughput and reclaim latency on a real API server: ../shared/k8s
# (125 nodes x 8 GPUs), or the cluster KUBECONFIG names.
bench-e2e: deps
	@cmake -S . -B $(BUILD_BENCH) -DCMAKE_BUILD_TYPE=Release $(QUIET) >/dev/null
	@cmake --build $(BUILD_BENCH) -j $(JOBS) $(QUIET_BUILD)
	@sh scripts/bench-e2e.sh $(BUILD_BENCH)

fuzz:
	@sh scripts/install-deps.sh fuzz
	@sh scripts/fuzz.sh

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_BENCH) build-fuzz build-image
