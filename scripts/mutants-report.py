#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""mutants-report.py [BASE...]: results/mutants.md from build/mutants.

Reads what scripts/mutants.sh left in build/mutants/BASE/ (results.tsv,
and runs/NAME/failures for each mutant) and writes the Markdown report:
per base, each mutant, its verdict and the tests that killed it.  The
killing tests are taken from the run's own failure list, real test
failures first: with epoll.failfast=1 the guest stops at the first failing
binary, so the manifest's "did not run" lines for the rest say nothing
about the mutant and are only shown when nothing else failed.
"""
import datetime
import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MBUILD = os.environ.get('MUTANTS_BUILD', os.path.join(TOP, 'build', 'mutants'))


def git_commit():
    try:
        rev = subprocess.check_output(['git', '-C', TOP, 'rev-parse', '--short',
                                       'HEAD'], text=True).strip()
        if subprocess.call(['git', '-C', TOP, 'diff', '--quiet', 'HEAD']):
            rev += '+dirty'
        return rev
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def killers(base, name, fallback):
    path = os.path.join(MBUILD, base, 'runs', name, 'failures')
    try:
        with open(path) as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return fallback
    real = [l for l in lines if not (l.startswith('manifest:') and
                                     'did not run' in l)]
    pick = real or lines
    if not pick:
        return fallback
    more = len(pick) - 3
    return '; '.join(pick[:3]) + (f' (+{more} more)' if more > 0 else '')


def esc(s):
    return s.replace('|', '\\|')


def main(bases):
    out = []
    out.append('# Mutation testing of the selftests\n')
    out.append('`make mutants` (scripts/mutants.sh): each mutant in '
               '`selftests/mutants/<base>/` plants one bug in the series; it is '
               '*killed* when the selftests\' run in QEMU fails (a failed test, a '
               'manifest shortfall, a console splat or no exit status) and '
               '*survives* when the run passes.  Mutant boots use '
               '`epoll.failfast=1`: the guest stops at the first failing binary.\n')
    out.append(f'- commit: {git_commit()}')
    out.append(f'- written: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC')
    for base in bases:
        tsv = os.path.join(MBUILD, base, 'results.tsv')
        out.append(f'\n## {base}\n')
        if not os.path.exists(tsv):
            out.append('Not run.')
            continue
        rows = []
        with open(tsv) as f:
            for line in f:
                parts = line.rstrip('\n').split('\t')
                if len(parts) >= 6:
                    rows.append(parts[:6])
        out.append('| mutant | what it breaks | verdict | killed by (first failures) | s |')
        out.append('| --- | --- | --- | --- | ---: |')
        counts = {}
        secs = 0
        for name, desc, _expect, verdict, kill, sec in rows:
            if name != 'baseline':
                counts[verdict] = counts.get(verdict, 0) + 1
            secs += int(sec) if sec.isdigit() else 0
            if verdict == 'killed':
                kill = killers(base, name, kill)
            out.append(f'| {name} | {esc(desc)} | **{verdict}** | {esc(kill)} | {sec} |')
        n = sum(counts.values())
        summary = ', '.join(f'{v} {k}' for k, v in sorted(counts.items()))
        out.append(f'\n{base}: {n} mutants run ({summary}); '
                   f'{secs} s of build and boot time, baseline included.')
    path = os.path.join(TOP, 'results', 'mutants.md')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write('\n'.join(out) + '\n')
    print(path)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:] or ['v3.19', '6.12']))
