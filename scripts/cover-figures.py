#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""cover-figures.py [--wake|--check] [RESULTS]: the epoll_mod_wait figures of the
cover letters (covers/<base>/cover-modwait.txt), or with --wake the wake
mode tables of covers/<base>/cover-roundrobin.txt, in the letters'
plain-text layout (wake.csv gives means over the perf stat -r runs), computed from RESULTS/<base>/modwait.csv and timeout.csv (default
results/) of make bench.  Paste its output into the letters' Results
section after every make bench that is to be posted, so that a letter
never quotes a number that results/ does not hold.

With --check, fail unless every table line of both modes is in each
base's letter and each letter names the commit the figures ran at
(make check-patches runs it), so that a letter cannot quote numbers that
results/ no longer holds.

Ratios are taken per run against the ctl loop of the same run, then
averaged (as bench-report.py does); the range is the lowest and highest
run.
"""

import csv
import os
import re
import statistics
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def all_bases():
    """(base, label) of every scripts/bases/*.conf, in BASE_ORDER order;
    the label is the base's name without a leading "v"."""
    out = []
    for f in os.listdir(os.path.join(TOP, "scripts", "bases")):
        if not f.endswith(".conf"):
            continue
        order = 0
        with open(os.path.join(TOP, "scripts", "bases", f)) as conf:
            m = re.search(r"^BASE_ORDER=(\d+)", conf.read(), re.M)
            order = int(m.group(1)) if m else 0
        out.append((order, f[:-5]))
    return [(b, b[1:] if b.startswith("v") else b) for _, b in sorted(out)]


BASES = all_bases()
NS = [1, 8, 64]


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def commit_of(results, base):
    with open(os.path.join(results, base, "report.md")) as f:
        m = re.search(r"commit (\S+?)[;_ ]", f.read())
    return m.group(1) if m else "?"


def ratios(rows, method, n):
    by_run = {}
    for r in rows:
        if int(r["nfds"]) == n:
            by_run.setdefault(r["run"], {})[r["method"]] = float(r["ops_per_s"])
    vals = [d[method] / d["ctl"] for d in by_run.values() if method in d and "ctl" in d]
    return vals


def mean_cell(vals):
    return f"{statistics.mean(vals):.3f}" if vals else "-"


def range_cell(vals):
    return f"{min(vals):.2f}-{max(vals):.2f}" if vals else ""


def wake(results):
    print(f"{'':22}{'ctx switches':16}{'task-clock':16}Jain fairness")
    print(f"{'kernel  source':22}{'excl    RR':16}{'excl    RR':16}all    excl   RR")
    per_thread = []
    for base, label in BASES:
        rows = read(os.path.join(results, base, "wake.csv"))
        for src, name in (("pipe", "pipe"), ("eventfd", "eventfd"), ("tcp", "tcp accept")):
            m = {r["mode"]: r for r in rows if r["source"] == src}
            if not all(k in m for k in ("all", "exclusive", "roundrobin")):
                continue
            rel = lambda k, mode: float(m[mode][k]) / float(m["all"][k])
            print(f"{label:8}{name:14}"
                  f"{rel('context_switches', 'exclusive'):<8.3f}{rel('context_switches', 'roundrobin'):<8.3f}"
                  f"{rel('task_clock', 'exclusive'):<8.3f}{rel('task_clock', 'roundrobin'):<8.3f}"
                  f"{float(m['all']['jain']):<7.3f}{float(m['exclusive']['jain']):<7.3f}"
                  f"{float(m['roundrobin']['jain']):.3f}")
            per_thread.append((label, name, m))
    print()
    print("Events per thread (mean over the runs):")
    print()
    print(f"{'':22}{'exclusive':26}round-robin")
    print(f"{'kernel  source':22}{'never woken  max':26}min    max")
    for label, name, m in per_thread:
        e, r = m["exclusive"], m["roundrobin"]
        print(f"{label:8}{name:14}{float(e['never_woken']):<13.0f}{float(e['max']):<13,.0f}"
              f"{float(r['min']):<7.0f}{float(r['max']):,.0f}")
    cs = [float(m[k]["context_switches"]) for _, _, m in per_thread for k in ("all",)]
    ce = [float(m[k]["context_switches"]) for _, _, m in per_thread for k in ("exclusive", "roundrobin")]
    tc = [float(m["roundrobin"]["task_clock"]) / float(m["exclusive"]["task_clock"]) - 1
          for _, _, m in per_thread]
    lost = sum(float(m[k]["lost"]) for _, _, m in per_thread for k in m)
    print()
    print(f"wake-all context switches {min(cs):,.0f}-{max(cs):,.0f}; exclusive and RR "
          f"{min(ce):,.0f}-{max(ce):,.0f}; RR task-clock vs exclusive "
          f"{min(tc) * 100:+.0f}% to {max(tc) * 100:+.0f}%; lost events {lost:.0f}")
    print("runs: " + ", ".join(f"{label} commit {commit_of(results, base)}" for base, label in BASES))
    return 0


def check(results):
    """Every table line the two modes print is in each base's letter, and
    each letter names the commit the figures ran at.  Exit status 1 (and
    the lines) where a letter and results/ disagree."""
    import contextlib
    import io

    bad = 0
    for fn, topic in ((modwait, "modwait"), (wake, "roundrobin")):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            fn(results)
        out = buf.getvalue().splitlines()
        rows = [l.rstrip() for l in out if "  " in l.strip()]
        commits = sorted({c for l in out if l.startswith("runs: ")
                          for c in re.findall(r"commit ([0-9a-f]{7,40}(?:\+dirty)?)", l)})
        for base, _ in BASES:
            path = os.path.join(TOP, "covers", base, f"cover-{topic}.txt")
            try:
                text = open(path).read()
            except OSError:
                print(f"{path}: missing")
                bad = 1
                continue
            lines = {l.rstrip() for l in text.splitlines()}
            missing = [r for r in rows if r not in lines]
            for r in missing:
                print(f"covers/{base}/cover-{topic}.txt lacks: {r}")
            unnamed = [c for c in commits if c not in text]
            for c in unnamed:
                print(f"covers/{base}/cover-{topic}.txt does not name commit {c}, "
                      "at which results/ ran")
            if missing or unnamed:
                bad = 1
            else:
                print(f"covers/{base}/cover-{topic}.txt: {len(rows)} table lines "
                      f"and the commit ({', '.join(commits)}) match results/")
    return bad


def main():
    args = sys.argv[1:]
    if args and args[0] == "--check":
        return check(args[1] if len(args) > 1 else os.path.join(TOP, "results"))
    if args and args[0] == "--wake":
        return wake(args[1] if len(args) > 1 else "results")
    return modwait(args[0] if args else "results")


def modwait(results):
    print(f"{'':26}" + "".join(f"{'N = ' + str(n):13}" for n in NS).rstrip())
    loops = []
    for base, label in BASES:
        rows = read(os.path.join(results, base, "modwait.csv"))
        runs = len({r["run"] for r in rows})
        methods = [("epoll_mod_wait", "modwait")]
        if any(r["method"] == "uring" for r in rows):
            methods.append(("io_uring EPOLL_CTL", "uring"))
        for name, method in methods:
            vals = [ratios(rows, method, n) for n in NS]
            print(f"{label:5} {name:20}" + "".join(f"{mean_cell(v):13}" for v in vals).rstrip())
            print(f"{'':8}{'run range':18}" + "".join(f"{range_cell(v):13}" for v in vals).rstrip())
        loop = [statistics.mean(float(r["ops_per_s"]) for r in rows
                                if r["method"] == "ctl" and int(r["nfds"]) == n)
                for n in NS]
        loops.append((label, loop, runs, commit_of(results, base)))
    print("mean of the per-run ratios (lowest-highest run)")
    print("syscalls per iteration: loop N + 1, epoll_mod_wait 1, io_uring 2")
    print("loop, ops/s: " + ";\n             ".join(
        f"{label} " + " / ".join(f"{v:,.0f}" for v in loop) for label, loop, _, _ in loops))
    print("runs: " + ", ".join(f"{label} {runs} (commit {c})" for label, _, runs, c in loops))
    print()
    print("Timeout overshoot at a 50 us request, median / p99 in us (mean over runs):")
    print()
    calls = [("epoll_wait (1 ms units)", "epoll_wait", "monotonic"),
             ("epoll_pwait2", "epoll_pwait2", "monotonic"),
             ("epoll_mod_wait, MONOTONIC", "epoll_mod_wait", "monotonic"),
             ("epoll_mod_wait, REALTIME", "epoll_mod_wait", "realtime"),
             ("epoll_mod_wait, BOOTTIME", "epoll_mod_wait", "boottime")]
    tables = {b: read(os.path.join(results, b, "timeout.csv")) for b, _ in BASES}
    print(f"{'':31}" + "".join(f"{label:17}" for _, label in BASES).rstrip())
    samples = set()
    for name, call, clock in calls:
        cells = []
        for b, _ in BASES:
            rows = [r for r in tables[b] if r["call"] == call and r["clock"] == clock
                    and int(float(r["request_us"])) == 50]
            if not rows:
                cells.append("ENOSYS")
                continue
            samples.update(r["samples"] for r in rows)
            med = statistics.mean(float(r["median_over_us"]) for r in rows)
            p99 = statistics.mean(float(r["p99_over_us"]) for r in rows)
            cells.append(f"+{med:.0f} / +{p99:.0f}")
        print(f"{name:31}" + "".join(f"{c:17}" for c in cells).rstrip())
    print(f"samples per run: {', '.join(sorted(samples))}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main())
