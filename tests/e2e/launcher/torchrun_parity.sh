#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# torchrun_parity.sh - what torchrun does that ddprun now does too (issue
# 31, launcher/main.c, spawn.c, options.def):
#   - --max-restarts N: a failed attempt restarts every rank, in a new
#     --log-dir run folder, with TORCHELASTIC_RESTART_COUNT; the program
#     resumes from its own checkpoint; N exhausted: the failure's exit code;
#   - torchrun's spellings: -t (--tee), --rdzv-conf join_timeout=,
#     --start-method, --local-addr, --role, --run-path, --monitor-interval,
#     and PET_* for them; a PET_* ddprun has no option for is said;
#   - OMP_NUM_THREADS=1 when a node runs N > 1 ranks, unless set, said once;
#   - an executable .py without #! runs under python3 (not /bin/sh);
#   - --no-python NAME finds an executable of the current folder;
#   - TORCHELASTIC_RUN_ID/RESTART_COUNT/MAX_RESTARTS/USE_AGENT_STORE/
#     ERROR_FILE and TORCH_NCCL_ASYNC_ERROR_HANDLING as torchrun's agent
#     sets them.
. "$(dirname "$0")/lib.sh"
out=$TMP/out err=$TMP/err

# --max-restarts: each rank counts steps in its own checkpoint file; in the
# first attempt rank 1 fails at step 3; the restart resumes at step 3
cat >"$TMP/train.sh" <<'EOS'
d=$1 fail_until=$2
c="$d/ckpt.$RANK"
s=$(cat "$c" 2>/dev/null || echo 0)
echo "attempt $TORCHELASTIC_RESTART_COUNT of $TORCHELASTIC_MAX_RESTARTS resumes at step $s"
while [ "$s" -lt 6 ]; do
	if [ "$RANK" = 1 ] && [ "$s" = 3 ] && [ "$TORCHELASTIC_RESTART_COUNT" -lt "$fail_until" ]; then
		echo "rank 1 fails at step 3" >&2; exit 3
	fi
	s=$((s + 1)); echo "$s" >"$c.tmp" && mv "$c.tmp" "$c"   # whole, even when stopped mid-step
	sleep 0.1
done
echo "done at step $s"
EOS
mkdir -p "$TMP/r1"
DDPRUN_GRACE=1 "$DDPRUN" -n 2 --max-restarts 2 --log-dir "$TMP/logs" sh "$TMP/train.sh" "$TMP/r1" 1 >"$out" 2>"$err"
rc=$?
check "--max-restarts 2, one failure: exit 0 (rc $rc)" [ $rc = 0 ]
check "the restart says so" has "$err" '^ddprun: restarting every rank: attempt 1 of 2 more \(--max-restarts; TORCHELASTIC_RESTART_COUNT=1\); logs in .*-attempt1$'
check "attempt 1 resumes from the program's checkpoint (TORCHELASTIC_RESTART_COUNT=1)" \
	[ "$(grep -Ec '^\[rank (1\] attempt 1 of 2 resumes at step 3|0\] attempt 1 of 2 resumes at step [1-6])$' "$out")" = 2 -a "$(grep -c '\] done at step 6$' "$out")" = 2 ]
check "each attempt its own run folder with the ranks' logs" \
	[ "$(ls -d "$TMP"/logs/run-*/rank1.log | wc -l)" = 2 ] && grep -q 'rank 1 fails at step 3' "$TMP"/logs/run-*[0-9]/rank1.log
mkdir -p "$TMP/r2"
DDPRUN_GRACE=1 "$DDPRUN" -n 2 --max-restarts 1 sh "$TMP/train.sh" "$TMP/r2" 5 >"$out" 2>"$err"
rc=$?
check "--max-restarts 1, failing every time: the rank's code after 2 attempts (rc $rc)" \
	[ $rc = 3 -a "$(grep -c '^\[rank 1\] rank 1 fails at step 3' "$err")" = 2 ]
mkdir -p "$TMP/r3"
DDPRUN_GRACE=1 "$DDPRUN" -n 2 sh "$TMP/train.sh" "$TMP/r3" 1 >"$out" 2>"$err"
check "negative control: no --max-restarts, no restart (rc $?)" hasnt "$err" 'restarting'

# torchrun's spellings
"$DDPRUN" -n 2 -t 3 --log-dir "$TMP/t" --rdzv-conf join_timeout=30 --start-method fork --local-addr 127.0.0.1 \
	--role trainer --monitor-interval 0.5 "$PROG" env ROLE_NAME >"$out" 2>"$err"
check "-t 3 --rdzv-conf --start-method --local-addr --role --monitor-interval accepted (rc $?)" \
	[ "$(grep -c '^\[rank [01]\] ROLE_NAME=trainer$' "$out")" = 2 -a "$(cat "$TMP"/t/latest/rank*.log | grep -c ROLE_NAME=trainer)" = 2 ]
