#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""symbolize.py VMLINUX SRCDIR: add file:line to kernel backtrace lines.

Reads text on stdin and writes it to stdout; every line that carries a
kernel symbol with offset and length (`func+0x1f/0x80`, as kmemleak,
WARN and oops backtraces print them, with or without a `[<address>]`)
gets ` (file.c:123)` appended: the symbol's address from `nm VMLINUX`
plus the offset, resolved by `addr2line -i` (inlined callers joined with
" < ").  Paths are shown relative to SRCDIR.  Needs a VMLINUX with line
tables (CONFIG_DEBUG_INFO; the debug kernels have it); without them, or
for a symbol nm does not know, the line is left as it was.  scripts/guest.sh
runs it on the objects a debug kernel's kmemleak blames on the job.
"""
import os
import re
import subprocess
import sys

SYM_RE = re.compile(r"(?:\[<[0-9a-f]+>\] )?([A-Za-z_][A-Za-z0-9_.]*)\+0x([0-9a-f]+)/0x[0-9a-f]+")


def text_symbols(vmlinux):
    out = {}
    p = subprocess.run(["nm", vmlinux], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            out.setdefault(parts[2], int(parts[0], 16))
    return out


def resolve(vmlinux, addrs, srcdir):
    """address -> "file:line[ < file:line...]" for the addresses given."""
    if not addrs:
        return {}
    p = subprocess.run(["addr2line", "-i", "-a", "-e", vmlinux],
                       input="\n".join(f"{a:x}" for a in addrs) + "\n",
                       capture_output=True, text=True)
    res, cur = {}, None
    for line in p.stdout.splitlines():
        if line.startswith("0x"):
            cur = int(line, 16)
            res[cur] = []
        elif cur is not None and not line.startswith("??") and \
                not line.endswith(":?") and not line.endswith(":0"):
            path, _, lineno = line.split(" (discriminator")[0].rpartition(":")
            # relative to the object tree (kbuild with O=) or absolute;
            # shown relative to the source tree
            path = os.path.normpath(os.path.join(os.path.dirname(
                os.path.abspath(vmlinux)), path))
            if srcdir and path.startswith(srcdir.rstrip("/") + "/"):
                path = path[len(srcdir.rstrip("/")) + 1:]
            res[cur].append(f"{path}:{lineno}")
    return {a: " < ".join(v) for a, v in res.items() if v}


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2
    vmlinux, srcdir = sys.argv[1], os.path.realpath(sys.argv[2])
    lines = sys.stdin.read().splitlines()
    syms = text_symbols(vmlinux) if os.path.isfile(vmlinux) else {}
    want = {}
    for i, line in enumerate(lines):
        m = SYM_RE.search(line)
        if m and m.group(1) in syms:
            # the return address points after the call: look up the byte
            # before it, so that the line is the call's
            off = int(m.group(2), 16)
            want[i] = syms[m.group(1)] + max(off - 1, 0)
    where = resolve(vmlinux, sorted(set(want.values())), srcdir) if want else {}
    for i, line in enumerate(lines):
        w = where.get(want.get(i))
        print(f"{line} ({w})" if w else line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
