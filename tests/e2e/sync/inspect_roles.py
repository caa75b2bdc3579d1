#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""inspect_roles.py REPORT: the "Parameters" and "Gradients" sections of a
`ddprun inspect` report list exactly the ranges its Roles table gives those
roles (allocation, offset, bytes), and at least one of each.  Exit 0 when
they agree, 1 (with the first difference) when not, 2 on a report it cannot
read.  Independent of libddp: it parses the text."""
import re
import sys


def main(path):
    sect, rows = None, {"parameter": set(), "gradient": set()}
    listed = {"parameter": set(), "gradient": set()}
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("## "):
            sect = ("parameter" if line.startswith("## Parameters") else
                    "gradient" if line.startswith("## Gradients") else
                    "roles" if line.startswith("## Roles") else None)
            continue
        if sect in ("parameter", "gradient"):
            m = re.match(r"^  #(\d+)  \+(\d+)  (\d+) bytes  ", line)
            if m:
                listed[sect].add(tuple(int(x) for x in m.groups()))
        elif sect == "roles":
            m = re.match(r"^(parameter|gradient)\s+\S+\s+(\d+)\s+(\d+)\s.*\(allocation #(\d+),", line)
            if m:
                rows[m.group(1)].add((int(m.group(4)), int(m.group(2)), int(m.group(3))))
    if not rows["parameter"] or not rows["gradient"]:
        print("no parameter or no gradient in the Roles table")
        return 2
    for role in ("parameter", "gradient"):
        if listed[role] != rows[role]:
            extra = sorted(listed[role] - rows[role])[:3]
            missing = sorted(rows[role] - listed[role])[:3]
            print(f"{role}s: section and Roles differ: listed only {extra}, in Roles only {missing}")
            return 1
    print(f"{len(rows['parameter'])} parameter and {len(rows['gradient'])} gradient ranges agree")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
