# tests/unit/store.mk - the rendezvous store (helper D2): unit test of the
# protocol, the server (runtime/store/ddp_store_{table,core,loop}.c, linked from
# libddp_store.a) and the client; fuzz target over the parser and the server's
# connection state machine (tests/fuzz/store/fuzz.c reaches the core through
# runtime/store/ddp_store_server_int.h, so the libFuzzer and replay builds need
# no extra sources).
$(eval $(call unit_test,test_store,tests/unit/test_store.c,))
$(eval $(call fuzz_target,store,))
