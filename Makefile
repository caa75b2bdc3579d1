# SPDX-License-Identifier: MIT
#
# Top-level Makefile of ddprun.  Everything goes under $(BUILD) (build/).
#
#   make demo        build, make the data, train the sample language model
#   make test        install what is missing, build everything, run the suite
#   make test-asan   the unit tests under ASan+UBSan (build/asan)
#   make fuzz        build the libFuzzer targets (clang) and run each briefly
#   make all         build only
#   make lint        cppcheck + clang-tidy over the product's C (scripts/lint.sh)
#   make format      clang-format in place (.clang-format); FORMAT_CHECK=1 counts
#   make compile_commands.json   the compilation database
#
# Each area has a fragment <dir>/module.mk included below.  A fragment adds:
#   BINS        files `make all` builds
#   TESTS       executables `make test` runs (see tests/run_tests.sh)
#   UNIT_TESTS  pure unit-test binaries, also built and run under ASan
#   FUZZ_TARGETS  names of fuzz targets under tests/fuzz/<name>/fuzz.c
# and its own rules.  Shared pattern rules and flags live here.

BUILD ?= build
V ?= 0
Q := $(if $(filter 1,$(V)),,@)

# ---- the CUDA toolkit: from nvcc's location or CUDA_HOME, never hard-coded
NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(CUDA_HOME)/bin/nvcc)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CUDA_INC := $(CUDA_HOME)/include
# NCCL headers: next to CUDA's or in the system include path.
NCCL_INC := $(firstword $(dir $(wildcard $(CUDA_INC)/nccl.h /usr/local/include/nccl.h /usr/include/nccl.h)))
# cuBLAS's libraries (empty without them: what needs them is left out).
CUBLAS_LIBDIR := $(firstword $(patsubst %/,%,$(dir $(wildcard $(CUDA_HOME)/lib64/libcublas.so $(CUDA_HOME)/lib/libcublas.so \
	$(CUDA_HOME)/targets/x86_64-linux/lib/libcublas.so))))
# GPU architectures embedded in the samples' fatbins (SASS for each; PTX of the last).
CUDA_ARCHS ?= 80 90 100

NPROC := $(shell nproc 2>/dev/null || echo 2)

CC  ?= gcc
CXX ?= g++
ifeq ($(origin CC),default)
CC := gcc
endif
ifeq ($(origin CXX),default)
CXX := g++
endif

WARN      := -Wall -Wextra -Werror
comma     := ,
SANFLAGS  := $(if $(SANITIZE),-fsanitize=address$(comma)undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined,)
OPT       ?= -O2
CPPFLAGS  := -D_GNU_SOURCE -I$(CUDA_INC) $(if $(NCCL_INC),-I$(NCCL_INC),)
CFLAGS    := -std=c11 $(OPT) -g -fPIC $(WARN) $(SANFLAGS) -MMD -MP
CXXFLAGS  := -std=c++17 $(OPT) -g -fPIC $(WARN) $(SANFLAGS) -MMD -MP
LDFLAGS   := $(SANFLAGS)

BINS :=
TESTS :=
UNIT_TESTS :=
FUZZ_TARGETS :=

.PHONY: all test test-asan fuzz demo deps clean build-all lint format compile_commands.json
all: build-all

# ---- shared pattern rules
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

# ---- CUDA kernels: `build/X.fatbin` from `X.cu` (SASS for CUDA_ARCHS plus PTX
# of the last), and `build/X.fatbin.o`, which embeds it as the symbols
# `<path>_fatbin` (const unsigned char[], 16-aligned) and `<path>_fatbin_len`
# (const unsigned long), where <path> is X with / and . turned into _
# (samples/mlp/kernels -> samples_mlp_kernels_fatbin).
NVCC_ARCH_FLAGS := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
	-gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
NVCC_FLAGS ?= -O2 -std=c++17

$(BUILD)/%.fatbin: %.cu
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) -fatbin $(NVCC_FLAGS) $(NVCC_ARCH_FLAGS) -o $@ $<

