#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""debug-report.py: the record of make test DEBUG=1 runs, and its report.

    debug-report.py record [--tree DIR] [--planted NAME] [--note TEXT] BUILD BASE...
    debug-report.py render

record appends one row per BASE to results/debug-runs.tsv, from the run
that BUILD/<base>-debug/run-selftests holds (summary and results.log, as
scripts/guest.sh left them): the commit it ran at (DIR's HEAD, the
checkout that ran it; "+dirty" when DIR had changes outside results/),
the date of the run, the verdict and its counts: tests passed, failed and
skipped, kmemleak's objects leaked by the job and boot's, whether lockdep
was still armed, console splats and the guest's seconds.  With --planted
NAME the run was of a planted bug (selftests/mutants/debug/BASE/NAME),
which must FAIL on kmemleak alone; the row then also carries the first
frames of the job's first leaked object, symbolized against the debug
vmlinux by scripts/symbolize.py.

render writes results/debug-leak.md from that file: per base, the latest
run, how many runs in a row have passed, and every run, newest first.
A row is never edited; a run that went wrong stays in the record.
"""
import csv
import datetime
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TSV = os.path.join(TOP, 'results', 'debug-runs.tsv')
MD = os.path.join(TOP, 'results', 'debug-leak.md')
FIELDS = ['commit', 'date', 'base', 'planted', 'result', 'passed', 'failed',
          'skipped', 'job_objects', 'boot_objects', 'lockdep_armed',
          'splats', 'guest_seconds', 'leak_backtrace', 'note']


ALLOCATOR = re.compile(r'^(__)?(kmalloc|kmem_cache_alloc|kzalloc|slab_|'
                       r'__do_kmalloc|kmemleak|__kmem_cache|kmalloc_trace)')


def summary(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip('\n').partition('=')
            out[k] = v
    return out


def head_of(tree):
    git = ['git', '-C', tree]
    rev = subprocess.run(git + ['rev-parse', '--short', 'HEAD'], check=True,
                         capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(git + ['status', '--porcelain', '--', '.',
                                  ':!results'], check=True,
                           capture_output=True, text=True).stdout.strip()
    return rev + ('+dirty' if dirty else '')


def leak_backtrace(run, build, base):
    """The first job object's backtrace, symbolized: 'fn (file:line) < ...'"""
    res = os.path.join(run, 'results.log')
    lines = []
    with open(res, errors='replace') as f:
        for line in f:
            if line.startswith('kmemleak-job: '):
                lines.append('  ' + line[len('kmemleak-job: '):])
    if not lines:
        return ''
    obj = os.path.join(build, base + '-debug', 'obj', 'vmlinux')
    src = os.path.join(build, base, 'src')
    sym = subprocess.run(['python3', os.path.join(TOP, 'scripts', 'symbolize.py'),
                          obj, src], input=''.join(lines),
                         capture_output=True, text=True).stdout
    frames = []
    started = False
    for line in sym.splitlines():
        if 'backtrace' in line:
            if started:
                break
            started = True
            continue
        m = re.match(r'\s*\[<[0-9a-f]+>\]\s+(\S+)(.*)$', line) or \
            re.match(r'\s*(\S+\+0x[0-9a-f]+/0x[0-9a-f]+)(.*)$', line)
        if started and m:
            fn = m.group(1).split('+')[0]
            where = re.search(r'([\w/.-]+\.[chS]:\d+)\)', m.group(2))
            # the allocator's own frames say nothing about the leak
            if ALLOCATOR.match(fn) or (where and where.group(1).startswith('mm/')):
                continue
            frames.append(fn + (f' ({where.group(1)})' if where else ''))
        if len(frames) == 4:
            break
    return ' < '.join(frames)


