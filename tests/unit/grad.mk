# tests/unit/grad.mk - gradient synchronisation (helper H): the tracker's unit
# test, and the collectives' objects as prerequisites of libddp.so (their list,
# DDP_COLL_SRCS, comes from tests/unit/coll.mk, included before this file;
# interpose/module.mk links them).
$(LIBDDP): $(LIBDDP_COLL_OBJS)

# Pure unit test of the tracker on synthetic launch sequences (also under ASan).
$(eval $(call unit_test,test_grad,tests/unit/test_grad.c runtime/ddp_grad.c runtime/ddp_sig.c,))
$(BUILD)/tests/unit/test_grad.o: CPPFLAGS += -Itests
