#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""stress-report.py RESULTS_DIR BASE...: the make stress summary table.

Reads RESULTS_DIR/<base>/stress.txt (written by scripts/stress.sh) and
prints Markdown: per bad-input class, what the man pages document and how
many calls carried it on each base (64-bit and 32-bit runs summed; the
two per-command classes count commands, most of them in batches that
stopped earlier), then
the totals: calls, events and tokens checked, violations, and the splats
the host found on the debug kernel's console.
"""
import re
import os
import subprocess
import sys

# class -> (call, documented result).  "exact" means the fuzzer checks the
# errno itself, not only that it is one the man page allows.
CLASSES = [
    ("epoll_ctl.fd_or_epfd_not_open", "epoll_ctl", "EBADF"),
    ("epoll_ctl.fd_is_epfd", "epoll_ctl", "EINVAL"),
    ("epoll_ctl.op_invalid", "epoll_ctl", "EINVAL (EFAULT/EBADF/EPERM first)"),
    ("epoll_ctl.event_ptr_bad", "epoll_ctl",
     "EFAULT (NULL, unmapped, straddling, kernel address)"),
    ("epoll_ctl.exclusive_rr_misuse", "epoll_ctl",
     "EINVAL (RR alone, MOD, epoll target, other bits)"),
    ("epoll_ctl.events_random_32bit", "epoll_ctl",
     "success or EINVAL; never reported back"),
    ("epoll_mod_wait.epfd_not_open", "epoll_mod_wait", "EBADF, nothing run"),
    ("epoll_mod_wait.flags_nonzero", "epoll_mod_wait", "EINVAL, nothing run (exact)"),
    ("epoll_mod_wait.ncmds_negative", "epoll_mod_wait", "EINVAL, nothing run (exact)"),
    ("epoll_mod_wait.ncmds_over_max_or_wrapping", "epoll_mod_wait",
     "EINVAL, nothing run (exact)"),
    ("epoll_mod_wait.ncmds_0_with_cmds", "epoll_mod_wait",
     "accepted, cmds not looked at (exact)"),
    ("epoll_mod_wait.ncmds_exactly_max", "epoll_mod_wait", "accepted (1024 commands)"),
    ("epoll_mod_wait.cmds_ptr_not_user", "epoll_mod_wait",
     "EFAULT before the epfd, nothing run (exact; x86_64 kernel address)"),
    ("epoll_mod_wait.cmds_unreadable", "epoll_mod_wait",
     "EFAULT; exactly the readable groups of 8 before the fault ran"),
    ("epoll_mod_wait.cmds_readonly", "epoll_mod_wait",
     "EFAULT after the first group ran (exact)"),
    ("epoll_mod_wait.cmd_flags_nonzero", "epoll_mod_wait",
     "EINVAL in that command's error; batch stops (counted per command)"),
    ("epoll_mod_wait.cmd_reserved_nonzero", "epoll_mod_wait",
     "EINVAL in that command's error; batch stops (counted per command)"),
    ("epoll_mod_wait.cmd_op_invalid", "epoll_mod_wait",
     "EINVAL in that command's error; batch stops (counted per command)"),
    ("epoll_mod_wait.spec_ptr_bad", "epoll_mod_wait", "EFAULT, nothing run"),
    ("epoll_mod_wait.spec_size_below_ver0", "epoll_mod_wait", "EINVAL, nothing run"),
    ("epoll_mod_wait.spec_size_over_page", "epoll_mod_wait", "E2BIG, nothing run"),
    ("epoll_mod_wait.spec_size_larger_tail_zero", "epoll_mod_wait",
     "accepted as the 48-byte spec"),
    ("epoll_mod_wait.spec_tail_nonzero", "epoll_mod_wait", "E2BIG, nothing run"),
    ("epoll_mod_wait.spec_tail_unmapped", "epoll_mod_wait", "EFAULT, nothing run"),
    ("epoll_mod_wait.maxevents_bad", "epoll_mod_wait", "EINVAL, nothing run"),
    ("epoll_mod_wait.events_ptr_bad", "epoll_mod_wait",
     "EFAULT only when an event is stored (range checked first)"),
    ("epoll_mod_wait.spec_flags_bad", "epoll_mod_wait", "EINVAL, nothing run"),
    ("epoll_mod_wait.clockid_bad", "epoll_mod_wait", "EINVAL, nothing run; never accepted"),
    ("epoll_mod_wait.timeout_bad", "epoll_mod_wait", "EINVAL, nothing run; never accepted"),
    ("epoll_mod_wait.forever_with_timeout", "epoll_mod_wait", "EINVAL, nothing run"),
    ("epoll_mod_wait.forever", "epoll_mod_wait", "accepted; ends on the signal it lets in"),
    ("epoll_mod_wait.abstime", "epoll_mod_wait", "accepted; past or near deadlines"),
    ("epoll_mod_wait.sigmask_ptr_bad", "epoll_mod_wait", "EFAULT, nothing run"),
    ("epoll_mod_wait.sigsetsize_bad", "epoll_mod_wait", "EINVAL, nothing run"),
    ("epoll_mod_wait.sigmask_random", "epoll_mod_wait",
     "accepted; EINTR when it lets a pending signal in"),
    ("epoll_mod_wait.eintr", "epoll_mod_wait", "(EINTR returns seen)"),
    ("signals_sent", "tgkill", "(SIGUSR1 sent to the fuzzing threads)"),
]


def parse(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    d = {"class": {}, "fuzz": [], "stress": [], "summary": {}}
    for m in re.finditer(r"fuzz-class: (\S+) calls=(\d+)", text):
        d["class"][m.group(1)] = d["class"].get(m.group(1), 0) + int(m.group(2))
    for m in re.finditer(r"^[# ]*(fuzz: seed=.*)$", text, re.M):
        d["fuzz"].append(dict(re.findall(r"(\w+)=(\S+)", m.group(1))))
    for m in re.finditer(r"^[# ]*(stress: seed=.*)$", text, re.M):
        d["stress"].append(dict(re.findall(r"(\w+)=(\S+)", m.group(1))))
    for m in re.finditer(r"^# (\w+)=(.*)$", text, re.M):
        d["summary"][m.group(1)] = m.group(2)
    d["result"] = (re.search(r"^# result: (\S+)", text, re.M) or [None, "?"])[1]
    return d


def total(runs, key):
    return sum(int(r.get(key, 0)) for r in runs)


def main():
    results, bases = sys.argv[1], sys.argv[2:]
    data = {}
    for b in bases:
        try:
            data[b] = parse(f"{results}/{b}/stress.txt")
        except OSError:
            pass
    if not data:
        print("no stress results")
        return 0
    cols = list(data)
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        commit = subprocess.check_output(
            ["git", "-C", top, "rev-parse", "--short", "HEAD"],
            text=True).strip()
        if subprocess.call(["git", "-C", top, "diff", "--quiet", "HEAD"]):
            commit += "+dirty"
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    print(f"_make stress results of commit {commit}_")
    print()
    print("| bad-input class | call | documented result | "
          + " | ".join(f"calls on {b}" for b in cols) + " |")
    print("| --- | --- | --- | " + " | ".join("---:" for _ in cols) + " |")
    for name, call, doc in CLASSES:
        cells = [f"{data[b]['class'].get(name, 0):,}" for b in cols]
        print(f"| `{name.split('.', 1)[-1]}` | {call} | {doc} | " + " | ".join(cells) + " |")
    print()
    print("| totals | " + " | ".join(cols) + " |")
    print("| --- | " + " | ".join("---:" for _ in cols) + " |")
    rows = [
        ("fuzzer calls (epoll_ctl + epoll_mod_wait + epoll_wait)",
         lambda d: total(d["fuzz"], "calls")),
        ("  of them successful", lambda d: total(d["fuzz"], "ok")),
        ("batched commands run", lambda d: total(d["fuzz"], "cmds_run")),
        ("returned events checked (fuzzer)", lambda d: total(d["fuzz"], "events")),
        ("fuzzer violations", lambda d: total(d["fuzz"], "violations")),
        ("race stress: tokens written and each seen once",
         lambda d: total(d["stress"], "tokens")),
        ("race stress: eventfd counts balanced", lambda d: total(d["stress"], "eventfd")),
        ("race stress: channels closed under waiters", lambda d: total(d["stress"], "closes")),
        ("race stress: ADD / DEL", lambda d: f"{total(d['stress'], 'adds'):,} / {total(d['stress'], 'dels'):,}"),
        ("race stress: wakeups / events", lambda d: f"{total(d['stress'], 'wakeups'):,} / {total(d['stress'], 'events'):,}"),
        ("kmemleak: objects the job leaked", lambda d: d["summary"].get("kmemleak", "?")),
        ("kmemleak: older objects (boot's, not counted)",
         lambda d: d["summary"].get("kmemleak_boot", "?") or "?"),
        ("lockdep still armed (debug_locks)", lambda d: d["summary"].get("debug_locks", "?")),
        ("console splats", lambda d: d["summary"].get("splats", "?")),
        ("guest seconds", lambda d: d["summary"].get("seconds", "?")),
        ("result", lambda d: d["result"]),
    ]
    for label, fn in rows:
        vals = []
        for b in cols:
            v = fn(data[b])
            vals.append(f"{v:,}" if isinstance(v, int) else str(v))
        print(f"| {label} | " + " | ".join(vals) + " |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main())
