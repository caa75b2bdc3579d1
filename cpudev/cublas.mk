# SPDX-License-Identifier: MIT
#
# cpudev/cublas.mk - the CPU device's cuBLAS and cuBLASLt stand-ins
# (cpudev/blas, docs/cpu-device.md "cuBLAS and cuBLASLt"), next to
# its libcuda.so.1 so that LD_LIBRARY_PATH=$(BUILD)/cpudev/lib serves all three:
#
#   $(BUILD)/cpudev/lib/libcublasLt.so.13 (+ libcublasLt.so)
#       cublasLt.c + blas_driver.c + generated stubs + the GEMM kernels'
#       fatbin (blas_kernels.cu, nvcc) embedded; symbols versioned
#       libcublasLt.so.13 like the toolkit's
#   $(BUILD)/cpudev/lib/libcublasLt.so.13.kern.so
#       the same kernels as host code (exec.mk's sim_kernel_lib); the CPU
#       device loads it when the library loads its embedded image
#   $(BUILD)/cpudev/lib/libcublas.so.13 (+ libcublas.so)
#       cublas.c + generated stubs; NEEDED libcublasLt.so.13 (rpath $ORIGIN)
#
# Built when the toolkit has cublasLt.h.  The test (test_blas) uses the
# Driver API only.

ifneq ($(wildcard $(CUDA_INC)/cublasLt.h),)
SIMBLAS_DIR := cpudev/blas
SIMBLAS_OBJ := $(BUILD)/cpudev/blas
SIMBLAS_LT := $(SIMCUDA_DIR)/libcublasLt.so.13
SIMBLAS_BLAS := $(SIMCUDA_DIR)/libcublas.so.13
SIMBLAS_KERN := $(SIMCUDA_DIR)/libcublasLt.so.13.kern.so

$(SIMBLAS_OBJ)/%.o: CPPFLAGS += -I$(SIMBLAS_DIR)
$(SIMBLAS_OBJ)/%.o: CFLAGS += -fvisibility=hidden

$(SIMBLAS_OBJ)/lt_unsupported.inc: $(SIMBLAS_DIR)/blas_gen.sh $(SIMBLAS_DIR)/cublasLt.c $(CUDA_INC)/cublasLt.h
	@mkdir -p $(dir $@)
	$(Q)$< lt "$(CC)" $(CUDA_INC) $(SIMBLAS_DIR)/cublasLt.c > $@.tmp && mv $@.tmp $@
$(SIMBLAS_OBJ)/blas_unsupported.inc: $(SIMBLAS_DIR)/blas_gen.sh $(SIMBLAS_DIR)/cublas.c $(CUDA_INC)/cublas_api.h
	@mkdir -p $(dir $@)
	$(Q)$< blas "$(CC)" $(CUDA_INC) $(SIMBLAS_DIR)/cublas.c > $@.tmp && mv $@.tmp $@

$(SIMBLAS_OBJ)/lt_unsupported.o: $(SIMBLAS_DIR)/blas_unsupported.c $(SIMBLAS_OBJ)/lt_unsupported.inc
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -DBLAS_UNSUP_INC='"lt_unsupported.inc"' -I$(SIMBLAS_OBJ) -c $< -o $@
$(SIMBLAS_OBJ)/blas_unsupported.o: $(SIMBLAS_DIR)/blas_unsupported.c $(SIMBLAS_OBJ)/blas_unsupported.inc
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -DBLAS_UNSUP_INC='"blas_unsupported.inc"' -I$(SIMBLAS_OBJ) -c $< -o $@

# Version scripts: every cublas* symbol under the toolkit's version node.
$(SIMBLAS_OBJ)/%.ver:
	@mkdir -p $(dir $@)
	$(Q)printf '%s {\n  global: cublas*;\n  local: *;\n};\n' "$*.so.13" > $@

SIMBLAS_LT_OBJS := $(SIMBLAS_OBJ)/cublasLt.o $(SIMBLAS_OBJ)/blas_driver.o $(SIMBLAS_OBJ)/lt_unsupported.o \
	$(BUILD)/cpudev/blas/blas_kernels.fatbin.o

$(SIMBLAS_LT): $(SIMBLAS_LT_OBJS) $(SIMBLAS_OBJ)/libcublasLt.ver | $(SIMBLAS_KERN)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,libcublasLt.so.13 -Wl,-z,defs \
		-Wl,--version-script,$(SIMBLAS_OBJ)/libcublasLt.ver -o $@ $(SIMBLAS_LT_OBJS) -ldl -lpthread

$(SIMBLAS_BLAS): $(SIMBLAS_OBJ)/cublas.o $(SIMBLAS_OBJ)/blas_unsupported.o $(SIMBLAS_OBJ)/libcublas.ver $(SIMBLAS_LT)
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,libcublas.so.13 -Wl,-z,defs \
		-Wl,--version-script,$(SIMBLAS_OBJ)/libcublas.ver -o $@ \
		$(SIMBLAS_OBJ)/cublas.o $(SIMBLAS_OBJ)/blas_unsupported.o -L$(SIMCUDA_DIR) -l:libcublasLt.so.13 \
		-Wl,-rpath,'$$ORIGIN'

$(SIMCUDA_DIR)/libcublasLt.so: $(SIMBLAS_LT)
	$(Q)ln -sf libcublasLt.so.13 $@
$(SIMCUDA_DIR)/libcublas.so: $(SIMBLAS_BLAS)
	$(Q)ln -sf libcublas.so.13 $@

$(eval $(call sim_kernel_lib,$(SIMBLAS_KERN),$(SIMBLAS_DIR)/blas_kernels.cu,$(BUILD)/cpudev/blas/blas_kernels.fatbin))

SIMBLAS_ALL := $(SIMBLAS_LT) $(SIMBLAS_BLAS) $(SIMBLAS_KERN) $(SIMCUDA_DIR)/libcublasLt.so $(SIMCUDA_DIR)/libcublas.so
BINS += $(SIMBLAS_ALL)
.PHONY: simblas
simblas: $(SIMBLAS_ALL)
endif

# ---- the test: linked against the TOOLKIT's libcublas/libcublasLt (so the
# stand-ins must satisfy its versioned symbols) and the driver stub, run
# with LD_LIBRARY_PATH=$(BUILD)/cpudev/lib (run-test_blas.sh), as a user would.
ifneq ($(CUBLAS_LIBDIR),)
$(BUILD)/cpudev/blas/test_blas.o: CPPFLAGS += -Itests
$(BUILD)/cpudev/blas/test_blas: $(BUILD)/cpudev/blas/test_blas.o
	$(Q)$(CC) $(LDFLAGS) $< -o $@ -L$(CUBLAS_LIBDIR) -lcublasLt -lcublas -L$(CUDA_HOME)/lib64/stubs -lcuda \
		-Wl,-rpath-link,$(CUBLAS_LIBDIR) -ldl -lm
$(BUILD)/cpudev/run-test_blas.sh: $(BUILD)/cpudev/blas/test_blas $(SIMBLAS_ALL) $(SIMCUDA_DIR)/libcuda.so
	@printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} exec %s "$$@"\n' \
		"$(abspath $(SIMCUDA_DIR))" "$<" > $@ && chmod +x $@
TESTS += $(BUILD)/cpudev/run-test_blas.sh cpudev/blas/under_libddp.sh
endif
