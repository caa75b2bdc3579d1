#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# torchrun_compat.sh - what torchrun users type and what their scripts
# expect: MASTER_ADDR/MASTER_PORT belong to the program (ddprun's store is
# DDP_STORE_ADDR/DDP_STORE_PORT), torchrun's options and variables with
# torchrun's meaning (or refused with a line saying what to use), and
# --log-dir's per-run subfolders.
. "$(dirname "$0")/lib.sh"
out=$TMP/out err=$TMP/err
# rc_has RC WANT FILE REGEX: the status is WANT and FILE has a line matching
rc_has() { [ "$1" = "$2" ] && has "$3" "$4"; }

# a script that binds MASTER_PORT on rank 0 and connects to it from the
# others, as torch.distributed's TCPStore does
bind_py='
import os, socket, time
port = int(os.environ["MASTER_PORT"]); addr = os.environ["MASTER_ADDR"]
assert port != int(os.environ["DDP_STORE_PORT"]), "MASTER_PORT is the store"
if os.environ["RANK"] == "0":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(8)
    for _ in range(int(os.environ["WORLD_SIZE"]) - 1):
        s.accept()[0].close()
    print("bound", flush=True)
else:
    for _ in range(200):
        try:
            socket.create_connection((addr, port)).close(); break
        except OSError:
            time.sleep(0.05)
    print("connected", flush=True)
'
if command -v python3 >/dev/null; then
	for n in 1 2; do
		"$DDPRUN" -n $n python3 -c "$bind_py" >"$out" 2>"$err"
		rc=$?
		check "-n $n: a script binding MASTER_PORT runs (rc $rc: $(grep -m1 -E 'Error|error' "$err"))" [ $rc = 0 ]
		check "-n $n: rank 0 bound it, the others reached it" \
			[ "$(grep -c '^\[rank 0\] bound$' "$out")" = 1 -a "$(grep -c 'connected$' "$out")" = $((n - 1)) ]
	done
	if python3 -c 'import torch.distributed' 2>/dev/null; then
		"$DDPRUN" -n 2 python3 -c 'import torch, torch.distributed as d; d.init_process_group("gloo"); t = torch.ones(1); d.all_reduce(t); print("sum", int(t.item()), flush=True); d.destroy_process_group()' >"$out" 2>"$err"
		check "init_process_group(\"gloo\") under ddprun: all_reduce works" [ "$(grep -c '\] sum 2$' "$out")" = 2 ]
	else
		echo "skip - init_process_group(\"gloo\"): torch is not installed here"
	fi
else
	echo "skip - MASTER_PORT scripts: python3 is not installed"
fi

# the variables torchrun sets besides RANK...
"$DDPRUN" -n 2 "$PROG" env GROUP_WORLD_SIZE ROLE_RANK ROLE_WORLD_SIZE ROLE_NAME TORCHELASTIC_RUN_ID >"$out" 2>"$err"
check "GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME as torchrun sets them" \
	[ "$(grep -Ec '^\[rank ([01])\] (GROUP_WORLD_SIZE=1|ROLE_RANK=\1|ROLE_WORLD_SIZE=2|ROLE_NAME=default)$' "$out")" = 8 ]
check "TORCHELASTIC_RUN_ID as torchrun sets it (libddp still sees ddprun: DDP_STORE_ADDR)" [ "$(grep -c 'TORCHELASTIC_RUN_ID=[0-9]*\.[0-9a-f]*$' "$out")" = 2 ]

