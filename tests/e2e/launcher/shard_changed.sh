#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# shard_changed.sh - issue 21 case 7: a raw --shard file's size is fixed once,
# when ddprun checks the specs (DDP_SHARD_FILES), and used by every rank; a
# file that changed (size, mtime) between the launch and a rank's open is
# refused with one line, so no record goes unseen.  The program (written for
# this test, reader.py) reads the sharded file and prints the record
# numbers it saw; rank 1 opens it only once the test says so, after the
# file grew.
. "$(dirname "$0")/lib.sh"
unset DDPRUN_NO_PRELOAD
[ -e "$build_dir/lib/libddp.so" ] || { echo "libddp.so is not built"; exit 77; }
export DDPRUN_GRACE=0.5
cd "$TMP" || exit 1
cat >reader.py <<'PY'
import os, sys, time
rank = os.environ["RANK"]
go = sys.argv[2]
while go != "-" and rank == "1" and not os.path.exists(go):
    time.sleep(0.02)
with open(sys.argv[1], "rb") as f:
    data = f.read()
recs = [int(data[i:i + 16].decode().strip()) for i in range(0, len(data), 16)]
print("rank %s saw %s" % (rank, " ".join(map(str, recs))), flush=True)
PY
# records "%15d\n" numbered 0..n-1
mk() { for ((i = $1; i < $2; i++)); do printf '%15d\n' $i; done; }
mk 0 20 >data.raw

# control: unchanged, every record seen exactly once
"$DDPRUN" -n 2 --shard data.raw:record=16:mode=block python3 reader.py data.raw - >out 2>err
rc=$?
check "unchanged: exit 0 (got $rc)" [ $rc = 0 ]
seen=$(sed -n 's/^\[rank [01]\] rank [01] saw //p' out | tr ' ' '\n' | sort -n | tr '\n' ' ')
check "unchanged: records 0..19 each seen once" [ "$seen" = "$(seq 0 19 | tr '\n' ' ')" ]

for mode in block stride; do
	mk 0 20 >data.raw
	rm -f go
	: >out   # no line of the run before may match
	"$DDPRUN" -n 2 --shard data.raw:record=16:mode=$mode python3 reader.py data.raw go >out 2>err &
	pid=$!
	if ! wait_for out '^\[rank 0\] rank 0 saw ' 1 30; then
		notok "$mode: rank 0 never read"
		kill -KILL $pid
		continue
	fi
	mk 20 25 >>data.raw   # the file grows between rank 0's open and rank 1's
	t1=$(now_ms)
	touch go
	wait $pid
	rc=$? t=$(($(now_ms) - t1))
	sed 's/^/# /' err | head -n 8
	check "$mode, grown: the job fails (exit 1, got $rc)" [ $rc = 1 ]
	check "$mode, grown: rank 1 refuses it with one line" \
		[ "$(grep -c "^\[rank 1\] libddp.*--shard data.raw: [^ ]*/data.raw changed since ddprun checked it at launch (320 bytes then, 400 now, modified since); the ranks would split different bytes" err)" = 1 ]
	check "$mode, grown: rank 1 named" has err '^ddprun: rank 1 \(pid [0-9]+\) exited with code 1$'
	check "$mode, grown: rank 1 saw nothing" hasnt out '^\[rank 1\] rank 1 saw'
	check "$mode, grown: stopped within 2 s of the change (${t} ms)" [ $t -lt 2000 ]
done

# touched, same size: refused too (the bytes may differ)
mk 0 20 >data.raw
rm -f go
: >out
"$DDPRUN" -n 2 --shard data.raw:record=16:mode=block python3 reader.py data.raw go >out 2>err &
pid=$!
if wait_for out '^\[rank 0\] rank 0 saw ' 1 30; then
	sleep 0.05
	mk 100 120 >data.raw
	touch go
	wait $pid
	rc=$?
	check "rewritten, same size: refused (exit 1, got $rc)" [ $rc = 1 ]
	check "rewritten, same size: says the file changed" has err 'data.raw changed since ddprun checked it at launch \(320 bytes then, 320 now, modified since\)'
else
	notok "rewritten: rank 0 never read"
	kill -KILL $pid
fi

# the same under a folder whose path is about 2 KB: the line keeps its reason
long=$TMP/$(printf 'd%.0s' {1..200})
for i in $(seq 1 9); do long=$long/$(printf 'e%.0s' {1..200}); done
mkdir -p "$long" && mk 0 20 >"$long/data.raw"
rm -f go
: >out
"$DDPRUN" -n 2 --shard "$long/data.raw:record=16:mode=block" python3 reader.py "$long/data.raw" go >out 2>err &
pid=$!
if wait_for out '^\[rank 0\] rank 0 saw ' 1 30; then
	mk 20 25 >>"$long/data.raw"
	touch go
	wait $pid
	check "long path: the whole line, the reason at its end" \
		has err "^\[rank 1\] libddp ERROR .*--shard $long/data.raw: $long/data.raw changed since .*run again once nothing writes the file$"
else
	notok "long path: rank 0 never read"
	kill -KILL $pid
fi

# negative control: the check is what refuses it.  Without ddprun's list
# (a rank started by hand, as under torchrun) rank 1 splits the grown file
# by the size it sees: records 20..24 land where rank 0 never looked
mk 0 25 >data.raw
RANK=1 WORLD_SIZE=2 DDP_SHARD=data.raw:record=16:mode=block LD_PRELOAD=$build_dir/lib/libddp.so \
	python3 reader.py data.raw - >out 2>err
check "control, no launch list: rank 1 reads the grown file's second half (13..24)" \
	has out "^rank 1 saw $(seq 13 24 | tr '\n' ' ' | sed 's/ $//')$"
finish
