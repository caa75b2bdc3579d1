#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# own_rdzv.sh - issue 31: a program that makes its own rendezvous on
# MASTER_ADDR:MASTER_PORT, as torch.distributed's env:// init does for any
# backend (gloo too, where no NCCL kernel ever shows), is left to
# synchronise itself: libddp steps aside before its first gradient, with
# one line, and averages nothing.  tests/e2e/progs/own_rdzv.c, preloaded,
# makes tests/e2e/progs/steptrainer.c meet on MASTER_PORT before main; each
# rank then trains on its own input, so unaveraged their weights differ.
# Before, libddp averaged them anyway (a DDP program's gradients twice).
# The same with MPI_Init (interpose/hook_peer.c; ncclCommInitRank* too).
# Negative control: without the shim the weights are averaged (equal).
# (The real wheel's DDP path: make test-torch, ddp-aware-*.)
. "$(dirname "$0")/lib.sh"
need_steptrainer
SHIM=$build_dir/tests/e2e/progs/libown_rdzv.so
[ -e "$SHIM" ] || { echo "$SHIM is not built"; exit 77; }
out=$TMP/out err=$TMP/err

LD_PRELOAD=$SHIM timeout 60 "$DDPRUN" -n 2 --trace "$TMP/tr" -- "$T" 6 >"$out" 2>"$err"
check "own rendezvous: exit 0 (got $?)" [ $? = 0 ]
check "own rendezvous: both ranks met on MASTER_PORT" [ "$(grep -c 'own-rdzv: rank [01] met the others' "$err")" = 2 ]
check "own rendezvous: one line from rank 0 says libddp steps aside, naming MASTER_PORT" \
	[ "$(grep -c '^\[rank 0\] libddp WARN .*the program is already data-parallel (it connected to MASTER_PORT [0-9]*: its own rendezvous' "$err")" = 1 -a "$(grep -c 'already data-parallel' "$err")" = 1 ]
check "own rendezvous: libddp averaged and broadcast nothing (rank0.sync.json)" \
	has "$TMP/tr/rank0.sync.json" '"stood_aside":true,"allreduce_bytes":0,"broadcast_bytes":0'
check "own rendezvous: the ranks' weights are not averaged (they differ)" \
	[ "$(sed -n 's/^\[rank [01]\] done w0=//p' "$out" | sort -u | wc -l)" = 2 ]
check "own rendezvous: the end line says the program synchronised itself" \
	has "$err" '^ddprun: job finished .*the program synchronised itself \(libddp stood aside\) \(exit 0\)$'
[ $failures = 0 ] || sed 's/^/# /' "$err" | tail -n 5

# MPI: its MPI_Init (own_mpi.c's shim calls it before main; fakempi.so is
# the MPI library, after libddp.so as a linked libmpi would be)
P=$build_dir/tests/e2e/progs
timeout 60 "$DDPRUN" -n 2 -- env LD_PRELOAD="$P/libown_mpi.so:$build_dir/lib/libddp.so:$P/libfakempi.so" \
	"$T" 6 >"$out" 2>"$err"
check "MPI_Init: exit 0 (got $?)" [ $? = 0 ]
check "MPI_Init: the program's MPI_Init ran on both ranks" [ "$(grep -c 'fakempi: MPI_Init' "$err")" = 2 ]
check "MPI_Init: one line from rank 0 says libddp steps aside" \
	[ "$(grep -c '^\[rank 0\] libddp WARN .*the program is already data-parallel (it called MPI_Init: its own rendezvous)' "$err")" = 1 ]
check "MPI_Init: the weights are not averaged (they differ)" \
	[ "$(sed -n 's/^\[rank [01]\] done w0=//p' "$out" | sort -u | wc -l)" = 2 ]
[ $failures = 0 ] || sed 's/^/# /' "$err" | tail -n 5

timeout 60 "$DDPRUN" -n 2 -- "$T" 6 >"$out" 2>"$err"
check "control: without its own rendezvous, exit 0" [ $? = 0 ]
check "control: nothing steps aside" hasnt "$err" 'already data-parallel'
check "control: the weights are averaged (equal)" [ "$(sed -n 's/^\[rank [01]\] done w0=//p' "$out" | sort -u | wc -l)" = 1 ]
finish
