# SPDX-License-Identifier: MIT
#
# check.py OUT TRACE_DIR STEPS - holds a run of train.py under ddprun against
# what libddp recorded (tests/torch/run.sh; docs/pytorch.md "make test-torch").
#
# OUT: ddprun's merged output ("[rank k] TRUTH step=S ptr=P bytes=B" lines,
# "[rank k] OPT step=S ran=N" and "[rank k] DONE steps=N opt_steps=M");
# TRACE_DIR: the ranks' rank<k>.sync.json, whose
# "ranges" are [step, "A"|"B", address, bytes] records (runtime/grad/
# ddp_rangelog.h).  When the script's own log shows its ranks diverged (a
# rank skipped an optimizer step another ran: trace mode's GradScaler), it
# prints where and exits 3: run.sh then requires that libddp stopped the run
# (the collectives' step tags no longer pair).  Otherwise, per rank and step:
#   - the averaged ranges ("A"), merged where adjacent, are exactly the
#     gradients the script printed, merged the same way;
#   - the bytes averaged equal the gradient bytes (nothing averaged twice);
#   - broadcasts ("B") happen only at step 1;
#   - the steps counted equal the optimizer steps the script really ran.
# libddp numbers reductions by optimizer step: an iteration whose
# optimizer.step() was skipped (GradScaler's found_inf, which in trace mode
# holds leftover bytes) has its gradients averaged again in the next
# iteration under the same step number, so iteration S's gradients belong
# to libddp's step (optimizer steps run before S) + 1.
# Prints one line per failure and exits 1 on any.
import json
import re
import sys
from collections import defaultdict


def merge(iv):
    out = []
    for lo, hi in sorted(iv):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [tuple(x) for x in out]


def main():
    out_path, trace_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    truth = defaultdict(lambda: defaultdict(list))
    done, opt_done, ran_after = {}, {}, defaultdict(dict)
    for line in open(out_path, errors="replace"):
        m = re.match(r"\[rank (\d+)\] TRUTH step=(\d+) ptr=(\d+) bytes=(\d+)", line)
        if m:
            r, s, p, b = map(int, m.groups())
            truth[r][s].append((p, p + b))
            continue
        m = re.match(r"\[rank (\d+)\] OPT step=(\d+) ran=(\d+)", line)
        if m:
            r, s, n = map(int, m.groups())
            ran_after[r][s] = n
            continue
        m = re.match(r"\[rank (\d+)\] DONE steps=(\d+)(?: opt_steps=(\d+))?", line)
        if m:
            done[int(m.group(1))] = int(m.group(2))
            if m.group(3) is not None:
                opt_done[int(m.group(1))] = int(m.group(3))
    # the script's own log shows its ranks diverged (in trace mode
    # GradScaler's found_inf holds leftover bytes, so a rank may skip an
    # optimizer step another runs): libddp must stop such a run (exit 3,
    # run.sh checks the stop); nothing else is checked
    for s in sorted({s for r in ran_after for s in ran_after[r]}):
        did = {r: ran_after[r].get(s, 0) - ran_after[r].get(s - 1, 0) for r in ran_after if s in ran_after[r]}
        if len(did) > 1 and len(set(did.values())) > 1:
            ran = sorted(r for r in did if did[r])
            skipped = sorted(r for r in did if not did[r])
            print(f"the ranks' programs diverged at iteration {s}: rank(s) {skipped} skipped the optimizer step "
                  f"rank(s) {ran} ran")
            return 3
    bad = []
    if not truth:
        bad.append("no TRUTH lines in the output: the script did not run")
    for r in sorted(truth):
        if done.get(r) != steps:
            bad.append(f"rank {r}: the script did not finish {steps} steps (DONE {done.get(r)})")
        try:
            sj = json.load(open(f"{trace_dir}/rank{r}.sync.json"))
        except (OSError, ValueError) as e:
            bad.append(f"rank {r}: no usable rank{r}.sync.json ({e})")
            continue
        ran = opt_done.get(r, steps)
        if sj.get("steps") != ran:
            bad.append(f"rank {r}: libddp counted {sj.get('steps')} optimizer steps, the script ran {ran}"
                       f"{'' if ran == steps else f' (of {steps} iterations)'}")
        # the gradients each libddp step must have averaged
        want_by = defaultdict(list)
        for it in range(1, steps + 1):
            want_by[ran_after[r].get(it - 1, it - 1) + 1 if ran_after[r] else it] += truth[r][it]
        if sj.get("ranges_dropped", 0):
            bad.append(f"rank {r}: {sj['ranges_dropped']} range records dropped")
        red = defaultdict(list)
        for s, kind, addr, nbytes in sj.get("ranges", []):
            if kind == "A":
                red[s].append((addr, addr + nbytes))
            elif s != 1:
                bad.append(f"rank {r}: parameter/state broadcast at step {s} ({nbytes} bytes at {addr:#x}); only step 1 may broadcast")
        last = max(want_by) if want_by else steps
        for s in range(1, last + 1):
            want, got = merge(want_by[s]), merge(red.get(s, []))
            wb = sum(h - l for l, h in want_by[s])
            gb = sum(h - l for l, h in red.get(s, []))
            if want != got:
                missing = [f"{l:#x}+{h - l}" for l, h in want if (l, h) not in got]
                extra = [f"{l:#x}+{h - l}" for l, h in got if (l, h) not in want]
                bad.append(f"rank {r} step {s}: averaged ranges differ from the gradients: missing {missing[:6]}"
                           f"{' ...' if len(missing) > 6 else ''}, extra {extra[:6]}{' ...' if len(extra) > 6 else ''}")
            elif gb != wb:
                bad.append(f"rank {r} step {s}: {gb} bytes averaged for {wb} gradient bytes (some averaged twice)")
        for s in red:
            if s > last:
                bad.append(f"rank {r}: ranges averaged at step {s}, after the last step {last}")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