# --tee 3 / --tee=3 is torchrun's spelling, not a program named 3
"$DDPRUN" -n 1 --tee 3 --log-dir "$TMP/tl" "$PROG" spam 3 40 >"$out" 2>"$err"
check "--tee 3: runs the program (rc $?)" [ "$(grep -c ' [0-9]\{7\} ' "$out")" = 3 -a "$(grep -c ' [0-9]\{7\} ' "$TMP/tl/latest/rank0.log")" = 3 ]
"$DDPRUN" -n 1 --tee=0:3 --log-dir "$TMP/tl" "$PROG" spam 3 40 >"$out" 2>"$err"
check "--tee with a per-rank mapping: refused, saying what to use" rc_has $? 2 "$err" 'use --tee 3 and --ranks-filter'
# -r 3: only the log files
"$DDPRUN" -n 2 -r 3 --log-dir "$TMP/rl" "$PROG" spam 3 40 >"$out" 2>"$err"
check "-r 3: nothing on the terminal, all in the files" [ ! -s "$out" -a "$(cat "$TMP"/rl/latest/rank*.log | grep -c ' [0-9]\{7\} ')" = 6 ]
"$DDPRUN" -n 2 --redirects 1 --log-dir "$TMP/rl" "$PROG" spam 3 40 >"$out" 2>"$err"
check "--redirects 1: refused with what to use" rc_has $? 2 "$err" 'use -r 3'
# --local-ranks-filter
"$DDPRUN" -n 3 --local-ranks-filter 1 "$PROG" spam 2 40 >"$out" 2>"$err"
check "--local-ranks-filter 1: only local rank 1 on the terminal" [ "$(grep -c '^\[rank 1\]' "$out")" = 3 -a "$(grep -vc '^\[rank 1\]' "$out")" = 0 ]
# --standalone, --nnodes N:N
"$DDPRUN" -n 1 --standalone --nnodes 1:1 "$PROG" env RANK >"$out" 2>"$err"
check "--standalone --nnodes 1:1 accepted" rc_has $? 0 "$out" 'RANK=0'
"$DDPRUN" --nnodes 1:4 "$PROG" env RANK >"$out" 2>"$err"
check "--nnodes 1:4 (elastic) refused with what to give" rc_has $? 2 "$err" 'give one number \(N or N:N\)'
# --rdzv-*
"$DDPRUN" -n 1 --rdzv-backend c10d --rdzv-id job7 --rdzv-endpoint 127.0.0.1:29517 --dry-run "$PROG" >"$out" 2>"$err"
check "--rdzv-endpoint HOST:PORT is --master-addr/--master-port" has "$out" '^  MASTER_PORT=29517$'
"$DDPRUN" -n 1 --rdzv-backend etcd "$PROG" >"$out" 2>"$err"
check "--rdzv-backend etcd refused with what to use" rc_has $? 2 "$err" 'ddprun meets its ranks in its own store'
# -n auto / gpu / cpu
DDPRUN_FAKE_GPUS=3 "$DDPRUN" -n auto --dry-run "$PROG" >"$out" 2>"$err"
check "-n auto with 3 GPUs: 3 ranks" has "$out" '^ddprun plan: 3 ranks'
"$DDPRUN" -n cpu --device cpu --dry-run "$PROG" >"$out" 2>"$err"
check "-n cpu: one rank per CPU ($(nproc))" has "$out" "^ddprun plan: $(nproc) rank"
"$DDPRUN" -n gpu --device cpu --dry-run "$PROG" >"$out" 2>"$err"
check "-n gpu without GPUs: refused" rc_has $? 2 "$err" 'nproc-per-node gpu: no GPU was found'
# PET_* variables (DDPRUN_* and the command line win)
PET_NPROC_PER_NODE=3 "$DDPRUN" --dry-run "$PROG" >"$out" 2>"$err"
check "PET_NPROC_PER_NODE=3: 3 ranks" has "$out" '^ddprun plan: 3 ranks'
PET_NPROC_PER_NODE=3 DDPRUN_NPROC_PER_NODE=2 "$DDPRUN" --dry-run "$PROG" >"$out" 2>"$err"
check "DDPRUN_NPROC_PER_NODE wins over PET_NPROC_PER_NODE" has "$out" '^ddprun plan: 2 ranks'
# -m MODULE, SCRIPT.py, --no-python
if command -v python3 >/dev/null; then
	"$DDPRUN" -n 1 -m platform >"$out" 2>"$err"
	check "-m platform: python3 -m platform" rc_has $? 0 "$out" '^\[rank 0\] Linux'
	printf 'import os\nprint("script rank", os.environ["RANK"])\n' >"$TMP/s.py"
	"$DDPRUN" -n 2 "$TMP/s.py" >"$out" 2>"$err"
	check "SCRIPT.py (not executable) runs with python3" [ "$(grep -c 'script rank [01]$' "$out")" = 2 ]
	"$DDPRUN" -n 1 --no-python "$TMP/s.py" >"$out" 2>"$err"
	check "--no-python SCRIPT.py runs it as it is (not executable: 126)" [ $? = 126 ]
fi
# --log-dir: a subfolder per run, latest -> the newest, nothing overwritten
"$DDPRUN" -n 1 --log-dir "$TMP/runs" sh -c 'echo first' >"$out" 2>"$err"
sleep 1.1   # another second: another name even from the same pid range
"$DDPRUN" -n 1 --log-dir "$TMP/runs" sh -c 'echo second' >"$out" 2>"$err"
check "--log-dir: two runs, two subfolders" [ "$(ls -d "$TMP"/runs/run-* | wc -l)" = 2 ]
check "--log-dir: the first run's log is intact" [ "$(cat "$TMP"/runs/run-*/rank0.log | sort | tr '\n' ' ')" = "first second " ]
check "--log-dir: latest is the second run" [ "$(cat "$TMP/runs/latest/rank0.log")" = second ]
finish
