# tests/unit/interpose_edges.mk: edge cases of the interposer found in review.
#  - tests/unit/test_ip_edges.c: the signature reader and the kernel registry
#    on odd input, counters of exited threads (pure; also under ASan/UBSan);
#  - tests/e2e/interpose/edges.sh (CPU device): fork() in the program, and
#    dlsym(RTLD_DEFAULT) from a library loaded RTLD_LOCAL; its programs are
#    built here (tests/e2e/interpose/progs/drv_fork.c, dlsym_scope.c).
$(eval $(call unit_test,test_ip_edges,tests/unit/test_ip_edges.c,-lpthread,track grad))
$(BUILD)/tests/unit/test_ip_edges.o: CPPFLAGS += -Itests

IPE_DIR := $(BUILD)/tests/e2e/interpose/edges
IPE_PROGS := $(IPE_DIR)/drv_fork $(IPE_DIR)/dlsym_scope $(IPE_DIR)/libscope_dep.so \
	$(IPE_DIR)/libscope_lib.so
$(IPE_DIR)/drv_fork: tests/e2e/interpose/progs/drv_fork.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ -L$(CUDA_HOME)/lib64/stubs -lcuda
$(IPE_DIR)/libscope_dep.so: tests/e2e/interpose/progs/dlsym_scope.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -DSCOPE_DEP -shared $< -o $@
$(IPE_DIR)/libscope_lib.so: tests/e2e/interpose/progs/dlsym_scope.c $(IPE_DIR)/libscope_dep.so
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -DSCOPE_LIB -shared $< -o $@ -L$(IPE_DIR) \
		-Wl,--no-as-needed -lscope_dep -Wl,-rpath,'$$ORIGIN' -ldl
$(IPE_DIR)/dlsym_scope: tests/e2e/interpose/progs/dlsym_scope.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ -ldl
BINS += $(IPE_PROGS)
TESTS += tests/e2e/interpose/edges.sh