def record(argv):
    tree, planted, note = TOP, '', ''
    while argv and argv[0].startswith('--'):
        opt = argv.pop(0)
        if opt == '--tree':
            tree = argv.pop(0)
        elif opt == '--planted':
            planted = argv.pop(0)
        elif opt == '--note':
            note = argv.pop(0)
        else:
            sys.exit(f'debug-report.py: unknown option {opt}')
    if len(argv) < 2:
        sys.exit(__doc__)
    build, bases = argv[0], argv[1:]
    commit = head_of(tree)
    rows = []
    for base in bases:
        run = os.path.join(build, base + '-debug', 'run-selftests')
        s = summary(os.path.join(run, 'summary'))
        if s.get('debug') != '1':
            sys.exit(f'{run}: not a debug run (debug={s.get("debug")})')
        when = datetime.datetime.fromtimestamp(
            os.path.getmtime(os.path.join(run, 'summary')),
            datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')
        rows.append({
            'commit': commit, 'date': when, 'base': base,
            'planted': planted or '-',
            'result': s.get('result', 'none'),
            'passed': s.get('passed', ''), 'failed': s.get('failed', ''),
            'skipped': s.get('skipped', ''),
            'job_objects': s.get('kmemleak') or 'no scan',
            'boot_objects': s.get('kmemleak_boot') or 'no scan',
            'lockdep_armed': {'1': 'yes', '0': 'NO'}.get(
                s.get('debug_locks', ''), 'not reported'),
            'splats': s.get('splats', ''),
            'guest_seconds': s.get('seconds', ''),
            'leak_backtrace': leak_backtrace(run, build, base) or '-',
            'note': note or '-',
        })
    new = not os.path.exists(TSV)
    with open(TSV, 'a', newline='') as f:
        w = csv.DictWriter(f, FIELDS, delimiter='\t', lineterminator='\n')
        if new:
            w.writeheader()
        for r in rows:
            w.writerow(r)
            print('\t'.join(r[k] for k in FIELDS))
    return 0


def load():
    with open(TSV, newline='') as f:
        return list(csv.DictReader(f, delimiter='\t'))


def commit_time(rev):
    p = subprocess.run(['git', '-C', TOP, 'show', '-s', '--format=%ct',
                        rev.replace('+dirty', '')], capture_output=True, text=True)
    return int(p.stdout.strip() or 0)


def base_order():
    """scripts/lib.sh's all_bases: the bases in their BASE_ORDER"""
    p = subprocess.run(['bash', '-c', '. "$1/scripts/lib.sh" && all_bases',
                        'all_bases', TOP], capture_output=True, text=True)
    return p.stdout.split()


def streak(rows):
    """Runs in a row (newest first, planted runs left aside) that passed."""
    n = 0
    for r in reversed(rows):
        if r['planted'] != '-':
            continue
        if r['result'] != 'pass':
            break
        n += 1
    return n


# column headers, and whether the column holds numbers (right-aligned)
COLUMNS = {
    'base': ('base', 0), 'commit': ('commit', 0), 'date': ('date (UTC)', 0),
    'planted': ('planted', 0), 'result': ('result', 0),
    'passed': ('passed', 1), 'failed': ('failed', 1), 'skipped': ('skipped', 1),
    'job_objects': ("job's objects", 1), 'boot_objects': ("boot's objects", 1),
    'lockdep_armed': ('lockdep armed', 0), 'splats': ('splats', 1),
    'guest_seconds': ('guest s', 1), 'streak': ('passes in a row', 1),
    'leak_backtrace': ("the first job object's backtrace", 0),
    'note': ('note', 0),
}


def table(keys, rows):
    """A Markdown table of ROWS (dicts) in the columns KEYS."""
    out = ['| ' + ' | '.join(COLUMNS[k][0] for k in keys) + ' |',
           '| ' + ' | '.join('---:' if COLUMNS[k][1] else '---'
                             for k in keys) + ' |']
    for r in rows:
        out.append('| ' + ' | '.join(r[k] for k in keys) + ' |')
    return out


def render(_argv):
    rows = load()
    bases = [b for b in base_order() if any(r['base'] == b for r in rows)]
    bases += sorted({r['base'] for r in rows} - set(bases))
    out = ['# make test DEBUG=1: the leak and lock gates', '',
           'Generated by `scripts/debug-report.py render` from '
           '[debug-runs.tsv](debug-runs.tsv), one row per base per run '
           '(`scripts/debug-report.py record` after the run; a row is never '
           'edited).  The debug kernels: docs/quality.md.  A planted run '
           'boots the series plus one bug of `selftests/mutants/debug/BASE/` '
           'and must FAIL on kmemleak alone.', '']
    plain = [r for r in rows if r['planted'] == '-']
    latest = [[r for r in plain if r['base'] == b][-1] for b in bases
              if any(r['base'] == b for r in plain)]
    # make status (scripts/status.py) reads the first "Ran at commit":
    # the oldest of the latest runs, so that it is current only while
    # every base's latest run is
    oldest = min((r for r in latest), key=lambda r: commit_time(r['commit']))
    out += [f"Ran at commit {oldest['commit']} (the oldest of the latest "
            f"run per base):", '']
    out += table(['base', 'commit', 'result', 'passed', 'failed', 'skipped',
                  'job_objects', 'boot_objects', 'lockdep_armed', 'splats',
                  'guest_seconds', 'streak'],
                 [dict(mine[-1], streak=str(streak(mine)))
                  for mine in ([r for r in plain if r['base'] == b]
                               for b in bases) if mine])
    planted = [r for r in rows if r['planted'] != '-']
    if planted:
        out += ['', '## Planted leaks', '']
        out += table(['commit', 'date', 'base', 'planted', 'result',
                      'job_objects', 'boot_objects', 'leak_backtrace', 'note'],
                     reversed(planted))
    out += ['', '## Every run, newest first', '']
    out += table(['commit', 'date', 'base', 'result', 'passed', 'failed',
                  'skipped', 'job_objects', 'boot_objects', 'lockdep_armed',
                  'splats', 'guest_seconds', 'note'], reversed(plain))
    with open(MD, 'w') as f:
        f.write('\n'.join(out) + '\n')
    print(f'{MD}: {len(rows)} runs')
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] in ('-h', '--help'):
        print(__doc__.strip())
        return 0
    if len(argv) >= 2 and argv[1] == 'record':
        return record(argv[2:])
    if len(argv) == 2 and argv[1] == 'render':
        return render(argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
