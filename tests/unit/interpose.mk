# tests/unit/interpose.mk: unit tests of the interposer's runtime pieces
# (pure: no CPU device, no subprocess; also run under ASan/UBSan).
$(eval $(call unit_test,test_alloc,tests/unit/test_alloc.c,-lpthread,track))
$(eval $(call unit_test,test_sig,tests/unit/test_sig.c,,track grad))
$(eval $(call unit_test,test_launch,tests/unit/test_launch.c,,track))
$(BUILD)/tests/unit/test_alloc.o $(BUILD)/tests/unit/test_sig.o $(BUILD)/tests/unit/test_launch.o: CPPFLAGS += -Itests
