#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# data.sh - ddp-mkdata: deterministic output, the DDPREC01 header, records
# equal to an independent re-implementation (python3) of the token mapping
# and windowing, --max-records/--context, the token shard of --kind gpt
# (llm.c's format) against the same re-implementation, and its error
# messages.
. "$(dirname "$0")/lib.bash"
MK=$BUILD/bin/ddp-mkdata
[ -x "$MK" ] || { echo "$MK is not built"; exit 77; }
command -v python3 >/dev/null || { echo "python3 is needed"; exit 77; }

for kind in mlp charlm; do
	"$MK" --kind $kind --out "$TMP/$kind.1" 2>/dev/null && "$MK" --kind $kind --out "$TMP/$kind.2" 2>/dev/null
	check "$kind: two runs give the same bytes" cmp -s "$TMP/$kind.1" "$TMP/$kind.2"
	# independent reader: header fields, size, and every record against the source text
	check "$kind: header and records match the source text" python3 - "$TMP/$kind.1" $kind <<'PY'
import os, struct, sys
path, kind = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
magic, hb, rb, count, vocab, ctx = struct.unpack_from("<8sIIQII", data, 0)
K = 8 if kind == "mlp" else 32
assert magic == b"DDPREC01", magic
assert hb == 64 and vocab == 96 and ctx == K and rb == K + 1, (hb, vocab, ctx, rb)
assert data[32:64] == bytes(32), "reserved bytes"
assert hb + count * rb == len(data), "size"
src = "/usr/share/common-licenses"
text = b""
for name in sorted(os.listdir(src), key=lambda s: s.encode()):
    p = os.path.join(src, name)
    if name.startswith(".") or os.path.islink(p) or not os.path.isfile(p):
        continue
    text += open(p, "rb").read()
tok = bytes(0 if c == 10 else (c - 31 if 32 <= c <= 126 else 1) for c in text)
assert count == (len(tok) - 1) // K, (count, len(tok))
for r in range(count):
    rec = data[hb + r * rb: hb + (r + 1) * rb]
    assert rec == tok[r * K: r * K + K + 1], "record %d" % r
print("# %d records of %d bytes" % (count, rb))
PY
done

"$MK" --kind gpt --out "$TMP/gpt.1" 2>/dev/null && "$MK" --kind gpt --out "$TMP/gpt.2" 2>/dev/null
check "gpt: two runs give the same bytes" cmp -s "$TMP/gpt.1" "$TMP/gpt.2"
check "gpt: a token shard (magic 20240520, version 1, count) of every token of the source text" \
	python3 - "$TMP/gpt.1" <<'PY'
import os, struct, sys
data = open(sys.argv[1], "rb").read()
hdr = struct.unpack_from("<256i", data, 0)
assert hdr[:2] == (20240520, 1), hdr[:3]
assert hdr[3:] == (0,) * 253, "reserved header ints"
n = hdr[2]
assert len(data) == 1024 + 2 * n, (len(data), n)
src = "/usr/share/common-licenses"
text = b""
for name in sorted(os.listdir(src), key=lambda s: s.encode()):
    p = os.path.join(src, name)
    if name.startswith(".") or os.path.islink(p) or not os.path.isfile(p):
        continue
    text += open(p, "rb").read()
tok = [0 if c == 10 else (c - 31 if 32 <= c <= 126 else 1) for c in text]
assert list(struct.unpack_from("<%dH" % n, data, 1024)) == tok, "tokens"
print("# %d uint16 tokens" % n)
PY
"$MK" --kind gpt --max-records 1000 --out "$TMP/gpt.small" 2>/dev/null
check "gpt --max-records 1000: the first 1000 tokens" python3 - "$TMP/gpt.small" "$TMP/gpt.1" <<'PY'
import struct, sys
a, b = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
assert struct.unpack_from("<3i", a, 0) == (20240520, 1, 1000) and len(a) == 1024 + 2000
assert a[1024:] == b[1024:3024]
PY
check "gpt --context: exit 2, one line" one_line_error 2 "ddp-mkdata: option --context does not apply" \
	"$MK" --kind gpt --context 8 --out "$TMP/x"

"$MK" --kind charlm --context 16 --max-records 100 --out "$TMP/small" 2>/dev/null
check "--context 16 --max-records 100: 100 records of 17 bytes" python3 - "$TMP/small" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
_, hb, rb, count, _, ctx = struct.unpack_from("<8sIIQII", d, 0)
assert (rb, count, ctx) == (17, 100, 16) and len(d) == 64 + 100 * 17
PY

check "missing --kind: exit 2, one line" one_line_error 2 "ddp-mkdata: missing option --kind" "$MK" --out "$TMP/x"
check "bad --kind: exit 2, one line" one_line_error 2 "ddp-mkdata: option --kind" "$MK" --kind foo --out "$TMP/x"
check "unknown option: exit 2, one line" one_line_error 2 "ddp-mkdata: unknown option" "$MK" --kind mlp --out "$TMP/x" --bogus
check "bad --context: exit 2, one line" one_line_error 2 "ddp-mkdata: option --context" "$MK" --kind mlp --out "$TMP/x" --context 0
check "missing source directory: exit 1, one line" one_line_error 1 "ddp-mkdata: cannot open source" "$MK" --kind mlp --out "$TMP/x" --source "$TMP/none"
check "unwritable output: exit 1, one line" one_line_error 1 "ddp-mkdata: cannot create" "$MK" --kind mlp --out "$TMP/no/such/dir/x"
finish
