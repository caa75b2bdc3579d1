#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# gpt.sh - samples/gpt (a GPT-2-style trainer: runtime API, cuBLASLt,
# cuBLAS batched GEMMs, bf16) on the CPU device and the cuBLAS stand-ins:
#   - the losses of step 1 and step 101 equal an independent python3
#     forward pass of the model (fp32 activations, the saved weights rounded
#     to bf16 as the program's parameters are) on the initial weights and on
#     the checkpoint after step 100, each on its step's batch (relative 5e-3);
#   - 101 steps: one line per step, the loss falls by a clear margin;
#   - the save file's size, seeds reproducible and different, --accum 2
#     --batch 2 equals --batch 4 (bf16: relative 1e-2) while --batch 2 alone
#     does not, the GELU epilogues equal the GELU kernels, --clip acts,
#     --save-every writes the checkpoints a shorter run ends with;
#   - bad options, bad token shards and a failing cudaMalloc: one line each.
. "$(dirname "$0")/lib.bash"
need_sample gpt
DATA=$BUILD/data/gpt.bin
[ -e "$DATA" ] || { echo "$DATA is not built (make all)"; exit 77; }
for f in "$BUILD/cpudev/lib/libcublas.so.13" "$BUILD/cpudev/lib/libcublasLt.so.13"; do
	[ -e "$f" ] || { echo "$f is not built (make all)"; exit 77; }
done
command -v python3 >/dev/null || { echo "python3 is needed"; exit 77; }
P=$BUILD/samples/gpt
# wte 128x32, wpe 16x32, per layer (x2) ln1 2x32, qkv 96x32+96, attproj
# 32x32+32, ln2 2x32, fc 128x32+128, fcproj 32x128+32; lnf 2x32
NPARAM=$((128 * 32 + 16 * 32 + 2 * (64 + 96 * 32 + 96 + 32 * 32 + 32 + 64 + 128 * 32 + 128 + 32 * 128 + 32) + 64))

run() {
	local name=$1
	shift
	"$P" --data "$DATA" --save "$TMP/$name.bin" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ echo "# $name: exit $?: $(tail -n 3 "$TMP/$name.err")"; return 1; }
}
# relerr_le NAME A B TOL: relative L2 distance of two save files <= TOL
relerr_le() {
	local e
	e=$(param_relerr "$2" "$3")
	echo "# $1: relative L2 error $e"
	le "$e" "$4"
}
relerr_gt() {
	local e
	e=$(param_relerr "$2" "$3")
	echo "# $1: relative L2 error $e"
	awk -v x="$e" -v y="$4" 'BEGIN { exit !(x + 0 > y + 0) }'
}

