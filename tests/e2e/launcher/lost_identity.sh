#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# lost_identity.sh - issue 31: a rank that lost what makes it a rank between
# ddprun and the program never exits 0 having trained alone.
#  - `env -u RANK prog`: libddp sees DDPRUN_JOB_ID without a valid identity
#    and stops the rank with one line naming the variables;
#  - `env -i prog` (everything cleared, LD_PRELOAD too): no libddp in the
#    program; ddprun sees on the status board that the rank's last image
#    never loaded libddp and fails the job naming the rank.
# Before, both ran every rank alone and the job exited 0.  Controls: the
# same program plainly, through `sh -c exec`, `echo`, and DDP_SYNC=off
# (training alone on purpose) exit 0.  The program is
# tests/e2e/progs/steptrainer.c.
. "$(dirname "$0")/lib.sh"
need_steptrainer
export DDPRUN_GRACE=0.5
out=$TMP/out err=$TMP/err
CPULIB=$build_dir/cpudev/lib

timeout 60 "$DDPRUN" -n 2 -- env -u RANK "$T" 6 >"$out" 2>"$err"
rc=$?
check "env -u RANK: the job fails, exit 1 (got $rc)" [ $rc = 1 ]
check "env -u RANK: libddp says the rank lost its rank variables under ddprun" \
	has "$err" "libddp: this process runs under ddprun \(DDPRUN_JOB_ID is set\) but its rank variables are malformed \(RANK=<unset> WORLD_SIZE=2\)"
check "env -u RANK: no rank trained alone (no step ran)" hasnt "$out" '^\[rank [01]\] done'

timeout 60 "$DDPRUN" -n 2 -- env -i LD_LIBRARY_PATH="$CPULIB" "$T" 6 >"$out" 2>"$err"
rc=$?
check "env -i: the job fails, exit 1 (got $rc)" [ $rc = 1 ]
check "env -i: ddprun names the rank that ran without libddp.so, in one line" \
	[ "$(grep -Ec '^ddprun: rank [01] \(pid [0-9]+\) exited 0, but its program \(steptrainer\) ran without libddp.so: something between ddprun and it cleared LD_PRELOAD' "$err")" = 1 ]
check "env -i: the end line says why" has "$err" '^ddprun: job failed after .*; rank [01] ran without libddp.so \(exit 1\)$'
if [ $failures != 0 ]; then sed 's/^/# /' "$err" | tail -n 6; fi

timeout 60 "$DDPRUN" -n 2 -- env -u RANK -u WORLD_SIZE -u LOCAL_RANK "$T" 6 >"$out" 2>"$err"
check "env -u RANK -u WORLD_SIZE -u LOCAL_RANK: fails too (missing, not malformed)" \
	has "$err" 'but its rank variables are missing \(RANK=<unset> WORLD_SIZE=<unset>\)'

# controls
timeout 60 "$DDPRUN" -n 2 -- "$T" 6 >"$out" 2>"$err"
check "control: the program itself exits 0" [ $? = 0 ]
timeout 60 "$DDPRUN" -n 2 -- sh -c 'exec "$0" 6' "$T" >"$out" 2>"$err"
check "control: through sh -c exec, exit 0" [ $? = 0 ]
timeout 60 "$DDPRUN" -n 2 -- echo hi >"$out" 2>"$err"
check "control: echo hi exits 0" [ $? = 0 ]
if command -v python3 >/dev/null; then
	# a program that renames itself (setproctitle), and one that starts a
	# setsid daemon that loads libddp too: neither is taken for a rank
	# without libddp
	timeout 60 "$DDPRUN" -n 2 -- python3 -c 'import ctypes; ctypes.CDLL(None).prctl(15, b"renamed", 0, 0, 0)' >"$out" 2>"$err"
	check "control: a program that renames itself (PR_SET_NAME) exits 0" [ $? = 0 ]
	timeout 60 "$DDPRUN" -n 2 -- python3 -c 'import subprocess; subprocess.run(["sh", "-c", "true"], start_new_session=True)' >"$out" 2>"$err"
	check "control: a rank that starts a setsid child exits 0" [ $? = 0 ]
fi
DDP_SYNC=off timeout 60 "$DDPRUN" -n 2 -- env -u RANK "$T" 6 >"$out" 2>"$err"
check "control: DDP_SYNC=off (alone on purpose) with RANK removed exits 0" [ $? = 0 ]
finish
