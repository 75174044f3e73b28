#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""coverage-report.py: which of the lines a series adds ran in the guest.

Usage: coverage-report.py BASE SRC OBJ GCDA_DIR SERIES_DIR REASONS OUT_MD OUT_JSON
       (COVERAGE_OBJS and COVERAGE_PATCHES from the environment)

The lines counted are the series' own: each line of the patched tree is
attributed to the patch that last wrote it (git blame over one commit per
patch, rebuilt from quilt's .pc backups), and only lines of the patches
that COVERAGE_PATCHES selects count.  Executable means gcov lists the line
for one of the profiled objects (COVERAGE_OBJS); a line the compiler emitted
no code for (a declaration, a brace, a comment, code configured out) is not
counted, and the report says so.  A line that never ran is listed, with its
reason from REASONS when it has one.
"""

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile

GOAL = 95.0


def series_patches(series_dir):
    out = []
    with open(os.path.join(series_dir, "series")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(line.split()[0])
    return out


def touched_files(patch_path):
    files = []
    with open(patch_path, errors="replace") as f:
        for line in f:
            if line.startswith("+++ ") or line.startswith("--- "):
                p = line[4:].strip().split("\t")[0]
                if p == "/dev/null":
                    continue
                p = p.split("/", 1)[1] if "/" in p else p
                if p not in files:
                    files.append(p)
    return files


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True,
                          capture_output=True, text=True).stdout


def blame(src, patches, touching, path):
    """Final line number -> name of the patch that wrote it (None: vanilla)."""
    repo = tempfile.mkdtemp(prefix="cov-blame-")
    try:
        git(repo, "init", "-q")
        git(repo, "config", "user.email", "coverage@localhost")
        git(repo, "config", "user.name", "coverage")
        target = os.path.join(repo, "f")
        states = []	# (commit message, content path or None)
        first = touching[0]
        states.append(("vanilla", os.path.join(src, ".pc", first, path)))
        for i, p in enumerate(touching):
            after = (os.path.join(src, ".pc", touching[i + 1], path)
                     if i + 1 < len(touching) else os.path.join(src, path))
            states.append((p, after))
        for msg, content in states:
            if os.path.exists(content):
                shutil.copyfile(content, target)
            else:
                open(target, "w").close()
            git(repo, "add", "f")
            git(repo, "commit", "-q", "--allow-empty", "-m", msg)
        names = {}
        for line in git(repo, "log", "--format=%H %s").splitlines():
            sha, msg = line.split(" ", 1)
            names[sha] = None if msg == "vanilla" else msg
        out = {}
        for line in git(repo, "blame", "-l", "-s", "f").splitlines():
            sha, rest = line.split(" ", 1)
            sha = sha.lstrip("^")
            num = int(rest.split(")", 1)[0].strip())
            out[num] = names.get(sha)
        return out
    finally:
        shutil.rmtree(repo, ignore_errors=True)


def gcov_lines(obj, gcda_dir, coverage_objs, src):
    """{src-relative file: {line: count}} over the profiled objects."""
    counts = {}
    funcs = {}
    missing = []
    src_real = os.path.realpath(src)
    gcdas = []
    for root, _, files in os.walk(gcda_dir):
        gcdas += [os.path.join(root, f) for f in files if f.endswith(".gcda")]
    for o in coverage_objs:
        stem = o[:-2] if o.endswith(".o") else o
        hits = [g for g in gcdas if g.endswith("/" + stem + ".gcda")]
        gcno = os.path.join(obj, stem + ".gcno")
        if not hits or not os.path.exists(gcno):
            missing.append(o + (" (no .gcda from the guest)" if not hits
                                else " (no .gcno in the build)"))
            continue
        tmp = tempfile.mkdtemp(prefix="cov-gcov-")
        try:
            base = os.path.basename(stem)
            shutil.copyfile(gcno, os.path.join(tmp, base + ".gcno"))
            shutil.copyfile(hits[0], os.path.join(tmp, base + ".gcda"))
            r = subprocess.run(["gcov", "-j", "-t", "-o", tmp,
                                os.path.join(tmp, base + ".gcda")],
                               cwd=tmp, capture_output=True, text=True)
            if r.returncode != 0 or not r.stdout.strip():
                missing.append("%s (gcov failed: %s)" % (o, r.stderr.strip()[:200]))
                continue
            for doc in r.stdout.splitlines():
                if not doc.strip().startswith("{"):
                    continue
                d = json.loads(doc)
                cwd = d.get("current_working_directory", obj)
                for f in d["files"]:
                    path = f["file"]
                    if not os.path.isabs(path):
                        path = os.path.join(cwd, path)
                    path = os.path.realpath(path)
                    if not path.startswith(src_real + "/"):
                        continue
                    rel = path[len(src_real) + 1:]
                    c = counts.setdefault(rel, {})
                    fn = funcs.setdefault(rel, {})
                    for ln in f["lines"]:
                        n = ln["line_number"]
                        c[n] = c.get(n, 0) + ln["count"]
                        if ln.get("function_name"):
                            fn[n] = ln["function_name"]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return counts, funcs, missing


def load_reasons(path, base):
    reasons = {}
    if not os.path.exists(path):
        return reasons
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 5:
                continue
            b, fname, func, text, why = parts
            if b in (base, "*"):
                reasons[(fname, func, text.strip())] = why
    return reasons


def main():
    base, src, obj, gcda_dir, series_dir, reasons_path, out_md, out_json = sys.argv[1:9]
    coverage_objs = os.environ["COVERAGE_OBJS"].split()
    globs = os.environ["COVERAGE_PATCHES"].split()
    patches = series_patches(series_dir)
    selected = [p for p in patches if any(fnmatch.fnmatch(p, g) for g in globs)]
    touch = {p: touched_files(os.path.join(series_dir, p)) for p in patches}
    files = []
    for p in selected:
        for f in touch[p]:
            if f.endswith((".c", ".h")) and f not in files:
                files.append(f)

    counts, funcs, missing = gcov_lines(obj, gcda_dir, coverage_objs, src)
    reasons = load_reasons(reasons_path, base)

    per_patch = {p: {"added": 0, "executable": 0, "ran": 0} for p in selected}
    unran = []
    no_code_files = []
    for f in files:
        touching = [p for p in patches if f in touch[p]]
        owner = blame(src, patches, touching, f)
        with open(os.path.join(src, f), errors="replace") as fh:
            text = fh.read().split("\n")
        fc = counts.get(f)
        for num, p in sorted(owner.items()):
            if p not in per_patch:
                continue
            per_patch[p]["added"] += 1
            if fc is None or num not in fc:
                continue
            per_patch[p]["executable"] += 1
            if fc[num] > 0:
                per_patch[p]["ran"] += 1
            else:
                src_line = text[num - 1] if num <= len(text) else ""
                func = funcs.get(f, {}).get(num, "?")
                unran.append({"patch": p, "file": f, "line": num,
                              "function": func, "text": src_line.strip(),
                              "reason": reasons.get((f, func, src_line.strip()))})
        if fc is None:
            no_code_files.append(f)

    ex = sum(v["executable"] for v in per_patch.values())
    ran = sum(v["ran"] for v in per_patch.values())
    pct = 100.0 * ran / ex if ex else 0.0
    unexplained = [u for u in unran if not u["reason"]]
    ok = not missing and ex > 0 and pct >= GOAL and not unexplained

    with open(out_json, "w") as fh:
        json.dump({"base": base, "executable": ex, "ran": ran,
                   "percent": round(pct, 1), "goal": GOAL,
                   "missing_objects": missing, "per_patch": per_patch,
                   "unran": unran, "pass": ok}, fh, indent=1)

    with open(out_md, "w") as fh:
        w = fh.write
        w("## %s\n\n" % base)
        w("Profiled objects: %s.  Patches counted: %s.\n\n"
          % (", ".join("`%s`" % o for o in coverage_objs),
             ", ".join("`%s`" % p for p in selected)))
        if missing:
            w("**No coverage data for:** %s\n\n" % "; ".join(missing))
        w("| patch | lines added | executable | ran | % |\n")
        w("| --- | ---: | ---: | ---: | ---: |\n")
        for p in selected:
            v = per_patch[p]
            w("| %s | %d | %d | %d | %s |\n" % (
                p, v["added"], v["executable"], v["ran"],
                "%.1f" % (100.0 * v["ran"] / v["executable"])
                if v["executable"] else "-"))
        w("| **total** | %d | **%d** | **%d** | **%.1f** |\n\n"
          % (sum(v["added"] for v in per_patch.values()), ex, ran, pct))
        if no_code_files:
            w("Files with added lines but no code in the profiled objects "
              "(declarations, uapi, tables): %s.\n\n"
              % ", ".join("`%s`" % f for f in no_code_files))
        if unran:
            w("Added executable lines that never ran (%d):\n\n" % len(unran))
            w("| patch | file:line | function | source | why |\n| --- | --- | --- | --- | --- |\n")
            for u in unran:
                w("| %s | %s:%d | %s() | `%s` | %s |\n" % (
                    u["patch"][:4], u["file"], u["line"], u["function"],
                    u["text"].replace("|", "\\|").replace("`", "'"),
                    (u["reason"] or "**no reason yet**").replace("|", "\\|")))
            w("\n")
        else:
            w("Every added executable line ran.\n\n")
        w("Verdict: %s (goal: at least %.0f %% of the added executable lines, "
          "and a written reason for each that never ran).\n"
          % ("**pass**" if ok else "**FAIL**", GOAL))

    print("%s: %d of %d added executable lines ran (%.1f %%), %d never ran "
          "(%d without a reason)%s" % (base, ran, ex, pct, len(unran),
                                       len(unexplained),
                                       "; no data for " + "; ".join(missing)
                                       if missing else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main())
