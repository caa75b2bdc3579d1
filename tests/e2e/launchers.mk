# tests/e2e/launchers: ranks started WITHOUT ddprun, the way torchrun, srun
# (Slurm) and mpirun (Open MPI) start them, emulated with the exact variables
# those launchers set (none of them needs to be installed): rank 0's libddp
# hosts the store (runtime/job/ddp_job.c), N ranks at batch B equal one process
# at N*B, and the error paths (no secret, port taken, no address or port,
# DDP_SYNC=off, the store's life at exit).  About 12 s in all; each script
# skips (exit 77) when the CPU device, libddp.so, samples/mlp or its data
# are not built.
TESTS += $(filter-out tests/e2e/launchers/lib.sh,$(sort $(wildcard tests/e2e/launchers/*.sh)))
