# SPDX-License-Identifier: MIT
#
# tests/torch/module.mk - `make test-torch`: the real PyTorch wheel under
# ddprun on the CPU device (tests/torch/run.sh; docs/pytorch.md).  Not part
# of `make test` (.ci/run runs it after): it downloads torch==2.15.0 once
# (5.3 GB installed, about 3 minutes) and runs for 4-22 minutes.
# tests/torch/nccl.sh: torch.distributed with the wheel's NCCL, two ranks.
.PHONY: test-torch
test-torch:
	@$(MAKE) --no-print-directory -j$(NPROC) build-all
	@BUILD=$(BUILD) tests/torch/run.sh $(TORCH_FILTER)
	@BUILD=$(BUILD) tests/torch/nccl.sh
