#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""status.py: is every result under results/ still current?

For every result file: the job that made it, the commit it ran at (as the
file itself says), and whether anything that job measures has changed
since: git diff between that commit and the work tree, over the paths the
job depends on (the JOBS table below).  A result is

  current   nothing the job depends on changed since its commit;
  STALE     something did (the first few paths are named);
  older     something did, and the file says so: its text marks the
            numbers as older ("Older numbers (marked at <commit>)"), and
            nothing the job depends on changed since that mark;
  unknown   the file names no commit, names one git does not have, or
            one with "+dirty" (it ran on uncommitted changes).

Every file under results/ must belong to a job; one that does not is
listed as "no job".

  scripts/status.py            print the table (make status); exit 0
  scripts/status.py --check    exit 1 if anything is not current
  scripts/status.py --markdown the table in Markdown
  scripts/status.py --readme   write the table into README.md's status
                               section (every run fails while README's
                               table differs from the computed one)
"""
import argparse
import fnmatch
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What every kernel-side job measures: the series and how it is built.
KERNEL = ["patches/{base}", "kernel-config/common.config",
          "kernel-config/x86_64.config", "kernel-config/arm64.config",
          "kernel-config/{base}.config", "kernel-config/{base}-x86_64.config",
          "scripts/kernel.sh", "scripts/bases/{base}.conf", "scripts/arch"]
# How every job builds, packs and boots a guest ...
GUEST = ["scripts/guest.sh", "scripts/guest-progs.sh", "scripts/lib.sh",
         "scripts/guest/init"]
# ... and what runs in it: the selftests job (make test, DEBUG=1, coverage,
# mutants, with the benchmarks' and nginx's smoke runs), the bench, nginx
# and stress jobs.
SELFTESTS_JOB = ["scripts/guest/run-selftests", "scripts/guest/retry-failed",
                 "scripts/guest/bench-smoke", "scripts/guest/nginx-run",
                 "scripts/nginx-pack.sh", "scripts/check-manifest.py"]
BENCH_JOB = ["scripts/guest/run-bench"]
NGINX_JOB = ["scripts/guest/nginx-run", "scripts/nginx-pack.sh"]
STRESS_JOB = ["scripts/guest/run-stress"]
TESTS = ["selftests", "include"]

# job: (result globs relative to results/, the file that names the commit,
# the paths it depends on).  {base} is expanded for per-base jobs.
JOBS = [
    ("bench {base}", ["{base}/report.md", "{base}/*.csv", "{base}/dist-*",
                      "{base}/wake-*", "{base}/profile-*",
                      "{base}/guest-output.txt", "{base}/kernel.config"],
     "{base}/report.md",
     KERNEL + GUEST + BENCH_JOB + ["bench", "scripts/bench.sh", "scripts/bench-report.py",
                       "kernel-config/bench.config",
                       "kernel-config/bench-{base}.config"]),
    ("nginx {base}", ["{base}/nginx*"], "{base}/nginx.md",
     KERNEL + GUEST + NGINX_JOB + ["bench/nginx", "scripts/bench-nginx.sh",
                       "scripts/nginx-report.py", "kernel-config/bench.config",
                       "kernel-config/bench-{base}.config"]),
    ("stress {base}", ["{base}/stress.txt"], "{base}/stress.txt",
     KERNEL + GUEST + STRESS_JOB + ["selftests/epoll_fuzz.c", "selftests/epoll_race_stress.c",
                       "scripts/stress.sh"]),
    ("stress", ["stress.md"], "stress.md",
     KERNEL + GUEST + STRESS_JOB + ["selftests/epoll_fuzz.c", "selftests/epoll_race_stress.c",
                       "scripts/stress.sh", "scripts/stress-report.py"]),
    ("coverage", ["coverage.md"], "coverage.md",
     KERNEL + GUEST + SELFTESTS_JOB + TESTS + ["scripts/coverage.sh",
                               "scripts/coverage-report.py",
                               "kernel-config/coverage.config"]),
    ("debug kernels", ["debug-leak.md", "debug-runs.tsv"], "debug-leak.md",
     KERNEL + GUEST + SELFTESTS_JOB + TESTS + ["scripts/test.sh", "kernel-config/debug.config",
                               "kernel-config/debug-{base}.config"]),
    ("mutants", ["mutants.md", "mutants/*"], "mutants.md",
     KERNEL + GUEST + SELFTESTS_JOB + TESTS + ["scripts/mutants.sh"]),
]

COMMIT_RE = re.compile(
    r"(?:commit|ran at|at)\b[^\n]{0,60}?\b((?=[0-9a-f]*[0-9])[0-9a-f]{7,40}"
    r"(?:\+dirty)?)(?![0-9a-z])")


# A result whose numbers are knowingly old says so in its text, naming the
# commit at which it was marked; it is "older" (not current, not silently
# stale) while nothing the job depends on has changed since that mark.
MARK_RE = re.compile(r"[Oo]lder numbers \(marked at ([0-9a-f]{7,40})\)")


def git(*args):
    return subprocess.run(["git", "-C", TOP, *args], capture_output=True,
                          text=True)


def bases():
    d = os.path.join(TOP, "scripts", "bases")
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith(".conf"))


def result_files():
    out = []
    for root, _, files in os.walk(os.path.join(TOP, "results")):
        for f in files:
            out.append(os.path.relpath(os.path.join(root, f),
                                       os.path.join(TOP, "results")))
    return sorted(out)


def read_result(path):
    try:
        with open(os.path.join(TOP, "results", path), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def commit_of(path):
    """The commit a result ran at (its "older numbers" mark aside)."""
    m = COMMIT_RE.search(MARK_RE.sub("", read_result(path)))
    return m.group(1) if m else None


def mark_of(path):
    m = MARK_RE.search(read_result(path))
    return m.group(1) if m else None


def changed_since(rev, deps):
    """None if rev is unusable, else the dependency paths changed since."""
    if rev.endswith("+dirty") or git("cat-file", "-e", rev + "^{commit}").returncode:
        return None
    existing = [d for d in deps if os.path.exists(os.path.join(TOP, d))]
    r = git("diff", "--name-only", rev, "--", *existing)
    changed = r.stdout.split()
    # untracked files that a job depends on count as changes too
    r = git("ls-files", "--others", "--exclude-standard", "--", *existing)
    return sorted(set(changed + r.stdout.split()))


def hash_text(text):
    r = subprocess.run(["git", "hash-object", "--stdin"], input=text,
                       capture_output=True, text=True, cwd=TOP)
    return r.stdout.strip()[:12]


def series_hash(base):
    """As scripts/mutants.sh: the code of the base's kernel patches (each
    from its first "diff --git" on), in series order."""
    d = os.path.join(TOP, "patches", base)
    out = []
    for name in open(os.path.join(d, "series")).read().split("\n"):
        name = name.strip()
        if not name or name.startswith("#"):
            continue
        text = open(os.path.join(d, name)).read()
        diffs = re.findall(r"^diff --git (\S+)", text, re.M)
        if diffs and all(x.startswith("a/tools/testing/selftests/") for x in diffs):
            continue
        m = re.search(r"^diff --git ", text, re.M)
        out.append(text[m.start():] if m else "")
    return hash_text("".join(out))


def mutant_hash(base, name):
    text = open(os.path.join(TOP, "selftests", "mutants", base,
                             name + ".patch")).read()
    m = re.search(r"^(diff|---|\+\+\+|@@) ", text, re.M)
    return hash_text(text[m.start():] if m else "")


def mutant_rows():
    """(current, total): mutants whose row still holds, of all mutants."""
    cur = tot = 0
    for base in bases():
        d = os.path.join(TOP, "selftests", "mutants", base)
        if not os.path.isdir(d):
            continue
        rows = {}
        tsv = os.path.join(TOP, "results", "mutants", base + ".tsv")
        if os.path.exists(tsv):
            for line in open(tsv):
                f = line.rstrip("\n").split("\t")
                if len(f) >= 8:
                    rows[f[0]] = f[7]
        sh = series_hash(base)
        for p in sorted(os.listdir(d)):
            if not p.endswith(".patch"):
                continue
            tot += 1
            name = p[:-6]
            if rows.get(name) == f"{mutant_hash(base, name)}:{sh}":
                cur += 1
    return cur, tot


def expand(jobs):
    """Per-base jobs once per base; a job over every base depends on the
    {base} paths of all of them."""
    for name, globs, primary, deps in jobs:
        if "{base}" in name:
            for b in bases():
                yield (name.format(base=b), [g.format(base=b) for g in globs],
                       primary.format(base=b), [d.format(base=b) for d in deps])
        else:
            alldeps = sorted({d.format(base=b) for d in deps for b in bases()})
            yield name, globs, primary, alldeps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every result is current")
    ap.add_argument("--markdown", action="store_true",
                    help="print the table in Markdown")
    ap.add_argument("--readme", action="store_true",
                    help="write the table into README.md's status section")
    args = ap.parse_args()

    files = result_files()
    claimed = set()
    rows = []
    for name, globs, primary, deps in expand(JOBS):
        mine = [f for f in files if any(fnmatch.fnmatch(f, g) for g in globs)]
        if not mine:
            continue
        claimed.update(mine)
        rev = commit_of(primary) if primary in mine else None
        if name == "mutants":
            # per row, by the hashes each row records (scripts/mutants.sh)
            cur, tot = mutant_rows()
            state = "current" if cur == tot else "STALE"
            why = f"{cur} of {tot} mutants have a current row"
        elif not rev:
            state, why = "unknown", f"{primary} names no commit"
        else:
            changed = changed_since(rev, deps)
            if changed is None:
                state, why = "unknown", f"{rev}: not a commit of this tree"
            elif changed and mark_of(primary) and \
                    changed_since(mark_of(primary), deps) == []:
                state = "older"
                why = f"marked at {mark_of(primary)} as numbers of {rev}, not rerun"
            elif changed:
                state = "STALE"
                why = "changed since: " + ", ".join(changed[:3]) + \
                      (f" (+{len(changed) - 3} more)" if len(changed) > 3 else "")
            else:
                state, why = "current", ""
        rows.append((name, primary if len(mine) == 1 else f"{primary} (+{len(mine) - 1})",
                     rev or "-", state, why))
    for f in files:
        if f not in claimed:
            rows.append(("no job", f, "-", "unknown", "no job claims this file"))

    head = git("rev-parse", "--short", "HEAD").stdout.strip()
    table = readme_table(rows)
    if args.readme:
        return write_readme(table)
    if args.markdown:
        print(f"Status of results/ at {head} (`make status`):\n")
        print("| job | result | ran at | state | why |")
        print("| --- | --- | --- | --- | --- |")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print(f"results/ at {head}:")
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        for r in rows:
            print("  ".join(r[i].ljust(w[i]) for i in range(4)) + "  " + r[4])
    bad = sum(r[3] != "current" for r in rows)
    print(f"{len(rows) - bad} current, {bad} not current", file=sys.stderr)
    # README's table says what this table says, or the run fails
    if readme_section() != table:
        print("README.md's status table is not this one: run "
              "scripts/status.py --readme and commit README.md",
              file=sys.stderr)
        return 1
    return 1 if args.check and bad else 0


# README.md's status table lies between these lines.  It carries no commit
# of its own (committing README.md changes HEAD, not what a job depends on),
# so it is the table of the commit that carries it.
README_BEGIN = "<!-- status:begin (generated by scripts/status.py --readme; do not edit) -->"
README_END = "<!-- status:end -->"


def readme_table(rows):
    out = ["| job | result | ran at | state | why |",
           "| --- | --- | --- | --- | --- |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def readme_section():
    text = read_top("README.md")
    if README_BEGIN not in text or README_END not in text:
        return None
    return text.split(README_BEGIN, 1)[1].split(README_END, 1)[0].lstrip("\n")


def read_top(path):
    try:
        with open(os.path.join(TOP, path)) as f:
            return f.read()
    except OSError:
        return ""


def write_readme(table):
    text = read_top("README.md")
    if README_BEGIN not in text or README_END not in text:
        print("README.md has no status section (" + README_BEGIN + ")",
              file=sys.stderr)
        return 1
    pre, rest = text.split(README_BEGIN, 1)
    post = rest.split(README_END, 1)[1]
    with open(os.path.join(TOP, "README.md"), "w") as f:
        f.write(pre + README_BEGIN + "\n" + table + README_END + post)
    print("README.md: status table written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
