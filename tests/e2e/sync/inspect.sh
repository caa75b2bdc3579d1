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
# The "Plan" section (what the executor does before each launch, steps 1-2)
# is checked by inspect_plan.py: reductions before the update reads, a
# broadcast in step 1 only, step 2 averaging the Gradients section's bytes;
# controls: the step-2 reduction removed, a broadcast added to step 2.
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
	if out=$(python3 "$HERE/inspect_plan.py" "$TMP/$name.ins"); then ok "$name: the plan averages before the update reads ($out)"
	else not_ok "$name: plan: $out"; fi
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
# negative controls of the plan check: the step-2 reduction removed, or a
# broadcast in step 2, must fail it
for doctor in drop-reduce bcast-again; do
	python3 - "$TMP/mlp.ins" "$TMP/$doctor.ins" "$doctor" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
if sys.argv[3] == "drop-reduce":
    t = re.sub(r"^step 2 .* reduce .*\n", "", t, flags=re.M)
else:
    t = re.sub(r"^step 2 (.*) reads ", r"step 2  before x broadcast 1 range, 4 bytes: x\nstep 2 \1 reads ", t, count=1, flags=re.M)
open(sys.argv[2], "w").write(t)
PY
	out=$(python3 "$HERE/inspect_plan.py" "$TMP/$doctor.ins")
	if [ $? -eq 1 ]; then ok "negative control ($doctor): the doctored plan fails the check ($out)"
	else not_ok "negative control ($doctor): the doctored plan passed ($out)"; fi
done
exit $FAILED
