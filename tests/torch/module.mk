# SPDX-License-Identifier: MIT
#
# tests/torch/module.mk - `make test-torch`: the real PyTorch wheel under
# ddprun on the CPU device (tests/torch/run.sh; docs/pytorch.md).  Not part
# of `make test`: it downloads torch==2.15.0 once (about 3 GB installed) and
# runs for minutes.
.PHONY: test-torch
test-torch:
	@$(MAKE) --no-print-directory -j$(NPROC) build-all
	@BUILD=$(BUILD) tests/torch/run.sh $(TORCH_FILTER)
