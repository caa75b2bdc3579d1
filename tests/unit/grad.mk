# tests/unit/grad.mk - gradient synchronisation (helper H): the tracker's unit
# test.

# Pure unit test of the tracker on synthetic launch sequences (also under ASan);
# track for the kernel families (ddp_kfamily.def).
$(eval $(call unit_test,test_grad,tests/unit/test_grad.c,,grad track))
$(BUILD)/tests/unit/test_grad.o: CPPFLAGS += -Itests

# The overlap layer's slice bookkeeping (ddp_slices.c).
$(eval $(call unit_test,test_slices,tests/unit/test_slices.c,,grad))
$(BUILD)/tests/unit/test_slices.o: CPPFLAGS += -Itests

# The byte extent of a cuBLAS call's output matrix (ddp_matrix.c).
$(eval $(call unit_test,test_matrix,tests/unit/test_matrix.c,,grad))
$(BUILD)/tests/unit/test_matrix.o: CPPFLAGS += -Itests

# A launch's pointer extents from its integer arguments and grid
# (ddp_extent.c): the union over a grid-strided launch's instances.
$(eval $(call unit_test,test_extent,tests/unit/test_extent.c,,grad))
$(BUILD)/tests/unit/test_extent.o: CPPFLAGS += -Itests

# The steps from the launch stream's cycle (ddp_cycle.c): the never-late stop.
$(eval $(call unit_test,test_cycle,tests/unit/test_cycle.c,,grad))
$(BUILD)/tests/unit/test_cycle.o: CPPFLAGS += -Itests

# Input data and fused updates (ddp_fused.c): host-set bytes, the rule.
$(eval $(call unit_test,test_fused,tests/unit/test_fused.c,,grad))
$(BUILD)/tests/unit/test_fused.o: CPPFLAGS += -Itests
