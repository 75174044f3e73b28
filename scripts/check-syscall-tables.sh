#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-syscall-tables.sh BASE TREE: epoll_mod_wait has the right number in
# every system call table of TREE, a kernel tree with BASE's series applied
# (make check-patches runs it on build/BASE/src).  It fails, saying why, if
#
#   (a) a table that lists the base's newest call (mseal on 6.12, execveat
#       on v3.19) does not list epoll_mod_wait: a missed table;
#   (b) two tables of one numbering give it different numbers;
#   (c) its number is not the previous highest of its table + 1, or another
#       call has it (or, in asm-generic/unistd.h, __NR_syscalls is not
#       bumped past it).
#
# The tables are every arch/*/.../*.tbl and scripts/syscall.tbl (not the
# copies under tools/, which perf syncs by itself) and
# include/uapi/asm-generic/unistd.h; any other unistd*.h that defines
# __NR_epoll_mod_wait is checked too.  v3.19's hand-written per-arch lists
# (arch/*/include/uapi/asm/unistd.h and their assembly tables) are not
# wired by the v3.19 series, as the execveat() commit did not wire them:
# the unistd.h ones are counted, not checked.
#
# Two tables are in one numbering when they give the base's newest call
# the same number: on 6.12 every table (the numbers are unified since
# pidfd_send_signal, 424), on v3.19 x86_64, i386 and asm-generic are three.
# Numbers are compared as mainline encodes them: alpha's table holds the
# unified number + 110; the MIPS tables hold the bare number, the ABI's
# __NR_Linux offset (4000 o32, 5000 n64, 6000 n32) being added when their
# headers are generated (shown, not compared).
case "${1:-}" in --help|-h) sed -n '2,/^[^#]/{/^#/!d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac
set -eu

base=${1:?usage: check-syscall-tables.sh BASE TREE}
tree=${2:?usage: check-syscall-tables.sh BASE TREE}
# the base's newest call before ours (SYSCALL_ANCHOR in its .conf)
conf=$(dirname "$0")/bases/$base.conf
[ -f "$conf" ] || { echo "check-syscall-tables: unknown base '$base' (no $conf)" >&2; exit 2; }
anchor=$(TOP=$(dirname "$0")/..; . "$conf" >/dev/null 2>&1; echo "${SYSCALL_ANCHOR:-}")
[ -n "$anchor" ] || { echo "check-syscall-tables: $conf sets no SYSCALL_ANCHOR" >&2; exit 2; }
[ -d "$tree/arch" ] || { echo "check-syscall-tables: $tree is not a kernel tree" >&2; exit 2; }

cd "$tree"
mapfile -t lists < <(find arch scripts include/uapi/asm-generic -type f \
	\( -name '*.tbl' -o -name 'unistd*.h' \) 2>/dev/null | LC_ALL=C sort)
python3 - "$base" "$anchor" "${lists[@]}" <<'PY'
import re, sys

base, anchor = sys.argv[1], sys.argv[2]
NEW = "epoll_mod_wait"
GENERIC = "include/uapi/asm-generic/unistd.h"
files = sys.argv[3:]
errors, notes, tables = [], [], []


def mips_offset(path):
    """The __NR_Linux offset the MIPS header generator adds, per ABI."""
    m = re.search(r"syscall_(o32|n64|n32)\.tbl$", path)
    if not m:
        return 0
    try:
        text = open("arch/mips/include/uapi/asm/unistd.h").read()
        return int(re.search(r"#define __NR_Linux\s+(\d+)\s+#include <asm/unistd_%s\.h>"
                             % m.group(1), text).group(1))
    except (OSError, AttributeError):
        return 0


def unify(path, nr):
    """The number in the unified numbering: alpha's table is offset by 110."""
    return nr - 110 if path.startswith("arch/alpha/") else nr


def tbl_entries(path):
    """(line, number, name) of each entry of a syscall.tbl."""
    out = []
    for i, line in enumerate(open(path), 1):
        f = line.split("#", 1)[0].split()
        if len(f) >= 3 and f[0].isdigit():
            out.append((i, int(f[0]), f[2]))
    return out


