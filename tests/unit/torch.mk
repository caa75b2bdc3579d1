# tests/unit/torch.mk - PyTorch at the driver level (issue 12): the real
# kernel table (tests/data/) through the registry and the classification, and
# the decoders of PyTorch's argument structs.

TORCH_TABLE_SRC := tests/unit/torch_table.c

# The real table: every kernel registered, typed and classified.
$(eval $(call unit_test,test_torch_table,tests/unit/test_torch_table.c $(TORCH_TABLE_SRC),,track grad))
$(BUILD)/tests/unit/test_torch_table.o $(BUILD)/tests/unit/torch_table.o: CPPFLAGS += -Itests -Itests/unit

# The argument decoders (runtime/track/ddp_torch_args.c).
$(eval $(call unit_test,test_torch_args,tests/unit/test_torch_args.c $(TORCH_TABLE_SRC),,track))
$(BUILD)/tests/unit/test_torch_args.o: CPPFLAGS += -Itests -Itests/unit

# The argument bytes are outside input: fuzzed (make fuzz), corpus replayed in make test.
$(eval $(call fuzz_target,torch_args,runtime/track/ddp_torch_args.c))

# samples/torchlike's kernels are PyTorch's: names and layouts against the table.
$(eval $(call unit_test,test_torchlike_names,tests/unit/test_torchlike_names.c $(TORCH_TABLE_SRC),,))
$(BUILD)/tests/unit/test_torchlike_names.o: CPPFLAGS += -Itests -Itests/unit
$(BUILD)/tests/unit/test_torchlike_names: | $(BUILD)/samples/obj/torchlike/kernels.fatbin \
	$(BUILD)/samples/obj/torchlike/kernels_cuda12.fatbin

# PyTorch's launches as explicit launches of the gradient tracker.
$(eval $(call unit_test,test_torch_launch,tests/unit/test_torch_launch.c,,grad track))
$(BUILD)/tests/unit/test_torch_launch.o: CPPFLAGS += -Itests
