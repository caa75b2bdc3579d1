#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# compile_commands.sh OUT - writes the compilation database (clang's
# compile_commands.json: one entry per C/C++ source, with the exact flags the
# build uses) from make's own recipes (`make -Bn build-all`: printed, not run),
# so it needs no tool besides make and python3 and never rebuilds anything.
# nvcc's device compilations are left out (clang tools do not read them); the
# C and C++ files of every component, tests included, are in.
# Run by `make compile_commands.json` (and by `make lint`).
set -euo pipefail
out=${1:?usage: scripts/compile_commands.sh OUT}
cd "$(dirname "$0")/.."
${MAKE:-make} --no-print-directory -Bn V=1 build-all 2>/dev/null | python3 -c '
import json, os, shlex, sys
root = os.getcwd()
seen, db = set(), []
for line in sys.stdin:
    for cmd in line.replace("&&", ";").split(";"):
        try:
            argv = shlex.split(cmd)
        except ValueError:
            continue
        if "-c" not in argv:
            continue
        if argv and argv[0] == "ccache":
            argv = argv[1:]
        # any compiler driver ($(CC), $(CXX), a wrapper), not nvcc or a shell
        if not argv or os.path.basename(argv[0]) in ("nvcc", "sh", "bash", "env"):
            continue
        srcs = [a for a in argv if a.endswith((".c", ".cc", ".cpp")) and os.path.exists(a)]
        for s in srcs:
            if s in seen:
                continue
            seen.add(s)
            db.append({"directory": root, "file": os.path.join(root, s), "arguments": argv})
if not db:
    sys.exit("compile_commands.sh: make printed no compilation")
json.dump(db, sys.stdout, indent=1)
print()
' >"$out.tmp"
mv "$out.tmp" "$out"
echo "compile_commands.sh: $(grep -c '"file"' "$out") files in $out"
