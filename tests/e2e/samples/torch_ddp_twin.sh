#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# torch_ddp_twin.sh - samples/torch_train_ddp.py, torch_train.py's PyTorch
# DDP twin (what tests/gpu/run.sh puts beside ddprun), checked on the CPU
# with real PyTorch (gloo): torchrun with 2 ranks at batch 8 ends with the
# parameters of one torch_train.py process at batch 16 (relative L2 <=
# 1e-5), and -- the negative control -- not with those of one process at
# batch 8.  Skipped, with the reason, where PyTorch with torchrun is not
# installed (PYTHON, else ${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0).
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
D=$BUILD/data/mlp.rec
[ -e "$D" ] || { echo "$D is not built (make all)"; exit 77; }
PY=${PYTHON:-${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0/bin/python}
TR=$(dirname "$PY")/torchrun
if ! [ -x "$TR" ] || ! "$PY" -c 'import torch.distributed as d; assert d.is_available()' 2>/dev/null; then
	echo "PyTorch with torchrun is not installed for $PY (branch torch's venv, or set PYTHON)"
	exit 77
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ddp-twin.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FAILED=0
S=30
"$PY" "$ROOT/samples/torch_train.py" --device cpu --data "$D" --steps $S --batch 16 --save "$TMP/ref.bin" \
	>"$TMP/ref.out" 2>&1 || { echo "not ok - reference run: $(tail -1 "$TMP/ref.out")"; exit 1; }
"$PY" "$ROOT/samples/torch_train.py" --device cpu --data "$D" --steps $S --batch 8 --save "$TMP/half.bin" \
	>"$TMP/half.out" 2>&1 || { echo "not ok - batch 8 run: $(tail -1 "$TMP/half.out")"; exit 1; }
# --standalone: a rendezvous on a free local port (a fixed or random one can be taken)
timeout 300 "$TR" --standalone --nproc_per_node 2 "$ROOT/samples/torch_train_ddp.py" --device cpu \
	--data "$D" --steps $S --batch 8 --save "$TMP/ddp.bin" >"$TMP/ddp.out" 2>"$TMP/ddp.err"
rc=$?
out=$(python3 "$ROOT/tests/e2e/sync/relerr.py" "$TMP/ddp.bin" "$TMP/ref.bin" 1e-5 2>&1)
eq=$?
if [ $rc -eq 0 ] && [ $eq -eq 0 ] && [ "$(grep -c '^step [0-9]* loss' "$TMP/ddp.out")" = $S ]; then
	echo "ok - torchrun 2 ranks x batch 8 (DDP, DistributedSampler, gloo) equals one process at batch 16 ($out)"
else echo "not ok - DDP twin: exit $rc, $out: $(tail -2 "$TMP/ddp.err" | tr '\n' ' ')"; FAILED=1; fi
out=$(python3 "$ROOT/tests/e2e/sync/relerr.py" "$TMP/ddp.bin" "$TMP/half.bin" 1e-5 2>&1)
if [ $? -eq 1 ] && [ -s "$TMP/ddp.bin" ]; then echo "ok - negative control: the twin does not equal one process at batch 8 ($out)"
else echo "not ok - negative control: the twin equals one process at batch 8 ($out): the comparison is blind"; FAILED=1; fi
exit $FAILED
