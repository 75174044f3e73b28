#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench-report.py RESULTS_LOG OUTDIR: turn the guest's bench output into
CSV files, a markdown report and gnuplot plots.

The guest output (scripts/guest/run-bench) frames every benchmark with
"=== bench|perf|dist|end: NAME" markers.  Every file written here starts
with (or, for CSV, carries in columns) the base, kernel release and
configuration, vCPUs, accelerator and date, so that a result cannot lose
its context.

The profiles come as gzip'd perf.data in base64 between "=== profile-data:
NAME" and "=== profile-end: NAME"; they are decoded into
$BENCH_PROFILE_DIR and reported with the host's perf against
$BENCH_VMLINUX (the guest has no symbol tables): profile-NAME.txt and
the top kernel symbols in report.md.
"""

import base64
import csv
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shown(path):
    """PATH as a result file may show it: relative to the checkout, never
    a path of the machine that ran it."""
    rel = os.path.relpath(os.path.abspath(path), TOP)
    return rel if not rel.startswith("../../") else os.path.basename(path)

PERF_EVENTS = ["task-clock", "context-switches", "cpu-migrations", "page-faults"]
MODES = ["all", "exclusive", "roundrobin"]


def parse(path):
    """Return (meta, sections, profiles): sections[name] = {bench, perf,
    dist, rc}; profiles[name] = the base64 lines of its gzip'd perf.data."""
    meta, sections, cur, part = {"vuln": []}, {}, None, None
    profiles, blob = {}, None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^=== profile-(data|end): (\S+)$", line)
            if m:
                blob = profiles.setdefault(m.group(2), []) \
                    if m.group(1) == "data" else None
                continue
            if blob is not None:
                blob.append(line)
                continue
            m = re.match(r"^guest-vuln: (.*)$", line)
            if m:
                meta["vuln"].append(m.group(1))
                continue
            m = re.match(r"^bench-profile: (.*)$", line)
            if m:
                meta["profile"] = m.group(1)
                continue
            m = re.match(r"^guest-(uname|cpus): (.*)$", line)
            if m:
                meta[m.group(1)] = m.group(2)
                continue
            m = re.match(r"^bench-params: (.*)$", line)
            if m:
                meta["params"] = m.group(1)
                continue
            m = re.match(r"^=== (bench|perf|dist|end): (\S+)(?: rc=(\d+))?$", line)
            if m:
                kind, name = m.group(1), m.group(2)
                sec = sections.setdefault(name, {"bench": [], "perf": [],
                                                 "dist": [], "rc": None})
                if kind == "end":
                    sec["rc"] = int(m.group(3))
                    cur = None
                else:
                    cur, part = sec, kind
                continue
            if cur is not None:
                cur[part].append(line)
    return meta, sections, profiles


def perf_values(lines):
    """perf stat -x, output: value,unit,event,... -> {event: float}."""
    vals = {}
    for line in lines:
        if not line or line.startswith("#"):
            continue
        cols = line.split(",")
        if len(cols) < 3:
            continue
        event = cols[2].split(":")[0]
        try:
            vals[event] = float(cols[0])
        except ValueError:
            vals[event] = None      # <not supported> / <not counted>
    return vals


def result_lines(lines, tag):
    """All "TAG: k=v ..." lines as dicts (one per perf stat repeat)."""
    out = []
    for line in lines:
        m = re.match(r"^%s: (.*)$" % re.escape(tag), line)
        if m:
            out.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
    return out


def mean_fields(rows):
    """Average numeric fields over repeats; keep the first value of others."""
    if not rows:
        return {}
    merged = {}
    for key in rows[0]:
        vals = [r.get(key) for r in rows]
        try:
            nums = [float(v) for v in vals]
            merged[key] = statistics.mean(nums)
        except (TypeError, ValueError):
            merged[key] = vals[0]
    return merged


