#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# messages.sh - issue 21 case 12: each message names what was really given
# and is never cut.  A PET_<NAME> value is reported under its own name; a
# message longer than 2 KB keeps its reason; --tee takes torchrun's 0..3,
# anything else numeric is out of range (not "not a boolean"); --dry-run
# shows the write folder a run really uses; a mistyped shard option
# (RECORD=16) is called an unknown option; SIGTERM sent by `timeout` (to
# ddprun and again to its process group) is reported once.
. "$(dirname "$0")/lib.sh"
out=$TMP/out err=$TMP/err

PET_NPROC_PER_NODE=-3 "$DDPRUN" true >"$out" 2>"$err"
rc=$?
check "PET_NPROC_PER_NODE=-3: exit 2 (got $rc)" [ $rc = 2 ]
check "PET_NPROC_PER_NODE=-3: named as such" has "$err" "^ddprun: PET_NPROC_PER_NODE='-3' is not a positive integer$"
check "PET_NPROC_PER_NODE=-3: not as DDPRUN_NPROC_PER_NODE" hasnt "$err" DDPRUN_NPROC_PER_NODE
DDPRUN_NPROC_PER_NODE=-3 "$DDPRUN" true >"$out" 2>"$err"
check "DDPRUN_NPROC_PER_NODE=-3: named as such" has "$err" "^ddprun: DDPRUN_NPROC_PER_NODE='-3' is not a positive integer$"

# a program path of about 3000 characters (below PATH_MAX): the reason comes whole at the end
long=$TMP/$(printf 'd%.0s' {1..200})
for i in $(seq 1 14); do long=$long/$(printf 'e%.0s' {1..200}); done
"$DDPRUN" -n 1 "$long/prog" >"$out" 2>"$err"
rc=$?
check "long path: exit 127 (got $rc)" [ $rc = 127 ]
check "long path: one line with the whole path and the reason" has "$err" "^ddprun: cannot run '$long/prog': No such file or directory$"
check "long path: the line is over 2 KB" [ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$err")" -gt 2900 ]

# --tee: 0..3 accepted alike, a larger number refused for its range
"$DDPRUN" --dry-run --tee 3 --log-dir "$TMP/tl" -n 1 true >"$out" 2>"$err"
check "--tee 3: accepted (exit $?)" [ $? = 0 ]
for v in 7 12; do
	"$DDPRUN" --dry-run --tee $v --log-dir "$TMP/tl" -n 1 true >"$out" 2>"$err"
	rc=$?
	check "--tee $v: exit 2 (got $rc)" [ $rc = 2 ]
	check "--tee $v: out of torchrun's range 0..3" has "$err" "^ddprun: --tee '$v' is out of range: torchrun's --tee takes 0\.\.3"
	check "--tee $v: not called a boolean" hasnt "$err" 'not a boolean'
done
DDPRUN_TEE=7 "$DDPRUN" --dry-run --log-dir "$TMP/tl" -n 1 true >"$out" 2>"$err"
check "DDPRUN_TEE=7: the same, under its name" has "$err" "^ddprun: DDPRUN_TEE='7' is out of range"
"$DDPRUN" --dry-run --tee=maybe --log-dir "$TMP/tl" -n 1 true >"$out" 2>"$err"
check "--tee maybe: still not a boolean" has "$err" "^ddprun: --tee 'maybe' is not a boolean"

# --dry-run shows the write folder a run uses: <log-dir>/run-<date>-<time>-<pid>
mkdir -p "$TMP/w" && cd "$TMP/w"
"$DDPRUN" --dry-run --log-dir logs -n 2 true >"$out" 2>"$err"
check "--dry-run: DDP_WRITE_DIR is this run's folder under --log-dir" \
	has "$out" "^  DDP_WRITE_DIR=$TMP/w/logs/run-[0-9]{8}-[0-9]{6}-[0-9]+$"
check "--dry-run: creates nothing" [ ! -e logs ]
"$DDPRUN" --log-dir logs -n 1 sh -c 'echo "write dir $DDP_WRITE_DIR"' >"$out" 2>"$err"
check "a real run writes where its DDP_WRITE_DIR says: DIR/latest" \
	[ "$(sed -n 's/^\[rank 0\] write dir //p' "$out")" = "$(readlink -f logs/latest)" ]
cd - >/dev/null

# a mistyped shard option is an unknown option, not a missing file
head -c 160 /dev/zero >"$TMP/good.rec"
"$DDPRUN" --dry-run -n 2 --shard "$TMP/good.rec:RECORD=16" true >"$out" 2>"$err"
rc=$?
check "RECORD=16: exit 2 (got $rc)" [ $rc = 2 ]
check "RECORD=16: unknown option" has "$err" "^ddprun: --shard $TMP/good.rec:RECORD=16: unknown option 'RECORD=16' .*lowercase"
"$DDPRUN" --dry-run -n 2 --shard "$TMP/good.rec:Pad" true >"$out" 2>"$err"
check ":Pad: unknown option" has "$err" "unknown option 'Pad'"
"$DDPRUN" --dry-run -n 2 --shard "$TMP/nothere.rec" true >"$out" 2>"$err"
check "control: a missing file is still 'no file matches'" has "$err" "no file matches $TMP/nothere.rec$"
"$DDPRUN" --dry-run -n 2 --shard "$TMP/good.rec:record=16:mode=stride" true >"$out" 2>"$err"
check "control: record=16 is accepted" [ $? = 0 ]

# timeout(1) sends SIGTERM to ddprun, then to its whole process group
timeout -s TERM 1 "$DDPRUN" -n 2 sh -c 'sleep 10' >"$out" 2>"$err"
rc=$?
check "timeout: exit 124 from timeout (got $rc)" [ $rc = 124 ]
check "timeout: 'got SIGTERM' said once" [ "$(grep -c '^ddprun: got SIGTERM' "$err")" = 1 ]
check "timeout: the end line names it" has "$err" '^ddprun: job failed after .*ddprun got SIGTERM \(exit 143\)$'
finish
