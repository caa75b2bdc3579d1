#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# inspect_plan.py REPORT - reads the "Plan" section of a `ddprun inspect`
# report (what the executor did before each launch in steps 1 and 2) and
# checks it against the report's own "Gradients" section, independently of
# libddp's code: in each step the gradients are averaged (reduce) before the
# first launch that reads a gradient (a "reads" line with gradients: what
# the update reads); parameters are broadcast in step 1 before the update
# reads a gradient, never in step 2; step 2 averages exactly the bytes the
# Gradients section lists.  Prints a summary; exit 1
# and the first violation otherwise.
import re
import sys

text = open(sys.argv[1]).read()


def section(title):
    m = re.search(r"^## " + re.escape(title) + r".*?\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return m.group(1) if m else None


def fail(msg):
    print(msg)
    sys.exit(1)


plan = section("Plan")
grads = section("Gradients")
if plan is None or grads is None:
    fail("no Plan or Gradients section")
grad_bytes = sum(int(m.group(1)) for m in re.finditer(r"^\s+#\d+\s+\+\d+\s+(\d+) bytes", grads, re.M))
acts = []  # (step, kernel, action, bytes, gradients read)
for line in plan.splitlines():
    m = re.match(r"step (\d+)\s+before (\S+)\s+(step-begin|step-end|broadcast|reduce|copy|reads)\b(.*)", line)
    if not m:
        continue
    b = re.search(r"([0-9]+) bytes", m.group(4))
    g = re.search(r"([0-9]+) of them gradients", m.group(4))
    acts.append((int(m.group(1)), m.group(2), m.group(3), int(b.group(1)) if b else 0, int(g.group(1)) if g else 0))
if not acts:
    fail("the Plan section lists no action")
for step in (1, 2):
    a = [x for x in acts if x[0] == step]
    kinds = [x[2] for x in a]
    reads = [i for i, x in enumerate(a) if x[2] == "reads" and x[4] > 0]
    if not reads:
        fail(f"step {step}: the update reads no gradient")
    first_read = reads[0]
    if "reduce" not in kinds[:first_read]:
        fail(f"step {step}: no reduction before the update reads a gradient ({kinds[:first_read + 1]})")
    if step == 1 and "broadcast" not in kinds[:first_read]:
        fail("step 1: nothing broadcast before the update")
    if step == 2 and "broadcast" in kinds:
        fail("step 2: a broadcast again")
red2 = sum(x[3] for x in acts if x[0] == 2 and x[2] == "reduce")
if red2 != grad_bytes:
    fail(f"step 2 averaged {red2} bytes, the Gradients section lists {grad_bytes}")
n1 = sum(1 for x in acts if x[0] == 1)
n2 = sum(1 for x in acts if x[0] == 2)
print(f"{n1} actions in step 1, {n2} in step 2; step 2 averages {red2} bytes = the gradients")