PET_ROLE=worker PET_MAX_RESTARTS=1 PET_LOG_LINE_PREFIX_TEMPLATE=x "$DDPRUN" -n 1 "$PROG" env ROLE_NAME TORCHELASTIC_MAX_RESTARTS >"$out" 2>"$err"
check "PET_ROLE, PET_MAX_RESTARTS taken" [ "$(grep -Ec '^\[rank 0\] (ROLE_NAME=worker|TORCHELASTIC_MAX_RESTARTS=1)$' "$out")" = 2 ]
check "a PET_* ddprun has no option for is said" has "$err" '^ddprun: warning: PET_LOG_LINE_PREFIX_TEMPLATE is a torchrun setting ddprun has no option for; it is ignored'

# OMP_NUM_THREADS
"$DDPRUN" -n 2 "$PROG" env OMP_NUM_THREADS >"$out" 2>"$err"
check "-n 2: OMP_NUM_THREADS=1 on every rank, said once" \
	[ "$(grep -c '^\[rank [01]\] OMP_NUM_THREADS=1$' "$out")" = 2 -a "$(grep -c 'OMP_NUM_THREADS=1 for every rank' "$err")" = 1 ]
OMP_NUM_THREADS=4 "$DDPRUN" -n 2 "$PROG" env OMP_NUM_THREADS >"$out" 2>"$err"
check "OMP_NUM_THREADS set by the user stays" [ "$(grep -c '^\[rank [01]\] OMP_NUM_THREADS=4$' "$out")" = 2 ] && hasnt "$err" OMP_NUM_THREADS
"$DDPRUN" -n 1 "$PROG" env OMP_NUM_THREADS >"$out" 2>"$err"
check "-n 1: OMP_NUM_THREADS left alone" has "$out" '^\[rank 0\] OMP_NUM_THREADS<unset>$'

# the torchelastic variables
"$DDPRUN" -n 2 --log-dir "$TMP/e" --rdzv-id myrun "$PROG" env TORCHELASTIC_RUN_ID TORCHELASTIC_RESTART_COUNT \
	TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_USE_AGENT_STORE TORCH_NCCL_ASYNC_ERROR_HANDLING TORCHELASTIC_ERROR_FILE >"$out" 2>"$err"
check "TORCHELASTIC_* and TORCH_NCCL_ASYNC_ERROR_HANDLING as torchrun sets them" \
	[ "$(grep -Ec '^\[rank [01]\] (TORCHELASTIC_RUN_ID=myrun|TORCHELASTIC_RESTART_COUNT=0|TORCHELASTIC_MAX_RESTARTS=0|TORCHELASTIC_USE_AGENT_STORE=False|TORCH_NCCL_ASYNC_ERROR_HANDLING=1)$' "$out")" = 10 ]
check "TORCHELASTIC_ERROR_FILE in the run folder, one per rank" \
	[ "$(grep -Ec "^\[rank ([01])\] TORCHELASTIC_ERROR_FILE=$TMP/e/myrun-[0-9-]*/rank\1\.error\.json$" "$out")" = 2 ]
TORCH_NCCL_ASYNC_ERROR_HANDLING=3 "$DDPRUN" -n 1 "$PROG" env TORCH_NCCL_ASYNC_ERROR_HANDLING >"$out" 2>"$err"
check "TORCH_NCCL_ASYNC_ERROR_HANDLING of the user stays" has "$out" '^\[rank 0\] TORCH_NCCL_ASYNC_ERROR_HANDLING=3$'

# Python scripts
if command -v python3 >/dev/null; then
	printf 'import os\nprint("python says rank", os.environ["RANK"])\n' >"$TMP/nobang.py"
	chmod +x "$TMP/nobang.py"
	"$DDPRUN" -n 1 "$TMP/nobang.py" >"$out" 2>"$err"
	check "an executable .py without #! runs under python3 (rc $?)" has "$out" '^\[rank 0\] python says rank 0$'
	cp "$TMP/nobang.py" "$TMP/noext"
	"$DDPRUN" -n 1 --run-path "$TMP/noext" >"$out" 2>"$err"
	check "--run-path runs a script of any name under python3" has "$out" '^\[rank 0\] python says rank 0$'
else
	echo "skip - .py without #!: python3 is not installed"
fi
printf '#!/bin/sh\necho "local program, rank $RANK"\n' >"$TMP/ddprun-local-prog"
chmod +x "$TMP/ddprun-local-prog"
(cd "$TMP" && "$DDPRUN" -n 1 --no-python ddprun-local-prog >"$out" 2>"$err")
check "--no-python NAME runs ./NAME of the current folder" has "$out" '^\[rank 0\] local program, rank 0$'
finish