# forward_ref WEIGHTS N LOSS WHAT TOL: an independent forward pass (python3,
# fp32 activations) with the saved master weights rounded to bf16 as the
# program's parameters are, on the batch of step N+1, equals LOSS within TOL
forward_ref() {
	python3 - "$1" "$DATA" "$3" "$2" "$4" "$5" <<'PY'
import math, struct, sys
L, NH, C, T, V, Vp, B = 2, 2, 32, 16, 96, 128, 4
HS = C // NH
raw = open(sys.argv[1], "rb").read()
# the program computes with the bf16 copy of its fp32 master weights
# (round to nearest even)
u = struct.unpack("<%dI" % (len(raw) // 4), raw)
u = [((x + 0x7fff + ((x >> 16) & 1)) >> 16) << 16 for x in u]
p = struct.unpack("<%df" % len(u), struct.pack("<%dI" % len(u), *u))
names = [("wte", Vp * C), ("wpe", T * C), ("ln1w", L * C), ("ln1b", L * C), ("qkvw", L * 3 * C * C),
         ("qkvb", L * 3 * C), ("attprojw", L * C * C), ("attprojb", L * C), ("ln2w", L * C), ("ln2b", L * C),
         ("fcw", L * 4 * C * C), ("fcb", L * 4 * C), ("fcprojw", L * 4 * C * C), ("fcprojb", L * C),
         ("lnfw", C), ("lnfb", C)]
W, off = {}, 0
for n, s in names:
    W[n] = p[off:off + s]
    off += s
assert off == len(p), (off, len(p))
d = open(sys.argv[2], "rb").read()
assert struct.unpack_from("<3i", d, 0) == (20240520, 1, (len(d) - 1024) // 2)
first = int(sys.argv[4]) * B * (T + 1)  # the batch of step N+1: rows of T+1 tokens
tok = struct.unpack_from("<%dH" % (B * (T + 1)), d, 1024 + 2 * first)

def linear(w, b, x, out, inn, wo=0, bo=0):
    return [sum(w[wo + o * inn + i] * x[i] for i in range(inn)) + (b[bo + o] if b else 0.0) for o in range(out)]

def ln(x, w, b, o):
    m = sum(x) / C
    v = sum((e - m) ** 2 for e in x) / C
    r = 1.0 / math.sqrt(v + 1e-5)
    return [(x[i] - m) * r * w[o + i] + b[o + i] for i in range(C)]

def gelu(x):
    return 0.5 * x * (1.0 + math.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

total = 0.0
for b in range(B):
    row = tok[b * (T + 1):(b + 1) * (T + 1)]
    x = [[W["wte"][row[t] * C + c] + W["wpe"][t * C + c] for c in range(C)] for t in range(T)]
    for l in range(L):
        qkv = [linear(W["qkvw"], W["qkvb"], ln(x[t], W["ln1w"], W["ln1b"], l * C), 3 * C, C, l * 3 * C * C, l * 3 * C)
               for t in range(T)]
        for t in range(T):
            y = []
            for h in range(NH):
                q = qkv[t][h * HS:(h + 1) * HS]
                s = [sum(q[i] * qkv[j][C + h * HS + i] for i in range(HS)) / math.sqrt(HS) for j in range(t + 1)]
                mx = max(s)
                e = [math.exp(v - mx) for v in s]
                z = sum(e)
                y += [sum(e[j] / z * qkv[j][2 * C + h * HS + i] for j in range(t + 1)) for i in range(HS)]
            a = linear(W["attprojw"], W["attprojb"], y, C, C, l * C * C, l * C)
            x[t] = [x[t][c] + a[c] for c in range(C)]
        for t in range(T):
            f = [gelu(v) for v in linear(W["fcw"], W["fcb"], ln(x[t], W["ln2w"], W["ln2b"], l * C), 4 * C, C,
                                         l * 4 * C * C, l * 4 * C)]
            m = linear(W["fcprojw"], W["fcprojb"], f, C, 4 * C, l * 4 * C * C, l * C)
            x[t] = [x[t][c] + m[c] for c in range(C)]
    for t in range(T):
        h = ln(x[t], W["lnfw"], W["lnfb"], 0)
        logits = linear(W["wte"], None, h, V, C)
        mx = max(logits)
        lse = mx + math.log(sum(math.exp(v - mx) for v in logits))
        total += lse - logits[row[t + 1]]
ref = total / (B * T)
got = float(sys.argv[3])
print("# %s: program %.6f, python3 forward %.6f" % (sys.argv[5], got, ref))
sys.exit(0 if abs(got - ref) <= float(sys.argv[6]) * ref else 1)
PY
}

# the initial weights (--steps 0), and 101 steps with the parameters after
# step 100 saved: the first and the last step's loss, computed again from
# the weights by an independent forward pass
run init --steps 0 --seed 3
check "--steps 0 --save writes $((NPARAM * 4)) bytes ($NPARAM fp32 master weights)" size_is "$TMP/init.bin" $((NPARAM * 4))
run a --steps 101 --seed 3 --save-every 100 && check "101 steps: one well-formed line per step" steps_ok "$TMP/a.out" 101
l1=$(sed -n 's/^step 1 loss //p' "$TMP/a.out")
l101=$(sed -n 's/^step 101 loss //p' "$TMP/a.out")
check "step 1: the loss ($l1) equals a python3 forward pass of the initial weights (rel. 5e-3)" \
	forward_ref "$TMP/init.bin" 0 "$l1" "step 1" 5e-3
check "step 101: the loss ($l101) equals a python3 forward pass of the weights after step 100 (rel. 5e-3)" \
	forward_ref "$TMP/a.bin.step100" 100 "$l101" "step 101" 5e-3
ratio=$(loss_ratio "$TMP/a.out" 20)
echo "# 101 steps: mean loss of the last 20 steps / first 20 = $ratio ($(sed -n '1p;$p' "$TMP/a.out" | tr '\n' ' '))"
check "101 steps: the loss falls (last-20 mean < 0.8 x first-20 mean)" \
	awk -v r="$ratio" 'BEGIN { exit !(r == r + 0 && r < 0.8) }'
check "--save writes $((NPARAM * 4)) bytes" size_is "$TMP/a.bin" $((NPARAM * 4))

run b4 --steps 20 --batch 4 && run s2 --steps 20 --batch 4 --seed 1 && run s3 --steps 0 --seed 4
check "same seed: bit-identical parameters and losses after 20 steps" \
	eval 'cmp -s "$TMP/b4.bin" "$TMP/s2.bin" && cmp -s "$TMP/b4.out" "$TMP/s2.out"'
check "different seed: different initial parameters" eval '! cmp -s "$TMP/init.bin" "$TMP/s3.bin"'

# gradient accumulation: 2 micro-steps of 2 rows read the same 4 rows as
# one step of 4 and average the same gradients (bf16 rounding differs)
run acc --steps 20 --batch 2 --accum 2 && run b2 --steps 20 --batch 2
check "--accum 2 --batch 2 equals --batch 4 (rel. 1e-2)" relerr_le "accum vs batch 4" "$TMP/acc.bin" "$TMP/b4.bin" 1e-2
check "negative control: --batch 2 alone differs from --batch 4 (rel. > 5e-2)" \
	relerr_gt "batch 2 vs batch 4" "$TMP/b2.bin" "$TMP/b4.bin" 5e-2
l1acc=$(sed -n 's/^step 1 loss //p' "$TMP/acc.out")
l1b4=$(sed -n 's/^step 1 loss //p' "$TMP/b4.out")
check "--accum 2: the step's loss is the mean over both micro-steps ($l1acc vs $l1b4)" \
	awk -v a="$l1acc" -v b="$l1b4" 'BEGIN { d = a - b; exit !(d < 1e-5 && d > -1e-5) }'

# the cuBLASLt GELU epilogues (fusion 2: forward and backward; 1: forward)
# compute what the GELU kernels (0) compute
run gf0 --steps 20 --batch 4 --gelu-fusion 0 && run gf1 --steps 20 --batch 4 --gelu-fusion 1
check "--gelu-fusion 0 (kernels) equals 2 (epilogues) (rel. 1e-2)" relerr_le "fusion 0 vs 2" "$TMP/gf0.bin" "$TMP/b4.bin" 1e-2
check "--gelu-fusion 1 equals 2 (rel. 1e-2)" relerr_le "fusion 1 vs 2" "$TMP/gf1.bin" "$TMP/b4.bin" 1e-2
check "--gelu-fusion 0 is not the same computation as 2" eval '! cmp -s "$TMP/gf0.bin" "$TMP/b4.bin"'

run clip_small --steps 5 --clip 1e-3 && run clip_big --steps 5 --clip 1e9 && run clip_big2 --steps 5 --clip 1e30
check "--clip 1e-3 differs from --clip 1e9" eval '! cmp -s "$TMP/clip_small.bin" "$TMP/clip_big.bin"'
check "--clip 1e9 equals --clip 1e30 (no clipping either way)" cmp -s "$TMP/clip_big.bin" "$TMP/clip_big2.bin"

# periodic checkpoints: PATH.step10 is what a 10-step run ends with
run ck --steps 20 --batch 4 --save-every 10 && run ten --steps 10 --batch 4
check "--save-every 10: PATH.step10 equals a 10-step run's parameters" cmp -s "$TMP/ck.bin.step10" "$TMP/ten.bin"
check "--save-every 10: PATH.step20 equals the final save" cmp -s "$TMP/ck.bin.step20" "$TMP/ck.bin"
check "--save-every 10: the final save equals --batch 4 without checkpoints" cmp -s "$TMP/ck.bin" "$TMP/b4.bin"

# errors
check "unknown option: exit 2, one line" one_line_error 2 "gpt: unknown option" "$P" --data "$DATA" --bogus
check "missing --data: exit 2, one line" one_line_error 2 "gpt: missing option --data" "$P" --steps 3
check "bad --gelu-fusion: exit 2, one line" one_line_error 2 "gpt: option --gelu-fusion" "$P" --data "$DATA" --gelu-fusion 3
check "--save-every without --save: exit 2, one line" one_line_error 2 "gpt: --save-every needs --save" \
	"$P" --data "$DATA" --save-every 5
check "missing data file: exit 1, one line" one_line_error 1 "gpt: cannot open $TMP/none.bin" "$P" --data "$TMP/none.bin"
check "a record file is not a token shard: exit 1, one line" one_line_error 1 "gpt: $BUILD/data/mlp.rec: bad magic" \
	"$P" --data "$BUILD/data/mlp.rec"
head -c 3000 "$DATA" >"$TMP/short.bin"
check "truncated token shard: exit 1, one line" one_line_error 1 "gpt: $TMP/short.bin: 3000 bytes, but the header says" \
	"$P" --data "$TMP/short.bin"
python3 - "$DATA" "$TMP/tok.bin" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read(1024 + 2 * 200))
struct.pack_into("<i", d, 8, 200)
struct.pack_into("<H", d, 1024 + 2 * 37, 96)
open(sys.argv[2], "wb").write(d)
PY
check "token >= 96: exit 1, one line" one_line_error 1 "gpt: $TMP/tok.bin: token 96 at 37 is not below" "$P" --data "$TMP/tok.bin"
DDP_SIM_FAIL=cuMemAlloc_v2:3 "$P" --data "$DATA" --steps 1 >/dev/null 2>"$TMP/fail.err"
rc=$?
echo "# DDP_SIM_FAIL=cuMemAlloc_v2:3: exit $rc: $(cat "$TMP/fail.err")"
check "failing cudaMalloc: exit 1, one line naming it" \
	eval '[ $rc -eq 1 ] && [ "$(wc -l <"$TMP/fail.err")" -eq 1 ] && grep -q "^gpt: cudaMalloc failed: cudaErrorMemoryAllocation" "$TMP/fail.err"'
finish
