#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""nginx-report.py LOG OUTDIR: the nginx scenario's report.

LOG is the output of scripts/guest/nginx-run (the guest's result channel,
or a host run of scripts/bench-nginx.sh host).  Writes OUTDIR/nginx.md
(tables per worker count: requests/s, latency, connections per worker,
system-wide context switches and task-clock, failed and reset
connections), nginx.csv, and one plot per worker count of the requests
each worker served per mode (nginx-dist-wN.png, gnuplot; its data in
nginx-dist-wN-RUN.dat).

Environment: NGINX_BASE, NGINX_ACCEL, NGINX_DATE, NGINX_KCONFIG,
NGINX_COMMIT (default: git rev-parse --short HEAD of this checkout),
NGINX_REQUIRE_ALL_MODES=1 (a mode the kernel refused is a failure: the
guests run the series).  Exits 1 when a run had a failed or reset
connection, a missing 200 or a dead worker.
"""

import csv
import os
import re
import subprocess
import sys

MODES = ["mutex", "exclusive", "rr", "reuseport", "all"]
MODE_DESC = {
    "mutex": "accept_mutex on",
    "exclusive": "EPOLLEXCLUSIVE (nginx default, accept_mutex off)",
    "rr": "EPOLLEXCLUSIVE | EPOLLROUNDROBIN (rr_preload.so)",
    "reuseport": "listen ... reuseport",
    "all": "wake-all (rr_preload.so strips EPOLLEXCLUSIVE)",
}
RUNS = ["closed", "rate", "stall"]


def git_commit():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        rev = subprocess.check_output(["git", "-C", top, "rev-parse", "--short",
                                       "HEAD"], text=True).strip()
        dirty = subprocess.call(["git", "-C", top, "diff", "--quiet", "HEAD"])
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def jain(xs):
    s = sum(xs)
    q = sum(x * x for x in xs)
    return (s * s) / (len(xs) * q) if xs and q else 0.0


def parse(path):
    meta = {}
    runs = {}
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(nginx-params|nginx-version|ab-version|perf-version|"
                         r"nginx-uname|nginx-cpus|guest-uname|guest-cpus): (.*)", line)
            if m and cur is None:
                meta[m.group(1)] = m.group(2)
                continue
            m = re.match(r"^=== nginx: mode=(\S+) workers=(\d+) run=(\S+)", line)
            if m:
                cur = {"mode": m.group(1), "workers": int(m.group(2)),
                       "run": m.group(3), "lines": [], "worker": {},
                       "status": {}, "perf": {}, "preload": []}
                continue
            if cur is None:
                continue
            m = re.match(r"^=== nginx-end: .* rc=(\d+)", line)
            if m:
                cur["rc"] = int(m.group(1))
                runs[(cur["workers"], cur["mode"], cur["run"])] = cur
                cur = None
                continue
            cur["lines"].append(line)
            m = re.match(r"^worker (\d+) (\d+)$", line)
            if m:
                cur["worker"][m.group(1)] = int(m.group(2))
            m = re.match(r"^status (\S+) (\d+)$", line)
            if m:
                cur["status"][m.group(1)] = int(m.group(2))
            m = re.match(r"^perf: ([0-9.]+),[^,]*,([a-z-]+),", line)
            if m:
                cur["perf"][m.group(2)] = float(m.group(1))
            if line.startswith("preload: "):
                cur["preload"].append(line[len("preload: "):].strip())
    for r in runs.values():
        analyse(r)
    return meta, runs


def analyse(r):
    text = "\n".join(r["lines"])
    r["alive"] = "alive: yes" in text
    r["unsupported"] = r.get("rc") == 4
    m = re.search(r"openloop-result: (.*)", text)
    if m:
        kv = dict(x.split("=", 1) for x in m.group(1).split())
        r["client"] = "openloop"
        r["rps"] = float(kv["achieved"])
        r["p50"] = int(kv["p50_us"]) / 1000
        r["p99"] = int(kv["p99_us"]) / 1000
        r["max"] = int(kv["max_us"]) / 1000
        r["requests"] = int(kv["sent"]) + int(kv["dropped"])
        r["ok"] = int(kv["ok"])
        r["failed"] = (int(kv["non200"]) + int(kv["connect_err"]) +
                       int(kv["timeout"]) + int(kv["dropped"]))
        r["reset"] = int(kv["reset"])
    elif "Complete requests:" in text:
        r["client"] = "ab"

        def num(pat, default=0.0):
            mm = re.search(pat, text)
            return float(mm.group(1)) if mm else default
        r["rps"] = num(r"Requests per second:\s+([0-9.]+)")
        r["requests"] = int(num(r"Complete requests:\s+(\d+)"))
        failed = int(num(r"Failed requests:\s+(\d+)"))
        non2xx = int(num(r"Non-2xx responses:\s+(\d+)"))
        r["reset"] = int(num(r"\(Connect: \d+, Receive: (\d+),"))
        r["failed"] = failed - r["reset"] + non2xx
        r["ok"] = r["requests"] - failed - non2xx
        r["p50"] = num(r"\n\s+50%\s+(\d+)", None)
        r["p99"] = num(r"\n\s+99%\s+(\d+)", None)
        r["max"] = num(r"\n\s+100%\s+(\d+)", None)
    counts = list(r["worker"].values())
    r["min"] = min(counts) if counts else None
    r["maxw"] = max(counts) if counts else None
    r["jain"] = jain(counts) if counts else None
    r["logged"] = sum(counts)
    r["status200"] = r["status"].get("200", 0)
    m = re.search(r"cpu-busy-ms: (\d+)", text)
    r["busy"] = int(m.group(1)) if m else None
    m = re.search(r"stall: stopped (\d+)", text)
    r["victim"] = m.group(1) if m else None


def fmt(v, digits=0):
    if v is None:
        return "n/a"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def table(runs, w, run):
    rows = []
    hdr = ("| mode | requests/s | p50 ms | p99 ms | max ms | conns/worker min | max | "
           "Jain | ctx switches | task-clock ms | CPU busy ms | failed | reset | 200s logged | workers alive |")
    rows.append(hdr)
    rows.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for mode in MODES:
        r = runs.get((w, mode, run))
        if r is None:
            continue
        if r["unsupported"]:
            rows.append(f"| {mode} | not supported by this kernel (epoll_ctl EINVAL) |" + " |" * 13)
            continue
        if "rps" not in r:
            rows.append(f"| {mode} | no result (rc={r.get('rc')}) |" + " |" * 13)
            continue
        p = r["perf"]
        rows.append("| " + " | ".join([
            mode, fmt(r["rps"], 1), fmt(r["p50"], 1), fmt(r["p99"], 1), fmt(r["max"], 1),
            fmt(r["min"]), fmt(r["maxw"]), fmt(r["jain"], 3),
            fmt(p.get("context-switches")), fmt(p.get("task-clock"), 1), fmt(r["busy"]),
            str(r["failed"]), str(r["reset"]),
            f"{r['status200']}/{r['requests']}", "yes" if r["alive"] else "**NO**",
        ]) + " |")
    return "\n".join(rows)


def plot(outdir, header, runs, w):
    dats = {}
    for run in RUNS:
        for mode in MODES:
            r = runs.get((w, mode, run))
            if not r or r["unsupported"] or not r["worker"]:
                continue
            dat = os.path.join(outdir, f"nginx-dist-w{w}-{run}-{mode}.dat")
            with open(dat, "w") as f:
                f.write(f"# {header}\n# {mode} {run}: rank requests pid (sorted by pid)\n")
                for i, (pid, n) in enumerate(sorted(r["worker"].items(),
                                                    key=lambda kv: int(kv[0]))):
                    mark = " stalled" if pid == r["victim"] else ""
                    f.write(f"{i + 1} {n} {pid}{mark}\n")
            dats.setdefault(run, []).append((mode, dat))
    if not dats:
        return None
    png = os.path.join(outdir, f"nginx-dist-w{w}.png")
    title = header.replace('"', "'")
    parts = [f"""set terminal pngcairo size 1200,420 noenhanced font ",9"
