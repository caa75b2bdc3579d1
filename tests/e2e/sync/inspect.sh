#!/bin/bash
# SPDX-License-Identifier: MIT
#
# inspect.sh - `ddprun inspect` lists under "Parameters" and "Gradients"
# exactly the ranges its Roles table gives those roles (issue 19: gradient
# buffers were listed under "Parameters" while the Roles table was right).
# Programs: samples/mlp (named SGD), samples/generic (the data flow),
# samples/torchlike AdamW and SGD with momentum (PyTorch's decoded kernels,
# caching allocator: one allocation holds every tensor).  The check is
# inspect_roles.py, an independent reader of the report.  Negative control:
# the same report with one gradient row moved under "Parameters" fails it.
. "$(dirname "$0")/lib.sh"
need mlp generic torchlike
D=$BUILD/data/mlp.rec
insp() { # NAME SAMPLE ARGS...
	local name=$1 sample=$2
	shift 2
	timeout 120 "$DDPRUN" inspect --steps 2 "$BUILD/samples/$sample" --data "$D" "$@" \
		>"$TMP/$name.ins" 2>"$TMP/$name.err"
	local out
	if out=$(python3 "$HERE/inspect_roles.py" "$TMP/$name.ins"); then ok "$name: sections agree with Roles ($out)"
	else not_ok "$name: $out ($(tail -1 "$TMP/$name.err"))"; fi
}
insp mlp mlp --steps 5
insp generic-sgd generic --steps 5 --batch 8 --optimizer sgd
insp generic-adam generic --steps 5 --batch 8 --optimizer adam
insp torch-adamw torchlike --steps 5 --batch 8 --optim adamw
insp torch-sgd torchlike --steps 5 --batch 8 --optim sgd

# negative control: a gradient moved under "Parameters" must fail the check
python3 - "$TMP/mlp.ins" "$TMP/bad.ins" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
g = next(i for i, l in enumerate(lines) if l.startswith("## Gradients"))
row = lines.pop(g + 1)
p = next(i for i, l in enumerate(lines) if l.startswith("## Parameters"))
lines.insert(p + 1, row)
open(sys.argv[2], "w").write("\n".join(lines))
PY
out=$(python3 "$HERE/inspect_roles.py" "$TMP/bad.ins")
if [ $? -eq 1 ]; then ok "negative control: a gradient listed under Parameters fails the check ($out)"
else not_ok "negative control: the doctored report passed ($out)"; fi
exit $FAILED
