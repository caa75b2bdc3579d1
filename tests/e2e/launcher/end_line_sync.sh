#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# end_line_sync.sh - issue 31: ddprun's end line says what libddp
# synchronised (the gradient bytes each rank averaged) or that nothing was:
# `ddprun -n 2 echo hi` ran no CUDA program, a trainer that runs 0 steps
# averaged nothing.  The reference for the bytes is the program's own size:
# tests/e2e/progs/steptrainer.c averages one gradient of N = 4096 floats
# per step, so 6 steps are 6 * 16 KiB = 96.0 KiB.  Before, the end line
# said "2 ranks (exit 0)" or only steps.
. "$(dirname "$0")/lib.sh"
need_steptrainer
err=$TMP/err

timeout 60 "$DDPRUN" -n 2 -- "$T" 6 >/dev/null 2>"$err"
check "6 steps: exit 0" [ $? = 0 ]
check "6 steps: the end line says 96.0 KiB of gradients averaged per rank" \
	has "$err" '^ddprun: job finished after [0-9.]+ s: 2 ranks, 6 steps, [0-9]+% of the time in collectives, 96\.0 KiB of gradients averaged per rank \(exit 0\)$'
[ $failures = 0 ] || tail -n 2 "$err" | sed 's/^/# /'

timeout 60 "$DDPRUN" -n 2 -- echo hi >/dev/null 2>"$err"
check "echo hi: the end line says nothing was synchronised, no CUDA program" \
	has "$err" '^ddprun: job finished after [0-9.]+ s: 2 ranks, nothing synchronised \(no CUDA program joined the job\) \(exit 0\)$'

timeout 60 "$DDPRUN" -n 2 -- "$T" 0 >/dev/null 2>"$err"
check "0 steps: the end line says nothing was averaged" has "$err" '^ddprun: job finished .*, nothing averaged \(exit 0\)$'
finish