set output "{png}"
set multiplot layout 1,{len(dats)} title "requests per nginx worker, {w} workers: {title}"
set style data linespoints
set grid ytics
set yrange [0:*]
set xrange [0.5:{w}.5]
set xtics 1
set xlabel "worker (by pid; 1 is the one stalled in 'stall')"
set ylabel "requests"
set key top right
"""]
    for run in RUNS:
        if run not in dats:
            continue
        parts.append(f'set title "{run}"\nplot ' + ", ".join(
            f'"{dat}" using 1:2 title "{mode}" pt 7 ps 0.6' for mode, dat in dats[run]) + "\n")
    parts.append("unset multiplot\n")
    try:
        subprocess.run(["gnuplot"], input="".join(parts), text=True, check=False)
    except OSError:
        return None
    return os.path.basename(png) if os.path.exists(png) else None


def verdict(ok):
    return "met" if ok else "**not met**"


def goal_md(runs):
    """The scenario's goal, per worker count: round-robin
    spreads the accepts with Jain >= 0.99 where EPOLLEXCLUSIVE (nginx's
    default, with its reorder-every-16 workaround) falls short, keeps
    requests/s within 5 % of the best mode in the closed run, and its p99 in
    the stall run is no worse than reuseport's.  Shown as measured, met or
    not: a loss is reported, never hidden."""
    rows = ["| workers | Jain rr (closed / rate) | Jain exclusive (closed / rate) | "
            "Jain >= 0.99 | closed req/s: rr / best (mode) | within 5 % | "
            "stall p99 ms: rr / reuseport | p99 no worse |",
            "| ---: | ---: | ---: | --- | ---: | --- | ---: | --- |"]
    for w in sorted({k[0] for k in runs}):
        def get(mode, run):
            r = runs.get((w, mode, run))
            return None if not r or r["unsupported"] else r

        def jains(mode):
            vals = [get(mode, run) for run in ("closed", "rate")]
            return [r["jain"] if r else None for r in vals]
        jr, je = jains("rr"), jains("exclusive")
        jain_ok = all(v is not None and v >= 0.99 for v in jr)
        closed = {m: get(m, "closed") for m in MODES}
        best = max(((r["rps"], m) for m, r in closed.items() if r and r.get("rps")),
                   default=(None, None))
        rr_rps = closed["rr"]["rps"] if closed["rr"] else None
        rps_ok = bool(rr_rps and best[0] and rr_rps >= 0.95 * best[0])
        srr, srp = get("rr", "stall"), get("reuseport", "stall")
        p99_ok = bool(srr and srp and srr.get("p99") is not None and
                      srp.get("p99") is not None and srr["p99"] <= srp["p99"])
        ratio = f" ({rr_rps / best[0]:.3f})" if rr_rps and best[0] else ""
        rows.append(" | ".join([
            f"| {w}",
            " / ".join(fmt(v, 3) for v in jr),
            " / ".join(fmt(v, 3) for v in je),
            verdict(jain_ok),
            f"{fmt(rr_rps, 1)} / {fmt(best[0], 1)} ({best[1] or 'n/a'}){ratio}",
            verdict(rps_ok),
            f"{fmt(srr.get('p99') if srr else None, 1)} / "
            f"{fmt(srp.get('p99') if srp else None, 1)}",
            verdict(p99_ok)]) + " |")
    return "\n".join(rows)


def update_report(outdir, base, commit, goal):
    """Put the goal table and a link to nginx.md into make bench's
    report.md (if there is one), between markers, so a rerun replaces it."""
    path = os.path.join(outdir, "report.md")
    if not os.path.exists(path):
        return
    begin, end = "<!-- nginx: begin -->", "<!-- nginx: end -->"
    with open(path) as f:
        text = f.read()
    if begin in text and end in text:
        text = text[:text.index(begin)] + text[text.index(end) + len(end):].lstrip("\n")
    section = (f"{begin}\n## The nginx scenario\n\n"
               f"nginx with five ways of spreading accepts, commit {commit}; the "
               "tables, per-worker counts and plots are in [nginx.md](nginx.md).  "
               "Goal:\n\n" + goal + f"\n{end}\n")
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n\n" + section)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    log, outdir = sys.argv[1:]
    os.makedirs(outdir, exist_ok=True)
    meta, runs = parse(log)
    if not runs:
        print(f"{log}: no nginx runs", file=sys.stderr)
        return 1
    base = os.environ.get("NGINX_BASE", "host")
    commit = os.environ.get("NGINX_COMMIT") or git_commit()
    uname = meta.get("nginx-uname") or meta.get("guest-uname", "?")
    cpus = meta.get("nginx-cpus") or meta.get("guest-cpus", "?")
    accel = os.environ.get("NGINX_ACCEL", "none (host)")
    date = os.environ.get("NGINX_DATE", "")
    kconfig = os.environ.get("NGINX_KCONFIG", "the host's kernel")
    header = f"{base}, kernel {uname}, {cpus} CPUs, accel {accel}, commit {commit}"

    with open(os.path.join(outdir, "nginx.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["base", "kernel", "commit", "workers", "mode", "run", "client",
                     "requests", "ok", "requests_per_s", "p50_ms", "p99_ms", "max_ms",
                     "conns_min", "conns_max", "jain", "context_switches",
                     "task_clock_ms", "cpu_busy_ms", "cpu_migrations", "failed", "reset",
                     "status200_logged", "alive", "unsupported", "rc"])
        for (w, mode, run), r in sorted(runs.items(), key=lambda kv: (
                kv[0][0], MODES.index(kv[0][1]) if kv[0][1] in MODES else 99,
                RUNS.index(kv[0][2]) if kv[0][2] in RUNS else 99)):
            p = r["perf"]
            wr.writerow([base, uname, commit, w, mode, run, r.get("client", ""),
                         r.get("requests", ""), r.get("ok", ""), r.get("rps", ""),
                         r.get("p50", ""), r.get("p99", ""), r.get("max", ""),
                         r["min"], r["maxw"],
                         f"{r['jain']:.4f}" if r["jain"] is not None else "",
                         p.get("context-switches", ""), p.get("task-clock", ""),
                         r["busy"] if r["busy"] is not None else "", p.get("cpu-migrations", ""), r.get("failed", ""),
                         r.get("reset", ""), r["status200"], int(r["alive"]),
                         int(r["unsupported"]), r.get("rc", "")])

    params = dict(x.split("=", 1) for x in meta.get("nginx-params", "").split() if "=" in x)
    out = []
    out.append(f"# nginx under load: {base}\n")
    out.append(f"Base {base}, kernel `{uname}` ({kconfig}), {cpus} vCPUs, "
               f"accelerator {accel}{', ' + date if date else ''}; "
               f"**commit {commit}**.\n")
    out.append(f"- server: `{meta.get('nginx-version', '?')}` (Debian's nginx-light), "
               "one static file of "
               f"{params.get('file_bytes', '?')} bytes on 127.0.0.1, `keepalive_timeout 0`, "
               "`$pid` of every request logged to a tmpfs access log")
    out.append(f"- clients: `{meta.get('ab-version', '?')}` (apache2-utils) for the closed "
               f"loop, `ab -r -n {params.get('requests', '?')} -c {params.get('conc', '?')}` "
               "without `-k` (every request a new connection, so a new accept); "
               "`bench/nginx/openloop.c` for the fixed offered rate "
               f"({params.get('rate', '?')} req/s for {params.get('rate_secs', '?')} s, "
               "a new connection per request, latency from the scheduled start: "
               "neither wrk nor ab can offer a fixed rate, and wrk2 is not in Debian)")
    out.append(f"- `perf stat -a` around the client: {meta.get('perf-version', 'no perf')}; "
               "context switches are the whole machine's, client included; under `-a` "
               "task-clock is every CPU's whole run (CPUs x elapsed), so the CPU time "
               "actually spent is given as CPU busy ms, the non-idle time of /proc/stat "
               "over the run (10 ms ticks)")
    out.append("- runs: **closed** (ab), **rate** (open loop, below saturation), "
               f"**stall** (the same rate; the first worker SIGSTOPped from "
               f"{params.get('stall_at', '?')} s for {params.get('stall_secs', '?')} s)")
    out.append("- modes: " + "; ".join(f"**{m}** {MODE_DESC[m]}" for m in MODES))
    out.append("- latency: ab's are whole milliseconds (its percentile table); "
               "openloop's are microseconds, shown in ms. Failed = non-200, connect "
               "errors, timeouts; reset = connections reset by the server. Both must be 0.\n")
    bad = []
    # the guests run the series: there every mode must work
    require_all = os.environ.get("NGINX_REQUIRE_ALL_MODES", "0") == "1"
    for (w, mode, run), r in runs.items():
        if r["unsupported"]:
            if require_all:
                bad.append(f"{mode}/{w} workers/{run} (refused by the kernel)")
            continue
        if (r.get("failed") or r.get("reset") or not r["alive"] or r.get("rc")
                or r["status200"] != r.get("requests")):
            bad.append(f"{mode}/{w} workers/{run}")
    if bad:
        out.append("**Problems** (failed, reset, missing 200s, a dead worker or a "
                   "client error): " + ", ".join(bad) + "\n")
    else:
        out.append("Every request of every supported run got a 200 and every worker "
                   "survived; no failed or reset connection.\n")
    goal = goal_md(runs)
    out.append("## Goal\n")
    out.append("Round-robin: Jain >= 0.99 in the closed and the rate run; "
               "requests/s of the closed run within 5 % of the best mode's; "
               "p99 of the stall run no worse than reuseport's.\n")
    out.append(goal + "\n")
    for w in sorted({k[0] for k in runs}):
        out.append(f"## {w} workers on {cpus} CPUs\n")
        for run in RUNS:
            if not any((w, m, run) in runs for m in MODES):
                continue
            out.append(f"### {run}\n")
            out.append(table(runs, w, run) + "\n")
        png = plot(outdir, header, runs, w)
        if png:
            out.append(f"![requests per worker, {w} workers]({png})\n")
        # the raw per-worker counts, for the reader without the plot
        out.append("Requests per worker (by pid; `*` stalled):\n")
        for run in RUNS:
            for mode in MODES:
                r = runs.get((w, mode, run))
                if not r or r["unsupported"] or not r["worker"]:
                    continue
                counts = " ".join(f"{n}{'*' if pid == r['victim'] else ''}"
                                  for pid, n in sorted(r["worker"].items(),
                                                       key=lambda kv: int(kv[0])))
                out.append(f"- {run} {mode}: {counts}")
        out.append("")
    pre = sorted({p for r in runs.values() for p in r["preload"]})
    if pre:
        out.append("rr_preload.so's log lines (per kind, counted over all runs' workers):\n")
        out.append("```")
        out.extend(pre)
        out.append("```\n")
    with open(os.path.join(outdir, "nginx.md"), "w") as f:
        f.write("\n".join(out))
    print(f"wrote {outdir}/nginx.md ({len(runs)} runs)")
    update_report(outdir, base, commit, goal)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main())
