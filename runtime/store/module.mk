# SPDX-License-Identifier: MIT
#
# runtime/store/: the rendezvous store: protocol, client and server (ddprun hosts it; under torchrun/srun/mpirun rank 0's libddp does).
$(eval $(call ddp_module,store,$(wildcard runtime/store/*.c)))
