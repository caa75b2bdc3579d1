# tests/e2e/launcher: end-to-end tests of ddprun itself (launcher/).
# The scripts run ddprun with DDPRUN_NO_PRELOAD=1 or with a stub libddp.so,
# so they do not depend on the real library or on a GPU.
LAUNCH_PROGS_DIR := $(BUILD)/tests/e2e/progs
LAUNCH_TEST_PROGS := $(LAUNCH_PROGS_DIR)/rankprog $(LAUNCH_PROGS_DIR)/libstub_preload.so \
	$(LAUNCH_PROGS_DIR)/libhang_inject.so

$(LAUNCH_PROGS_DIR)/rankprog: $(BUILD)/tests/e2e/progs/rankprog.o $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS)

$(LAUNCH_PROGS_DIR)/libstub_preload.so: tests/e2e/progs/stub_preload.c runtime/job/ddp_status.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -fPIC -O2 -Iruntime/job $< -o $@

# own_rdzv.so: a program's own rendezvous on MASTER_PORT (own_rdzv.sh)
$(LAUNCH_PROGS_DIR)/libown_rdzv.so: tests/e2e/progs/own_rdzv.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -fPIC -O2 $< -o $@
BINS += $(LAUNCH_PROGS_DIR)/libown_rdzv.so
# own_mpi.so and fakempi.so: a program's MPI_Init (own_rdzv.sh)
$(LAUNCH_PROGS_DIR)/libown_mpi.so: tests/e2e/progs/own_mpi.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -fPIC -O2 $< -o $@ -ldl
$(LAUNCH_PROGS_DIR)/libfakempi.so: tests/e2e/progs/own_mpi.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -fPIC -O2 -DOWN_MPI_LIB $< -o $@
BINS += $(LAUNCH_PROGS_DIR)/libown_mpi.so $(LAUNCH_PROGS_DIR)/libfakempi.so

$(LAUNCH_PROGS_DIR)/libhang_inject.so: tests/e2e/progs/hang_inject.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -fPIC -O2 $< -o $@ -ldl

BINS += $(LAUNCH_TEST_PROGS)
TESTS += $(filter-out tests/e2e/launcher/lib.sh,$(sort $(wildcard tests/e2e/launcher/*.sh)))

# own_nccl.so: a trainer that launches an NCCL-named kernel of its own
# (tests/e2e/launcher/own_nccl.sh); its CPU-device kernels beside it.
$(LAUNCH_PROGS_DIR)/libown_nccl.so: tests/e2e/progs/own_nccl.c $(BUILD)/tests/e2e/progs/own_nccl.fatbin.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -shared -fPIC -O2 $^ -o $@ -ldl
BINS += $(LAUNCH_PROGS_DIR)/libown_nccl.so $(LAUNCH_PROGS_DIR)/libown_nccl.so.kern.so
$(eval $(call sim_kernel_lib,$(LAUNCH_PROGS_DIR)/libown_nccl.so.kern.so,tests/e2e/progs/own_nccl.cu,$(BUILD)/tests/e2e/progs/own_nccl.fatbin))

# steptrainer: a minimal trainer with one injectable fault (skip a step,
# spin, slow down) on one rank, for diverge.sh and stall_default.sh; its
# CPU-device kernels beside it.
$(LAUNCH_PROGS_DIR)/steptrainer: $(BUILD)/tests/e2e/progs/steptrainer.o $(BUILD)/tests/e2e/progs/steptrainer.fatbin.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -L$(CUDA_HOME)/lib64/stubs -lcuda
BINS += $(LAUNCH_PROGS_DIR)/steptrainer $(LAUNCH_PROGS_DIR)/steptrainer.kern.so
$(eval $(call sim_kernel_lib,$(LAUNCH_PROGS_DIR)/steptrainer.kern.so,tests/e2e/progs/steptrainer.cu,$(BUILD)/tests/e2e/progs/steptrainer.fatbin))
