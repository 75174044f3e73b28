#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""check-manifest.py: hold a guest's TAP output to the expected counts.

    check-manifest.py BASE RESULTS_LOG            check, exit 1 on any shortfall
    check-manifest.py --update BASE RESULTS_LOG   rewrite BASE's manifest lines

A green run must be a complete run.  The runners (the kselftest runner,
run_kselftest.sh, for the tests built from the patched tree, and
scripts/guest/run-selftests for the rest) print one top-level TAP line per
test binary, with the binary's own TAP nested behind "# ".  This checks,
for BASE (or BASE-ARCH, the manifest's key for a guest other than x86_64):

  - every binary in selftests/manifest.txt ran, and none that is not there;
  - no binary failed as a whole ("not ok N ...": exit status, crash or
    timeout), and none skipped itself as a whole ("ok N ... # SKIP": its
    feature probe failed, and the guests only ever boot patched kernels);
  - each binary passed exactly the number of tests the manifest gives:
    fewer is a shortfall, more means the manifest is stale;
  - no nested test failed, and none skipped unless selftests/skips-allowed.txt
    allows that skip on this base, with a reason;
  - except that a failed test listed in selftests/retries-allowed.txt for
    this target (mainline's racy tests only) counts as passed when the guest
    reran it alone RERUNS times and it passed at least RERUN_PASS of them
    ("# retry: BINARY TEST: passed N of 5 reruns"); it is named in the
    output, never silently.

  - except that on a debug kernel (DEBUG=1 in the environment) a test
    that selftests/debug-excluded.txt lists for this target may be left
    out ("# debug-excluded: BINARY TEST", printed by the guest when it ran
    the binary without it): that binary then owes one passed test fewer.
    The line is refused from any other run and for any other test.

    check-manifest.py --retries TARGET            the "binary test" lines the
                                                 guest may rerun
    check-manifest.py --debug-excluded TARGET     the "binary test" lines the
                                                 debug guest leaves out

It prints one line per problem, naming the binary and what is missing, and
a per-binary table.
"""
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# MANIFEST in the environment: a snapshot taken by a long job (make
# mutants), so that editing the manifest meanwhile cannot change its verdicts.
MANIFEST = os.environ.get('MANIFEST') or \
    os.path.join(TOP, 'selftests', 'manifest.txt')
ALLOWED = os.path.join(TOP, 'selftests', 'skips-allowed.txt')
# RETRIES in the environment: scripts/check-retries.sh's own list
RETRIES = os.environ.get('RETRIES') or \
    os.path.join(TOP, 'selftests', 'retries-allowed.txt')
# scripts/guest/retry-failed reruns a failed, allowed test RERUNS times and
# forgives it when at least RERUN_PASS reruns pass (the same two numbers)
RERUNS = 5
RERUN_PASS = 4

BIN_RE = re.compile(r'^# selftests: (?:filesystems/)?epoll: (\S+)$')
NESTED_RE = re.compile(r'^# (not )?ok \d+ (.*)$')
TOP_RE = re.compile(r'^(not )?ok \d+ selftests: (?:filesystems/)?epoll: (\S+)(.*)$')
RETRY_RE = re.compile(r'^# retry: (\S+) (\S+): passed (\d+) of (\d+) reruns$')
EXCLUDED_RE = re.compile(r'^# debug-excluded: (\S+) (\S+)$')
# DEBUG_EXCLUDED in the environment: scripts/check-retries.sh's own list
DEBUG_EXCLUDED = os.environ.get('DEBUG_EXCLUDED') or \
    os.path.join(TOP, 'selftests', 'debug-excluded.txt')


def data_lines(path):
    """Non-comment, non-empty lines of a data file, split on whitespace."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                out.append(line.split(None, 3))
    return out


def new_bin():
    return {'pass': 0, 'fail': [], 'skip': [], 'top': None, 'note': '',
            'retried': {}, 'excluded': []}


def parse(results):
    """{binary: {'pass', 'fail', 'skip': [names], 'top': ok|skip|fail,
    'note': the runner line's tail, 'retried': {test: (passed, reruns)},
    'excluded': [tests the debug guest left out]}}"""
    bins = {}
    cur = None
    with open(results, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            m = RETRY_RE.match(line)
            if m:
                b = bins.setdefault(m.group(1), new_bin())
                b['retried'][m.group(2)] = (int(m.group(3)), int(m.group(4)))
                continue
            m = EXCLUDED_RE.match(line)
            if m:
                b = bins.setdefault(m.group(1), new_bin())
                b['excluded'].append(m.group(2))
                continue
            m = BIN_RE.match(line)
            if m:
                cur = bins.setdefault(m.group(1), new_bin())
                continue
            m = TOP_RE.match(line)
            if m:
                b = bins.setdefault(m.group(2), new_bin())
                b['note'] = m.group(3).strip()
                if m.group(1):
                    b['top'] = 'fail'
                elif '# SKIP' in m.group(3):
                    b['top'] = 'skip'
                else:
                    b['top'] = 'ok'
                cur = None
                continue
            m = NESTED_RE.match(line)
            if m and cur is not None:
                name = m.group(2)
                if m.group(1):
                    cur['fail'].append(name)
                elif re.search(r'#\s*SKIP', name, re.I):
                    cur['skip'].append(name)
                else:
                    cur['pass'] += 1
    return bins


# MANIFEST_EXCLUDE: binaries the job was told to leave out (make test
# NGINX_SMOKE=0 drops nginx_smoke); the summary names them.
EXCLUDE = os.environ.get('MANIFEST_EXCLUDE', '').split()


def manifest_for(base):
    return {f[1]: int(f[2]) for f in data_lines(MANIFEST)
            if len(f) >= 3 and f[0] == base and f[1] not in EXCLUDE}


def allowed_skips(base, binary):
    return [(f[2], f[3] if len(f) > 3 else '') for f in data_lines(ALLOWED)
            if len(f) >= 3 and f[0] == base and
            re.fullmatch(f[1], binary)]


def allowed_retries(target):
    """{binary: ([test names], reason)} that TARGET may rerun"""
    out = {}
    for f in data_lines(RETRIES):
        if len(f) >= 3 and re.fullmatch(f[0], target):
            out[f[1]] = (f[2].split(','), f[3] if len(f) > 3 else '')
    return out


def allowed_exclusions(target):
    """{binary: ([test names], reason)} that TARGET's debug guest leaves out"""
    out = {}
    for f in data_lines(DEBUG_EXCLUDED):
        if len(f) >= 3 and re.fullmatch(f[0], target):
            out[f[1]] = (f[2].split(','), f[3] if len(f) > 3 else '')
    return out


def debug_exclusions(target, bins, want):
    """Lower WANT by the tests a debug guest left out, when allowed.
    Returns the notes ("debug-excluded: ..." ones are not problems)."""
    notes = []
    allowed = allowed_exclusions(target)
    debug = os.environ.get('DEBUG') == '1'
    for binary, b in sorted(bins.items()):
        names, reason = allowed.get(binary, ([], ''))
        for name in b['excluded']:
            if not debug:
                notes.append(f'{binary}: {name} was left out, but this is '
                             f'not a debug run (DEBUG=1)')
            elif name not in names:
                notes.append(f'{binary}: {name} was left out, but is not in '
                             f'{os.path.basename(DEBUG_EXCLUDED)} for {target}')
            elif binary in want:
                want[binary] -= 1
                notes.append(f'debug-excluded: {binary}: {name} left out on '
                             f'the debug kernel ({reason})')
    return notes


def forgive_retries(target, bins):
    """Count a failed, allowed test that passed its reruns as passed; a
    binary whose runner line failed for such tests alone ("# exit=1", the
    harness's status for failed tests) is then ok.  Returns the notes."""
    notes = []
    allowed = allowed_retries(target)
    for binary, b in bins.items():
        names, reason = allowed.get(binary, ([], ''))
        for name, (passed, runs) in sorted(b['retried'].items()):
            if name not in b['fail']:
                notes.append(f'{binary}: {name} was rerun but had not failed')
                continue
            if name not in names:
                notes.append(f'{binary}: {name} was rerun but is not in '
                             f'{os.path.basename(RETRIES)} for {target}')
                continue
            if runs != RERUNS or passed < RERUN_PASS:
                notes.append(f'{binary}: {name} failed, and passed only '
                             f'{passed} of {runs} reruns ({RERUN_PASS} of '
                             f'{RERUNS} must pass)')
                continue
            b['fail'].remove(name)
            b['pass'] += 1
            notes.append(f'retried: {binary}: {name} failed in the runner\'s '
                         f'run and passed {passed} of {runs} reruns '
                         f'({reason})')
        if b['top'] == 'fail' and not b['fail'] and b['retried'] and \
                re.search(r'#\s*exit=1$', b['note']):
            b['top'] = 'ok'
    return notes


def check(base, results):
    bins = parse(results)
    want = manifest_for(base)
    problems = []
    notes = forgive_retries(base, bins)
    notes += debug_exclusions(base, bins, want)
    problems += [n for n in notes
                 if not n.startswith(('retried: ', 'debug-excluded: '))]
    if not want:
        problems.append(f'{base}: no manifest lines in {MANIFEST}')
    for binary, n in sorted(want.items()):
        b = bins.get(binary)
        if b is None or b['top'] is None:
            problems.append(f'{binary}: did not run (expected {n} passed tests)')
            continue
        if b['top'] == 'skip':
            problems.append(f'{binary}: skipped as a whole (failed feature probe?): '
                            f'0 of {n} tests ran')
        elif b['top'] == 'fail':
            problems.append(f'{binary}: the binary failed (its runner line '
                            f'is "not ok": exit status, crash or timeout)')
        for name in b['fail']:
            problems.append(f'{binary}: failed: {name}')
        for name in b['skip']:
            ok = [r for pat, r in allowed_skips(base, binary)
                  if re.search(pat, name)]
            if not ok:
                problems.append(f'{binary}: skip not on the allowlist: {name}')
        if b['pass'] < n:
            problems.append(f'{binary}: {b["pass"]} passed, fewer than the '
                            f'{n} the manifest expects')
        elif b['pass'] > n:
            problems.append(f'{binary}: {b["pass"]} passed, more than the '
                            f'{n} the manifest expects (update it)')
    for binary in sorted(set(bins) - set(want)):
        problems.append(f'{binary}: ran but is not in the manifest for {base}')

    print(f'{"binary":32} {"want":>5} {"passed":>6} {"failed":>6} {"skipped":>7}  top')
    for binary in sorted(set(bins) | set(want)):
        b = bins.get(binary, {'pass': 0, 'fail': [], 'skip': [], 'top': '-'})
        print(f'{binary:32} {want.get(binary, "-"):>5} {b["pass"]:>6} '
              f'{len(b["fail"]):>6} {len(b["skip"]):>7}  {b["top"]}')
    for n in notes:
        if n.startswith(('retried: ', 'debug-excluded: ')):
            print(f'manifest: {n}')
    for p in problems:
        print(f'MANIFEST: {p}')
    total = sum(want.values())
    got = sum(min(bins.get(b, {'pass': 0})['pass'], n) for b, n in want.items())
    listed = {f[1] for f in data_lines(MANIFEST) if len(f) >= 3 and f[0] == base}
    for binary in sorted(listed & set(EXCLUDE)):
        print(f'manifest: {binary} left out of this run on request '
              f'(MANIFEST_EXCLUDE), not checked')
    print(f'manifest: {base}: {got} of {total} expected tests passed, '
          f'{len(problems)} problems')
    return 1 if problems else 0


def update(base, results):
    bins = parse(results)
    keep = []
    if os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            keep = [l for l in f if not (l.split() and l.split()[0] == base)]
    with open(MANIFEST, 'w') as f:
        f.writelines(keep)
        for binary in sorted(bins):
            f.write(f'{base:6} {binary:32} {bins[binary]["pass"]}\n')
    print(f'{MANIFEST}: {len(bins)} binaries for {base}')
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == '--update':
        return update(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == '--retries':
        for binary, (names, _) in sorted(allowed_retries(argv[2]).items()):
            for name in names:
                print(binary, name)
        return 0
    if len(argv) == 3 and argv[1] == '--debug-excluded':
        for binary, (names, _) in sorted(allowed_exclusions(argv[2]).items()):
            for name in names:
                print(binary, name)
        return 0
    if len(argv) == 3:
        return check(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main(sys.argv))
