# tests/unit/coll.mk - the tests of the collectives (helper G):
# runtime/ddp_coll*.c and the element types of runtime/base/ddp_dtype.c (the
# allreduce bandwidth benchmark is bench/coll.mk).
#
# DDP_COLL_SRCS / DDP_COLL_OBJS (runtime/module.mk) are the objects libddp.so
# links too (compiled with its flags, interpose/module.mk); they are NOT in
# libddpcommon.a.  runtime/base/ddp_dtype.c is (with its vectorisation flags).

# Where the tests look for NCCL (they skip, saying so, when it is absent).
COLL_TEST_NCCL_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib/libnccl.so.2 $(CUDA_HOME)/lib64/libnccl.so.2 \
	/usr/lib/x86_64-linux-gnu/libnccl.so.2 /usr/local/lib/libnccl.so.2))
COLL_TEST_DIR := $(BUILD)/tests/unit

# Pure unit test of the element types and kernels (also under ASan).
$(eval $(call unit_test,test_coll_dtype,tests/unit/test_coll_dtype.c,-lm))

# Multi-process tests (fork + in-process store server): TESTS only.
$(COLL_TEST_DIR)/test_coll: $(BUILD)/tests/unit/test_coll.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES))
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS) -lm

$(COLL_TEST_DIR)/test_xrank: $(BUILD)/tests/unit/test_xrank.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES))
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS) -lm

$(COLL_TEST_DIR)/test_coll_device: $(BUILD)/tests/unit/test_coll_device.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES)) $(SIMCUDA_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $(filter %.o %.a,$^) -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) $(DDP_COMMON_LIBS) -lm

$(COLL_TEST_DIR)/test_coll_async: $(BUILD)/tests/unit/test_coll_async.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES)) $(SIMCUDA_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $(filter %.o %.a,$^) -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) $(DDP_COMMON_LIBS) -lm -pthread

$(COLL_TEST_DIR)/test_coll_nccl: $(BUILD)/tests/unit/test_coll_nccl.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES))
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS) -lm

$(BUILD)/tests/unit/test_coll_dtype.o $(BUILD)/tests/unit/test_coll.o $(BUILD)/tests/unit/test_xrank.o $(BUILD)/tests/unit/test_coll_device.o $(BUILD)/tests/unit/test_coll_nccl.o \
	$(BUILD)/tests/unit/test_coll_async.o \
	$(BUILD)/tests/unit/test_coll_harness.o: CPPFLAGS += -Itests -Ilauncher
$(BUILD)/tests/unit/test_coll_nccl.o: CPPFLAGS += -DCOLL_TEST_NCCL_LIB='"$(COLL_TEST_NCCL_LIB)"'

TESTS += $(COLL_TEST_DIR)/test_coll $(COLL_TEST_DIR)/test_xrank $(COLL_TEST_DIR)/test_coll_device $(COLL_TEST_DIR)/test_coll_nccl \
	$(COLL_TEST_DIR)/test_coll_async

# The benchmark (not a test).

# Bucket planning (pure; also under ASan).
$(eval $(call unit_test,test_coll_bucket,tests/unit/test_coll_bucket.c,,coll))
$(BUILD)/tests/unit/test_coll_bucket.o: CPPFLAGS += -Itests

# libddp's NCCL backend (sync, async, watchdog) on the CPU device with its
# NCCL stand-in (cpudev/nccl.mk); skips, saying so, without nccl.h.
$(COLL_TEST_DIR)/test_coll_nccl_sim: $(BUILD)/tests/unit/test_coll_nccl_sim.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES)) $(SIMCUDA_DIR)/libcuda.so $(SIMNCCL_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $(filter %.o %.a,$^) -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) $(DDP_COMMON_LIBS) -lm -pthread
$(BUILD)/tests/unit/test_coll_nccl_sim.o: CPPFLAGS += -Itests -Ilauncher -DSIMNCCL_LIB='"$(if $(SIMNCCL_LIB),$(abspath $(SIMNCCL_LIB)))"'
TESTS += $(COLL_TEST_DIR)/test_coll_nccl_sim