def h_entries(path):
    """(line, number, name) of each "#define __NR_name N" (or "(BASE + N)")."""
    out = []
    rx = re.compile(r"^#define\s+__NR_(\w+)\s+\(?\s*(?:\w+\s*\+\s*)?(\d+)\s*\)?\s*(?:/\*.*)?$")
    for i, line in enumerate(open(path), 1):
        m = rx.match(line)
        if m and m.group(1) != "syscalls":
            out.append((i, int(m.group(2)), m.group(1)))
    return out


for path in files:
    is_tbl = path.endswith(".tbl")
    entries = tbl_entries(path) if is_tbl else h_entries(path)
    names = {e[2] for e in entries}
    has_new, has_anchor = NEW in names, anchor in names
    if not has_new and not has_anchor:
        continue
    if not is_tbl and path != GENERIC and not has_new:
        notes.append(path)
        continue
    if not has_new:
        errors.append("%s lists %s but not %s: a table was missed "
                      "(wire it up in the series' arch wire-up patch)"
                      % (path, anchor, NEW))
        continue
    new = [e for e in entries if e[2] == NEW]
    nrs = sorted({e[1] for e in new})
    if len(nrs) != 1:
        errors.append("%s gives %s several numbers: %s"
                      % (path, NEW, ", ".join(map(str, nrs))))
        continue
    line, nr = new[0][0], nrs[0]
    before = [e[1] for e in entries if e[0] < line and e[2] != NEW]
    prev = max(before) if before else None
    if prev is None or nr != prev + 1:
        errors.append("%s:%d: %s is %d, but the highest number before it "
                      "is %s: it must be %s (consecutive with its neighbours)"
                      % (path, line, NEW, nr, prev,
                         prev + 1 if prev is not None else "?"))
    clash = sorted({e[2] for e in entries if e[1] == nr and e[2] != NEW})
    if clash:
        errors.append("%s: %d is also %s" % (path, nr, ", ".join(clash)))
    if path == GENERIC:
        text = open(path).read().split("\n")
        if not any(re.match(r"__SYSCALL\(__NR_%s, sys_%s\)" % (NEW, NEW), l)
                   for l in text[line:line + 3]):
            errors.append("%s:%d: no __SYSCALL(__NR_%s, sys_%s) after the "
                          "#define" % (path, line, NEW, NEW))
        after = [l for l in text[line:] if l.startswith("#define __NR_syscalls")]
        want = "#define __NR_syscalls %d" % (nr + 1)
        if not after or after[0].strip() != want:
            errors.append("%s: the first __NR_syscalls after %s is \"%s\", "
                          "not \"%s\"" % (path, NEW, after[0] if after else
                                          "missing", want))
    anchors = [e[1] for e in entries if e[2] == anchor]
    scheme = unify(path, min(anchors)) if anchors else None
    tables.append((path, nr, unify(path, nr), scheme, mips_offset(path)))

# (b) one number per numbering
schemes = {}
for t in tables:
    schemes.setdefault(t[3], []).append(t)
for key, ts in sorted(schemes.items(), key=lambda kv: str(kv[0])):
    got = [t[2] for t in ts]
    common = max(sorted(set(got)), key=got.count)
    for t in ts:
        if t[2] != common:
            errors.append("%s gives %s %d%s, but %d of the %d tables of its "
                          "numbering (%s is %s in each) give it %d" % (
                              t[0], NEW, t[1],
                              " (unified %d)" % t[2] if t[2] != t[1] else "",
                              got.count(common), len(ts), anchor, key, common))

for path, nr, u, key, off in tables:
    shown = "%d" % nr
    if u != nr:
        shown += " (unified %d)" % u
    if off:
        shown += " (__NR_Linux + %d = %d)" % (nr, nr + off)
    print("  %-46s %s %s" % (path, NEW, shown))
if notes:
    print("  (%d hand-written per-arch lists with %s are not wired on %s "
          "and not checked)" % (len(notes), anchor, base))
if not tables and not errors:
    errors.append("no table in this tree lists %s" % NEW)
for e in errors:
    print("check-syscall-tables: %s: %s" % (base, e))
if errors:
    sys.exit(1)
print("  %s: %s has one number per numbering in all %d tables, each the "
      "next after the table's last call" % (base, NEW, len(tables)))
PY
