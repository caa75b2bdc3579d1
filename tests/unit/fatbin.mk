# SPDX-License-Identifier: MIT
#
# tests/unit/fatbin.mk - the fatbin/cubin reader's unit test and fuzz target
# (runtime/image/ddp_fatbin.c, ddp_cubin.c, ddp_ptx.c, ddp_demangle.c).
#
# The test reads real nvcc output built here from tests/unit/kernels/*.cu:
# single-arch cubins, PTX text, fatbins for each --compress-mode, -G, a
# PTX-only fatbin and two concatenated containers.  All images are embedded
# into the test binary (images.o: symbols fb_<file>, fb_<file>_end, with '.'
# turned into '_'), so the test needs no paths at run time.

FATBIN_KSRC := tests/unit/kernels
FATBIN_KDIR := $(BUILD)/tests/unit/kernels
FATBIN_NVCC  = $(NVCC) -O2 -std=c++17
FATBIN_CUBIN_ARCHS := 75 80 90 100

FATBIN_IMAGES := $(foreach a,$(FATBIN_CUBIN_ARCHS),$(FATBIN_KDIR)/params_sm$(a).cubin) \
	$(FATBIN_KDIR)/params.ptx \
	$(FATBIN_KDIR)/params_multi.fatbin \
	$(FATBIN_KDIR)/params_none.fatbin \
	$(FATBIN_KDIR)/params_speed.fatbin \
	$(FATBIN_KDIR)/params_size.fatbin \
	$(FATBIN_KDIR)/params_debug.fatbin \
	$(FATBIN_KDIR)/params_ptxonly.fatbin \
	$(FATBIN_KDIR)/other.fatbin \
	$(FATBIN_KDIR)/concat.fatbin

$(FATBIN_KDIR)/params_sm%.cubin: $(FATBIN_KSRC)/params.cu
	@mkdir -p $(dir $@)
	$(Q)$(FATBIN_NVCC) -cubin -arch=sm_$* -o $@ $<

$(FATBIN_KDIR)/params.ptx: $(FATBIN_KSRC)/params.cu
	@mkdir -p $(dir $@)
	$(Q)$(FATBIN_NVCC) -ptx -arch=sm_90 -o $@ $<

# sm_75, sm_80, sm_90, sm_100 SASS and compute_100 PTX, default compression.
$(FATBIN_KDIR)/params_multi.fatbin: $(FATBIN_KSRC)/params.cu
	@mkdir -p $(dir $@)
	$(Q)$(FATBIN_NVCC) -fatbin $(foreach a,$(FATBIN_CUBIN_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
		-gencode arch=compute_100,code=compute_100 -o $@ $<

# sm_90 SASS + compute_90 PTX under each compression mode.
$(FATBIN_KDIR)/params_%.fatbin: $(FATBIN_KSRC)/params.cu
	@mkdir -p $(dir $@)
	$(Q)$(FATBIN_NVCC) -fatbin --compress-mode=$* -gencode arch=compute_90,code=sm_90 \
		-gencode arch=compute_90,code=compute_90 -o $@ $<

$(FATBIN_KDIR)/params_debug.fatbin: $(FATBIN_KSRC)/params.cu
	@mkdir -p $(dir $@)
	$(Q)$(FATBIN_NVCC) -fatbin -G -arch=sm_90 -o $@ $<

$(FATBIN_KDIR)/params_ptxonly.fatbin: $(FATBIN_KSRC)/params.cu
	@mkdir -p $(dir $@)
	$(Q)$(FATBIN_NVCC) -fatbin -gencode arch=compute_90,code=compute_90 -o $@ $<

$(FATBIN_KDIR)/other.fatbin: $(FATBIN_KSRC)/other.cu
	@mkdir -p $(dir $@)
	$(Q)$(FATBIN_NVCC) -fatbin -arch=sm_90 -o $@ $<

$(FATBIN_KDIR)/concat.fatbin: $(FATBIN_KDIR)/params_size.fatbin $(FATBIN_KDIR)/other.fatbin
	$(Q)cat $^ > $@

$(FATBIN_KDIR)/images.o: $(FATBIN_IMAGES)
	$(Q){ echo '.section .rodata'; \
	for f in $^; do s=fb_$$(basename $$f | tr '.-' '__'); \
		printf '%s\n' '.balign 16' ".globl $$s" "$$s:" ".incbin \"$$f\"" ".globl $${s}_end" "$${s}_end:" '.byte 0'; \
	done; echo '.section .note.GNU-stack,"",@progbits'; } | $(CC) -c -x assembler - -o $@

$(BUILD)/tests/unit/test_fatbin: $(FATBIN_KDIR)/images.o
$(eval $(call unit_test,test_fatbin,tests/unit/test_fatbin.c,))

$(eval $(call fuzz_target,fatbin,))

# the kernel registry's lazy image reading, on the same embedded images
$(BUILD)/tests/unit/test_kreg_lazy: $(FATBIN_KDIR)/images.o
$(eval $(call unit_test,test_kreg_lazy,tests/unit/test_kreg_lazy.c,,track grad))
$(BUILD)/tests/unit/test_kreg_lazy.o: CPPFLAGS += -Itests
