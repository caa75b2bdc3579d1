# tests/e2e/samples.mk: the samples' own tests (tests/e2e/samples/*.sh) on
# the CPU device.  Each script skips (exit 77) when the CPU device, the
# samples or their data are not built.
TESTS += tests/e2e/samples/data.sh tests/e2e/samples/mlp.sh tests/e2e/samples/charlm.sh tests/e2e/samples/gpt.sh \
	tests/e2e/samples/fused.sh tests/e2e/samples/torchlike.sh tests/e2e/samples/torch_ddp_twin.sh \
	tests/e2e/samples/tensorclass.sh