def group_mean(rows, ident):
    """Mean of the numeric fields of the rows that share the @ident keys,
    in first-seen order, formatted back to strings."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in ident), []).append(r)
    out = []
    for case, rs in groups.items():
        m = mean_fields(rs)
        row = {k: (f"{v:.2f}" if isinstance(v, float) else v)
               for k, v in m.items()}
        row.update(dict(zip(ident, case)))
        row["runs"] = str(len(rs))
        out.append(row)
    return out


def fmt(v, digits=0):
    if v is None or v == "":
        return "n/a"
    if isinstance(v, str):
        return v
    return f"{v:,.{digits}f}"


def ratio(v, base):
    if v is None or not base:
        return "n/a"
    return f"{v / base:.3f}"


def git_commit():
    """Short commit of this checkout, "+dirty" if it has changes."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        rev = subprocess.check_output(["git", "-C", top, "rev-parse", "--short",
                                       "HEAD"], text=True).strip()
        # results/ is what this run writes: only the sources make it dirty
        dirty = subprocess.call(["git", "-C", top, "diff", "--quiet", "HEAD",
                                 "--", ".", ":(exclude)results"])
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# The benchmark's own tasks in a system-wide profile: modwait, and the
# io_uring workers it may punt to (iou-wrk-PID, iou-sqp-PID).
def is_workload(comm):
    return comm == "modwait" or comm.startswith("iou-")


