# kevo: `make` builds build/kevo and build/kevo-worker, `make test` runs every
# test that needs no GPU, `make demo` runs kevo on the examples.
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
CTEST_FLAGS ?= --output-on-failure -LE gpu
# Tests at once: most of an end-to-end test's time is waits (judging, nvcc,
# Python, servers), and kevo's device lock keeps timing loops one at a time.
TEST_JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
# The sanitizer pass: every test but those labelled gpu or waits (end-to-end
# waits that ASan would only slow down: docs/tests.md), one job per core:
# its tests compute more than they wait, and a third job made a timing test's
# warm-up price calls at several times their cost (CI, test_adaptive).
ASAN_CTEST_FLAGS ?= --output-on-failure -LE 'gpu|waits'
ASAN_TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)

.PHONY: all deps test test-asan demo fuzz format clean install

all: deps
	@test -f $(BUILD)/build.ninja || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)
	@cmake --build $(BUILD)

deps:
	@scripts/deps.sh

# make install PREFIX=/opt/kevo: kevo and kevo-worker in PREFIX/bin, what
# kevo ships in PREFIX/share/kevo (see CMakeLists.txt).
PREFIX ?= /usr/local
install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

test: all
	cd $(BUILD) && ctest -j$(TEST_JOBS) $(CTEST_FLAGS)

# Under AddressSanitizer + UndefinedBehaviorSanitizer: unit tests, parsers,
# fuzz corpora, the adversarial suites, the worker and the CLI's end-to-end.
test-asan: deps
	@test -f $(ASAN_BUILD)/build.ninja || cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKEVO_SANITIZE=ON $(CMAKE_FLAGS)
	@cmake --build $(ASAN_BUILD)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest -j$(ASAN_TEST_JOBS) $(ASAN_CTEST_FLAGS)

demo: all
	@scripts/demo.sh $(BUILD)

# libFuzzer targets (clang), each run for FUZZ_SECONDS on a copy of its corpus
# (every parser of outside input has one: tests/fuzz/CMakeLists.txt).
FUZZ_TARGETS = task frames reply import job annot skills exec sass launch ncu sanitize
fuzz: deps
	@test -f $(FUZZ_BUILD)/build.ninja || CC=clang cmake -S . -B $(FUZZ_BUILD) -G Ninja -DKEVO_FUZZ=ON -DKEVO_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	@cmake --build $(FUZZ_BUILD) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
	  rm -rf $(FUZZ_BUILD)/corpus-$$t && cp -r tests/fuzz/corpus/$$t $(FUZZ_BUILD)/corpus-$$t && \
	  $(FUZZ_BUILD)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) $(FUZZ_BUILD)/corpus-$$t || exit 1; \
	done

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