$(BUILD)/%.fatbin.o: $(BUILD)/%.fatbin
	$(Q)sym=$(subst .,_,$(subst /,_,$*))_fatbin; \
	printf '%s\n' '.section .rodata' '.balign 16' ".globl $$sym" ".type $$sym, @object" "$$sym:" \
		'.incbin "$<"' "$${sym}_end:" '.byte 0' '.balign 8' ".globl $${sym}_len" ".type $${sym}_len, @object" \
		"$${sym}_len:" ".quad $${sym}_end - $$sym" '.section .note.GNU-stack,"",@progbits' \
	| $(CC) -c -x assembler - -o $@

# Keep generated fatbins and registries (they are intermediate in pattern
# chains); unlike a bare .SECONDARY this still rebuilds a deleted library.
.PRECIOUS: $(BUILD)/%.fatbin $(BUILD)/%.fatbin.o

# Fragments: one per area, found by name so a new area needs no edit here.
# The shared ones first: they define functions (unit_test, fuzz_target,
# sim_kernel_lib) that the others call.
FIRST_FRAGMENTS := runtime/module.mk tests/module.mk cpudev/exec.mk cpudev/module.mk
include $(FIRST_FRAGMENTS)
include $(sort $(filter-out $(FIRST_FRAGMENTS),$(wildcard */module.mk */*.mk tests/*/module.mk tests/*/*.mk cpudev/*/module.mk)))

build-all: $(BINS) $(TESTS)

deps:
	@scripts/deps.sh

# `make test`: dependencies first (they may need root), then a parallel build,
# then the suite.  The runner prints "N passed, N failed[, N skipped]".
test:
	@scripts/deps.sh --test
	@$(MAKE) --no-print-directory -j$(NPROC) build-all
	@BUILD=$(BUILD) tests/run_tests.sh -j $(NPROC) $(TESTS)

test-asan:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory -j$(NPROC) BUILD=build/asan SANITIZE=1 OPT=-O1 build-unit-tests
	@BUILD=build/asan ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		tests/run_tests.sh -j $(NPROC) $(patsubst $(BUILD)/%,build/asan/%,$(UNIT_TESTS))

.PHONY: build-unit-tests
build-unit-tests: $(UNIT_TESTS)

fuzz:
	@scripts/deps.sh --fuzz
	@$(MAKE) --no-print-directory -j$(NPROC) $(foreach t,$(FUZZ_TARGETS),$(BUILD)/fuzz/$(t))
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz: $$t for $${FUZZ_SECONDS:-30}s"; \
		mkdir -p $(BUILD)/fuzz/$$t.corpus; \
		$(BUILD)/fuzz/$$t -max_total_time=$${FUZZ_SECONDS:-30} -artifact_prefix=$(BUILD)/fuzz/$$t- \
			$(BUILD)/fuzz/$$t.corpus tests/fuzz/$$t/corpus || exit 1; \
	done

# The compilation database (clang's compile_commands.json) of every C/C++
# file, from make's own recipes (nothing is rebuilt): $(BUILD)/ and a link at
# the top for editors and clang tools.
compile_commands.json:
	@scripts/compile_commands.sh $(BUILD)/compile_commands.json
	@ln -sf $(BUILD)/compile_commands.json compile_commands.json

# cppcheck and clang-tidy over the product's C (scripts/lint.sh says which
# checks and why); clean or it fails.
lint:
	@scripts/deps.sh --lint
	@BUILD=$(BUILD) scripts/lint.sh

# clang-format (.clang-format) in place: FILES, or every C/C++ file of the
# tree.  FORMAT_CHECK=1 changes nothing and prints how many lines would change.
FORMAT_FILES = $(or $(FILES),$(shell git ls-files '*.c' '*.h' '*.cpp' '*.cu' '*.cuh'))
format:
	@if [ "$(FORMAT_CHECK)" = 1 ]; then \
		n=0; for f in $(FORMAT_FILES); do \
			c=$$(clang-format "$$f" | diff "$$f" - | grep -c '^<'); n=$$((n + c)); done; \
		echo "format: $$n lines would change"; \
	else clang-format -i $(FORMAT_FILES); fi

demo:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory -j$(NPROC) build-all
	@scripts/demo.sh

clean:
	rm -rf $(BUILD) build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