def perf_report(data, vmlinux, txt):
    """perf report of one profile, by task and symbol, into TXT.
    Returns [(samples, comm, sym)] or raises RuntimeError."""
    cmd = ["perf", "report", "-i", data, "--vmlinux", vmlinux, "--stdio",
           "--sort", "comm,sym", "-n", "-t", "|"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise RuntimeError(f"perf report: {e}")
    with open(txt, "w") as f:
        f.write("# " + " ".join(f"'{c}'" if c == "|" else
                                shown(c) if c in (data, vmlinux) else c
                                for c in cmd) + "\n")
        f.write(p.stdout)
        if p.stderr.strip():
            f.write("# stderr:\n" + "".join("# " + l + "\n"
                                          for l in p.stderr.splitlines()))
    if p.returncode != 0:
        raise RuntimeError(f"perf report exited {p.returncode}: "
                           f"{p.stderr.strip().splitlines()[-1:]}")
    rows = []
    for line in p.stdout.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cols = [c.strip() for c in line.split("|")]
        if len(cols) < 4:
            continue
        try:
            rows.append((int(cols[1]), cols[2], cols[3]))
        except ValueError:
            continue
    return rows


def summarize_profile(rows, top=10):
    """Top kernel symbols of the workload's samples."""
    total = sum(n for n, c, _ in rows if is_workload(c))
    ksyms, kernel = {}, 0
    for n, c, sym in rows:
        if not is_workload(c) or not sym.startswith("[k]"):
            continue
        name = sym[3:].strip()
        ksyms[name] = ksyms.get(name, 0) + n
        kernel += n
    # a kernel sample that no vmlinux symbol covers shows as its address
    unresolved = sum(n for name, n in ksyms.items() if name.startswith("0x"))
    return {"total": total, "kernel": kernel, "unresolved": unresolved,
            "top": sorted(ksyms.items(), key=lambda kv: -kv[1])[:top]}


def do_profiles(profiles, outdir, header):
    """Decode, report and summarize every profile: {name: summary or
    {"error": text}}."""
    vmlinux = os.environ.get("BENCH_VMLINUX", "")
    pdir = os.environ.get("BENCH_PROFILE_DIR") or tempfile.mkdtemp()
    os.makedirs(pdir, exist_ok=True)
    out = {}
    for name, lines in profiles.items():
        data = os.path.join(pdir, f"{name}.data")
        try:
            raw = gzip.decompress(base64.b64decode("".join(lines)))
        except (ValueError, OSError, EOFError) as e:
            out[name] = {"error": f"could not decode the guest's data: {e}"}
            continue
        with open(data, "wb") as f:
            f.write(raw)
        if not os.path.isfile(vmlinux):
            out[name] = {"error": f"no vmlinux at '{vmlinux}' (BENCH_VMLINUX)"}
            continue
        txt = os.path.join(outdir, f"profile-{name}.txt")
        try:
            rows = perf_report(data, vmlinux, txt)
        except RuntimeError as e:
            out[name] = {"error": str(e)}
            continue
        with open(txt) as f:
            body = f.read()
        with open(txt, "w") as f:
            f.write(f"# {header}\n# profile {name}: {len(raw)} bytes of "
                    f"perf.data, symbols from {shown(vmlinux)}\n" + body)
        summ = summarize_profile(rows)
        if not summ["total"]:
            summ["error"] = "no samples of the benchmark's tasks"
        elif summ["unresolved"] * 2 > summ["kernel"]:
            summ["error"] = (f"{summ['unresolved']} of {summ['kernel']} "
                             "kernel samples match no symbol of the vmlinux "
                             "(not the kernel that ran?)")
        out[name] = summ
    return out


def profile_md(prof, meta):
    """report.md section: per N, the top kernel symbols of each method."""
    md = ["## Profiles: where the batching benchmark's time goes", "",
          "`perf record -e cpu-clock -a` in the guest "
          f"({meta.get('profile', '')}), of one `modwait -n N -u` run per N, "
          "split into one profile per method at the end of each case; "
          "kernel symbols resolved on the host against the bench kernel's "
          "vmlinux (`perf report --vmlinux ... --sort comm,sym`, full "
          "output in `profile-*.txt`).  Shares are of the samples of the "
          "benchmark's own tasks (modwait and any io_uring worker), user "
          "space included; idle and other tasks are left out.", ""]
    by_n = {}
    for name in prof:
        m = re.match(r"^modwait-n(\d+)-(\S+)$", name)
        n, method = (m.group(1), m.group(2)) if m else ("?", name)
        by_n.setdefault(n, []).append((method, name))
    for n in sorted(by_n, key=lambda v: int(v) if v.isdigit() else 0):
        cols = by_n[n]
        md += [f"### N = {n}", "",
               "| | " + " | ".join(m for m, _ in cols) + " |",
               "| ---: | " + " | ".join("---" for _ in cols) + " |"]
        cells = []
        for _, name in cols:
            p = prof[name]
            if p.get("error") and not p.get("total"):
                cells.append(f"**failed:** {p['error']}")
            else:
                cells.append(f"{p['total']} samples, kernel "
                             f"{100.0 * p['kernel'] / p['total']:.1f}%")
        md.append("| samples | " + " | ".join(cells) + " |")
        for i in range(10):
            row = []
            for _, name in cols:
                top = prof[name].get("top") or []
                if i < len(top):
                    sym, cnt = top[i]
                    row.append(f"`{sym}` {100.0 * cnt / prof[name]['total']:.1f}%")
                else:
                    row.append("")
            md.append(f"| {i + 1} | " + " | ".join(row) + " |")
        md.append("")
    return md


def main():
    log, outdir = sys.argv[1], sys.argv[2]
    base = os.environ.get("BENCH_BASE", "?")
    accel = os.environ.get("BENCH_ACCEL", "?")
    date = os.environ.get("BENCH_DATE", "?")
    source = os.environ.get("BENCH_SOURCE_VERSION", "?")
    kconfig = os.environ.get("BENCH_KCONFIG", "?")
    meta, sections, profiles = parse(log)
    os.makedirs(outdir, exist_ok=True)
    ctx = {"base": base, "uname": meta.get("uname", "?"),
           "kconfig": kconfig.split(" (")[0],
           "vcpus": meta.get("cpus", "?"), "accel": accel, "date": date}
    # The series' commit: a number is only good for the build it came from.
    commit = os.environ.get("BENCH_COMMIT") or git_commit()
    header = (f"base {base} ({source}), kernel {ctx['uname']} "
              f"({ctx['kconfig']}), "
              f"{ctx['vcpus']} vCPUs, {accel.upper()}, {date}; "
              f"commit {commit}; {meta.get('params', '')}")
    failed = [n for n, s in sections.items() if s["rc"] != 0]
    prof = do_profiles(profiles, outdir, header)
    failed += [f"profile {n} ({p['error']})" for n, p in prof.items()
               if p.get("error")]
    # profiles asked for (bench-profile: nfds=1 8 ...) but none came back
    if re.match(r"nfds=\S", meta.get("profile", "")) and not profiles:
        failed.append("profiles (none came back)")

    # --- wake -----------------------------------------------------------
    wake = {}
    for name, sec in sections.items():
        m = re.match(r"^wake-(\w+)-(\w+)$", name)
        if not m:
            continue
        src, mode = m.group(1), m.group(2)
        row = mean_fields(result_lines(sec["bench"], "wake-result"))
        row.update({"perf": perf_values(sec["perf"]), "dist": sec["dist"],
                    "rc": sec["rc"]})
        wake[(src, mode)] = row
        with open(os.path.join(outdir, f"dist-{src}-{mode}.dat"), "w") as f:
            f.write(f"# {header}\n# thread consumed wakeups ({src}, {mode})\n")
            f.write("\n".join(sec["dist"]) + "\n")

    wake_keys = ["threads", "events", "consumed", "lost", "wakeups", "wasted",
                 "extra_per_event", "never_woken", "min", "max", "jain",
                 "elapsed_s"]
    with open(os.path.join(outdir, "wake.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(ctx) + ["source", "mode"] +
                   [e.replace("-", "_") for e in PERF_EVENTS] + wake_keys + ["rc"])
        for (src, mode), row in sorted(wake.items()):
            w.writerow(list(ctx.values()) + [src, mode] +
                       [row["perf"].get(e) for e in PERF_EVENTS] +
                       [row.get(k) for k in wake_keys] + [row["rc"]])

    # --- modwait / timeout ------------------------------------------------
    modwait_runs = result_lines(sections.get("modwait", {}).get("bench", []),
                                "modwait-result")
    timeout_runs = result_lines(sections.get("timeout", {}).get("bench", []),
                                "timeout-result")
    # perf stat -r repeats the whole program: one row per case and run in
    # the CSV, the mean over runs in the report
    for fname, rows, ident in (("modwait.csv", modwait_runs, ("method", "nfds")),
                               ("timeout.csv", timeout_runs,
                                ("call", "clock", "request_us"))):
        with open(os.path.join(outdir, fname), "w", newline="") as f:
            if not rows:
                continue
            w = csv.writer(f)
            keys = list(rows[0])
            w.writerow(list(ctx) + ["run"] + keys)
            seen = {}
            for r in rows:
                case = tuple(r.get(k) for k in ident)
                seen[case] = seen.get(case, 0) + 1
                w.writerow(list(ctx.values()) + [seen[case]] +
                           [r.get(k) for k in keys])
    modwait = group_mean(modwait_runs, ("method", "nfds"))
    timeout = group_mean(timeout_runs, ("call", "clock", "request_us"))

    # --- rr_join: the cost of the n-th ADD to one source --------------------
    join_lines = sections.get("rr_join", {}).get("bench", [])
    join_runs = result_lines(join_lines, "rr-join-result")
    join_buckets = result_lines(join_lines, "rr-join-bucket")
    if join_runs:
        with open(os.path.join(outdir, "rr_join.csv"), "w", newline="") as f:
            w = csv.writer(f)
            keys = list(join_runs[0])
            w.writerow(list(ctx) + ["run"] + keys)
            seen = {}
            for r in join_runs:
                seen[r["mode"]] = seen.get(r["mode"], 0) + 1
                w.writerow(list(ctx.values()) + [seen[r["mode"]]] +
                           [r.get(k) for k in keys])
    join = group_mean(join_runs, ("mode",))

    # --- report.md ----------------------------------------------------------
    md = [f"# epoll series benchmarks: {base}", "", f"_{header}_", ""]
    if failed:
        md += [f"**Failed runs: {', '.join(sorted(failed))}**", ""]
    md += ["## Kernel", "",
           f"`{ctx['uname']}`, built with the {kconfig}; its .config is "
           "`kernel.config`.  Like a distribution's kernel (Debian 12's "
           "values, see the fragments' comments): SLUB, HZ=250, "
           "PREEMPT_VOLUNTARY, -O2 and, on 6.12, Debian's CPU "
           "vulnerability mitigations and hardening.", ""]
    if meta["vuln"]:
        md += ["CPU vulnerability mitigations in effect in the guest "
               "(/sys/devices/system/cpu/vulnerabilities; they depend on "
               "the CPU QEMU emulates):", "",
               "| vulnerability | state |", "| --- | --- |"]
        md += [f"| {v.split(': ', 1)[0]} | {v.split(': ', 1)[-1]} |"
               for v in meta["vuln"]]
        md.append("")
    for src in sorted({s for s, _ in wake}):
        rows = {mode: wake.get((src, mode)) for mode in MODES}
        allrow = rows.get("all") or {}
        md += [f"## Wake modes, {src} source", "",
               "Ratios are against wake-all (lower is better for the costs).", "",
               "| | wake all | exclusive | ratio | round-robin | ratio |",
               "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for ev, label, digits in (("task-clock", "task-clock (msec)", 1),
                                  ("context-switches", "context-switches", 0),
                                  ("cpu-migrations", "cpu-migrations", 0),
                                  ("page-faults", "page-faults", 0)):
            b = (allrow.get("perf") or {}).get(ev)
            cells = [fmt(b, digits)]
            for mode in ("exclusive", "roundrobin"):
                v = ((rows.get(mode) or {}).get("perf") or {}).get(ev)
                cells += [fmt(v, digits), ratio(v, b)]
            md.append(f"| {label} | " + " | ".join(cells) + " |")
        for key, label, digits in (("elapsed_s", "elapsed (s)", 3),
                                   ("wakeups", "wakeups", 0),
                                   ("extra_per_event", "extra wakeups / event", 3),
                                   ("never_woken", "threads never woken", 0),
                                   ("min", "min events / thread", 0),
                                   ("max", "max events / thread", 0),
                                   ("jain", "Jain fairness", 3),
                                   ("lost", "lost events", 0)):
            cells = []
            for mode in MODES:
                v = (rows.get(mode) or {}).get(key)
                cells.append(fmt(v, digits))
                if mode != "all":
                    cells.append("")
            md.append(f"| {label} | " + " | ".join(cells) + " |")
        md += ["", f"![wake modes, {src}](wake-{src}.png)",
               f"![per-thread distribution, {src}](dist-{src}.png)", ""]
    if modwait:
        md += modwait_md(modwait, modwait_runs)
    if timeout:
        md += ["## Timeout overshoot (actual - requested)", "",
               f"Mean over {timeout[0]['runs']} runs of the per-run median and p99.", "",
               "| call | clock | request | median over | p99 over |",
               "| --- | --- | ---: | ---: | ---: |"]
        for r in timeout:
            md.append(f"| {r['call']} | {r['clock']} | {r['request_us']} us | "
                      f"{r['median_over_us']} us | {r['p99_over_us']} us |")
        md.append("")
    if join:
        md += rr_join_md(join, join_buckets)
    if prof:
        md += profile_md(prof, meta)
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(md))

    plot(outdir, header, wake)
    return 1 if failed else 0


def rr_join_md(join, buckets):
    """bench/rr_join: mean ns per ADD in the first and the last bucket of
    ADDs to one source, per mode (mean over the perf stat runs)."""
    md = ["## Joining: the n-th ADD to one source (bench/rr_join)", "",
          "One thread adds one eventfd to n epoll instances in turn; each "
          "ADD is timed alone.  A round-robin ADD walks the source's whole "
          "wait queue (the join rule), so its cost grows with n; the last "
          "column is the longest single ADD, i.e. the longest the queue's "
          f"lock was held with interrupts off.  Mean over {join[0]['runs']} "
          "runs.", "",
          "| mode | n | first bucket, ns/ADD | last bucket, ns/ADD | last / first | all n ADDs, ms | longest ADD, us |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in sorted(join, key=lambda r: r["mode"]):
        first, last = float(r["first_bucket_ns"]), float(r["last_bucket_ns"])
        md.append(f"| {r['mode']} | {float(r['n']):.0f} | {first:,.0f} | "
                  f"{last:,.0f} | {last / first if first else 0:.1f}x | "
                  f"{float(r['total_ns']) / 1e6:,.1f} | "
                  f"{float(r['max_ns']) / 1e3:,.1f} |")
    md.append("")
    return md


# The targets: epoll_mod_wait against the epoll_ctl loop + wait
MODWAIT_TARGETS = {"1": 1.0, "8": 1.5, "64": 2.0}


def run_ratios(runs):
    """Per-run ratio of each (method, nfds) to the ctl loop of the same
    run: perf stat -r repeats the whole program, so run k of every case
    ran back to back."""
    ops, seen = {}, {}
    for r in runs:
        case = (r.get("method"), r.get("nfds"))
        seen[case] = seen.get(case, 0) + 1
        ops[case + (seen[case],)] = float(r["ops_per_s"])
    out = {}
    for (method, nfds, k), v in ops.items():
        base = ops.get(("ctl", nfds, k))
        if base:
            out.setdefault((method, nfds), []).append(v / base)
    return out


def spread(vals, fmtstr):
    return (f"{fmtstr.format(min(vals))}-{fmtstr.format(max(vals))}"
            if vals else "n/a")


def modwait_md(modwait, runs):
    ratios = run_ratios(runs)
    ops = {}
    for r in runs:
        ops.setdefault((r.get("method"), r.get("nfds")), []).append(
            float(r["ops_per_s"]))
    md = ["## Batching: epoll_ctl loop vs epoll_mod_wait", "",
          f"Mean of {modwait[0]['runs']} runs, with the lowest and highest "
          "run; the ratio is taken per run against the ctl loop of the "
          "same run, then averaged.", "",
          "| fds changed | method | ops/s | ops/s range | syscalls / iteration "
          "| ratio vs ctl loop | ratio range |",
          "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in modwait:
        case = (r["method"], r["nfds"])
        rs = ratios.get(case, [])
        mean = f"{statistics.mean(rs):.3f}" if rs else "n/a"
        md.append(f"| {r['nfds']} | {r['method']} | "
                  f"{float(r['ops_per_s']):,.0f} | "
                  f"{spread(ops.get(case, []), '{:,.0f}')} | "
                  f"{r['syscalls_per_iter']} | {mean} | "
                  f"{spread(rs, '{:.3f}')} |")
    md += ["", "Targets: epoll_mod_wait at least the given ratio "
           "to the ctl loop, and, where io_uring ran, at least io_uring's. "
           "\"met\" uses the mean; \"short by\" is target minus mean.", "",
           "| fds changed | target | modwait ratio | met | io_uring ratio "
           "| modwait >= io_uring |",
           "| ---: | ---: | ---: | --- | ---: | --- |"]
    for nfds, target in MODWAIT_TARGETS.items():
        rs = ratios.get(("modwait", nfds))
        if not rs:
            continue
        mean = statistics.mean(rs)
        met = ("yes" if mean >= target else
               f"no, short by {target - mean:.3f}")
        us = ratios.get(("uring", nfds))
        if us:
            umean = statistics.mean(us)
            uring, beats = f"{umean:.3f}", "yes" if mean >= umean else "no"
        else:
            uring, beats = "not run", "n/a"
        md.append(f"| {nfds} | {target:.1f} | {mean:.3f} "
                  f"({spread(rs, '{:.3f}')}) | {met} | {uring} | {beats} |")
    md.append("")
    return md


def wide_range(values, factor=10):
    """True when the positive values span more than FACTOR (or some are 0
    next to positive ones): a linear axis would hide the small ones."""
    pos = [v for v in values if v > 0]
    if not pos:
        return False
    return max(pos) / min(pos) > factor or len(pos) < len(values)


def axis(log, label):
    """gnuplot lines for a y axis, logarithmic when LOG; on a log axis a 0
    cannot be drawn, so the using-expression shows it at 0.5 and says so."""
    if not log:
        return f'set ylabel "{label}"\nunset logscale y\nset yrange [0:*]\n'
    return (f'set ylabel "{label} (log scale; 0 drawn at 0.5)"\n'
            'set logscale y\nset yrange [0.4:*]\n')


def ycol(col, log):
    return f"(${col} > 0 ? ${col} : 0.5)" if log else col


def plot(outdir, header, wake):
    """Per-mode bars and per-thread distributions, one pair per source.
    Values that span orders of magnitude (wake-all's and exclusive's
    context switches or per-thread counts next to round-robin's) go on a
    log axis, or the small ones are invisible."""
    for src in sorted({s for s, _ in wake}):
        dat = os.path.join(outdir, f"wake-{src}.dat")
        tclk, csw = [], []
        with open(dat, "w") as f:
            f.write(f"# {header}\n# mode task_clock_ms context_switches\n")
            for mode in MODES:
                row = wake.get((src, mode)) or {}
                p = row.get("perf") or {}
                tclk.append(float(p.get("task-clock") or 0))
                csw.append(float(p.get("context-switches") or 0))
                f.write(f"{mode} {p.get('task-clock') or 0} "
                        f"{p.get('context-switches') or 0}\n")
        per_thread = []
        for mode in MODES:
            for line in (wake.get((src, mode)) or {}).get("dist") or []:
                f = line.split()
                if len(f) >= 2:
                    try:
                        per_thread.append(float(f[1]))
                    except ValueError:
                        pass
        log_csw, log_tclk = wide_range(csw), wide_range(tclk)
        log_dist = wide_range(per_thread)
        title = header.replace('"', "'").split(";")[0].split("), ", 1)[-1]
        title = f"{src} source, {title}"
        script = f"""
set terminal pngcairo size 900,420 noenhanced font ",10"
set output "{outdir}/wake-{src}.png"
set multiplot layout 1,2 title "{title}"
set style data histograms
set style fill solid 0.7 border -1
set boxwidth 0.7
set grid ytics
set title "context switches"
{axis(log_csw, "context switches")}
plot "{dat}" using {ycol(3, log_csw)}:xtic(1) notitle lc rgb "#4477aa"
set title "task-clock (ms)"
{axis(log_tclk, "ms")}
plot "{dat}" using {ycol(2, log_tclk)}:xtic(1) notitle lc rgb "#cc6677"
unset multiplot
set output "{outdir}/dist-{src}.png"
set title "events consumed per thread: {title}"
set style data linespoints
set xlabel "thread"
{axis(log_dist, "events consumed")}
plot """ + ", ".join(
            f'"{outdir}/dist-{src}-{mode}.dat" using 1:{ycol(2, log_dist)} '
            f'title "{mode}" pt 7 ps 0.5'
            for mode in MODES) + "\n"
        subprocess.run(["gnuplot"], input=script, text=True, check=False)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main())
