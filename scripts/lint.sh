#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# lint.sh - `make lint`: cppcheck and clang-tidy over the product's C sources
# (runtime/, interpose/, launcher/, tools/: what ships in libddp.so and
# ddprun), compiled as the build compiles them ($BUILD/compile_commands.json,
# scripts/compile_commands.sh).  Prints every finding as file:line; exits 1 on
# any.  Only checks that find bugs, not taste:
#   cppcheck --enable=warning,portability
#     errors (always on: null dereference, out-of-bounds, leaks it can prove),
#     warnings (a condition contradicting a dereference, printf argument
#     types, ...) and portability (64-bit and sign assumptions).  Not style or
#     performance: opinions, and the compiler's -Wall -Wextra cover the rest.
#   clang-tidy
#     clang-analyzer-core.*          path-sensitive: NULL and undefined values,
#                                    division by zero, bad calls
#     clang-analyzer-unix.*          malloc/free pairs (leaks, double free, use
#                                    after free), API misuse (open, pthread_once)
#     bugprone-suspicious-memset-usage, -suspicious-string-compare,
#     -misplaced-widening-cast, -signed-char-misuse, -suspicious-semicolon,
#     -infinite-loop             one-line mistakes the compiler accepts
#     (not bugprone-sizeof-expression: clang-tidy 14 cannot be told that
#     `sizeof *rows` of a struct row ** is our idiom, 16 false findings)
# A finding that is a false positive gets an inline suppression naming why
# (cppcheck: `// cppcheck-suppress id`; clang-tidy: `// NOLINT(check)`), or a
# line in scripts/cppcheck.supp; never a check switched off to make it pass.
# clang-tidy's findings from before `make lint` existed are counted per file
# and check in scripts/clang-tidy.baseline: more than the count fails, fewer
# says which line to lower (a ratchet: the baseline only shrinks).
# Usage: BUILD=build scripts/lint.sh [FILE...]   (default: every product file)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
J=${LINT_JOBS:-$(nproc 2>/dev/null || echo 2)}
db=$BUILD/lint
mkdir -p "$db"
command -v cppcheck >/dev/null && command -v clang-tidy >/dev/null ||
	{ echo "lint: needs cppcheck and clang-tidy (apt-get install cppcheck clang-tidy)" >&2; exit 2; }
scripts/compile_commands.sh "$BUILD/compile_commands.json" >/dev/null || exit 2
python3 - "$BUILD/compile_commands.json" "$db/compile_commands.json" "$@" <<'PY' || exit 2
import json, os, sys
src, dst, want = sys.argv[1], sys.argv[2], [os.path.abspath(f) for f in sys.argv[3:]]
root = os.getcwd() + "/"
keep = []
for e in json.load(open(src)):
    rel = e["file"][len(root):] if e["file"].startswith(root) else e["file"]
    if want and e["file"] not in want:
        continue
    if rel.split("/")[0] not in ("runtime", "interpose", "launcher", "tools") or not rel.endswith(".c"):
        continue
    # flags gcc knows and clang does not
    e["arguments"] = [a for a in e["arguments"] if not a.startswith(("-fvect-cost-model", "-ftree-vectorize"))]
    keep.append(e)
json.dump(keep, open(dst, "w"), indent=1)
print(len(keep), file=sys.stderr)
PY
files=$(python3 -c 'import json,sys; print("\n".join(e["file"] for e in json.load(open(sys.argv[1]))))' "$db/compile_commands.json")
rc=0
echo "lint: cppcheck ($(printf '%s\n' "$files" | wc -l) files)"
cppcheck --project="$db/compile_commands.json" --enable=warning,portability --std=c11 \
	--inline-suppr --suppressions-list=scripts/cppcheck.supp --quiet -j"$J" \
	--error-exitcode=1 --template='{file}:{line}: cppcheck {severity} [{id}] {message}' || rc=1
echo "lint: clang-tidy"
checks='-*,clang-analyzer-core.*,clang-analyzer-unix.*,bugprone-suspicious-memset-usage,bugprone-suspicious-string-compare,bugprone-misplaced-widening-cast,bugprone-signed-char-misuse,bugprone-suspicious-semicolon,bugprone-infinite-loop'
printf '%s\n' "$files" | xargs -P"$J" -n4 clang-tidy -p "$db" --quiet --checks="$checks" \
	--extra-arg=-Wno-unknown-warning-option 2>/dev/null | grep -E '^[^ ].*: (warning|error):' |
	sed "s|^$PWD/||" | sort -u >"$db/clang-tidy.txt"
python3 - "$db/clang-tidy.txt" scripts/clang-tidy.baseline $# <<'PY' || rc=1
import collections, re, sys
found = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"([^:]+):\d+:\d+: (?:warning|error): .*\[([^\]]+)\]$", line.strip())
    if m:
        found[(m.group(1), m.group(2))].append(line.strip())
base = {}
for line in open(sys.argv[2]):
    if line.strip() and not line.startswith("#"):
        f, c, n = line.split()
        base[(f, c)] = int(n)
bad = 0
for k, lines in sorted(found.items()):
    if len(lines) > base.get(k, 0):
        bad = 1
        print("\n".join(lines))
        print("lint: %s [%s]: %d finding(s), %d known" % (k[0], k[1], len(lines), base.get(k, 0)))
for k, n in sorted(base.items()) if sys.argv[3] == "0" else ():  # every file was read
    if len(found.get(k, ())) < n:
        print("lint: %s [%s] has %d finding(s), the baseline %d: lower scripts/clang-tidy.baseline"
              % (k[0], k[1], len(found.get(k, ())), n))
sys.exit(bad)
PY
[ $rc = 0 ] && echo "lint: clean" || echo "lint: findings above" >&2
exit $rc
