#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-retries.sh: the rerun of mainline's racy tests must forgive only
# what the list allows (selftests/retries-allowed.txt; here a list of its
# own), and only when at least four of five reruns pass.  Runs
# scripts/guest/retry-failed (under busybox sh, as in the guest) and
# scripts/check-manifest.py on made-up runner output, with a fake test
# binary whose reruns pass or fail on demand.  Likewise the debug guests'
# exclusions (selftests/debug-excluded.txt): the wrapper really leaves the
# test out, and the host accepts that only from a debug run and only for
# a listed test.  Part of make check-patches; needs no kernel.

. "$(dirname "$0")/lib.sh"

{
tmp=$(mktemp -d /tmp/check-retries.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sh=sh
[ -x /bin/busybox ] && sh="/bin/busybox sh"
fails=0

# the fake epoll_wakeup_test: "-r NAME" runs NAME; the reruns whose
# numbers $FAIL_RERUN lists (e.g. "2 5") fail
mkdir -p "$tmp/bin"
cat >"$tmp/bin/epoll_wakeup_test" <<'EOF'
#!/bin/sh
n=$(($(cat "$COUNTER" 2>/dev/null || echo 0) + 1))
echo $n >"$COUNTER"
echo "TAP version 13"
echo "1..1"
case " ${FAIL_RERUN:-} " in
*" $n "*)
	echo "not ok 1 $2"
	exit 1
esac
echo "ok 1 $2"
EOF
chmod +x "$tmp/bin/epoll_wakeup_test"
printf '%s epoll_wakeup_test 3\n' 6.12 6.12-arm64 v3.19 >"$tmp/manifest"
# its own list (the project's may be empty): epoll16 and epoll58 of
# mainline's epoll_wakeup_test may be rerun on 6.12, on any arch
export RETRIES=$tmp/retries-allowed.txt
printf '%s\n' '6\.12(-.*)?  epoll_wakeup_test  global.epoll16,global.epoll58  a made-up reason' >"$RETRIES"

# runner_out FAILED-TEST TOP-TAIL: the runner's TAP for one binary of three
# tests, one of which (FAILED-TEST) failed
runner_out() {
	cat <<EOF
TAP version 13
1..1
# timeout set to 45
# selftests: filesystems/epoll: epoll_wakeup_test
# TAP version 13
# 1..3
# ok 1 global.epoll1
# not ok 2 $1
# ok 3 global.epoll2
# # Totals: pass:2 fail:1 xfail:0 xpass:0 skip:0 error:0
not ok 1 selftests: filesystems/epoll: epoll_wakeup_test $2
EOF
}

# case NAME TARGET FAILED-TEST TOP-TAIL FAIL-RERUN WANT-GUEST WANT-HOST [REGEX]
# WANT-*: 0 forgiven/pass, 1 not; REGEX must appear in the host's output
case_() {
	local name=$1 target=$2 failed=$3 tail=$4 rerun=$5 wguest=$6 whost=$7 re=${8:-}
	local d=$tmp/$name grc hrc
	mkdir -p "$d"
	runner_out "$failed" "$tail" >"$d/kselftest.out"
	python3 "$TOP/scripts/check-manifest.py" --retries "$target" >"$d/retry"
	RETRY_LIST=$d/retry KSFT_OUT=$d/kselftest.out KSFT_FAILED=$d/failed \
	KSFT_DIR=$tmp/bin COUNTER=$d/counter FAIL_RERUN="$rerun" \
		$sh -c ". '$TOP/scripts/guest/retry-failed'; retry_failed" >"$d/retry.out"
	grc=$?
	cat "$d/kselftest.out" "$d/retry.out" >"$d/results.log"
	MANIFEST=$tmp/manifest python3 "$TOP/scripts/check-manifest.py" \
		"$target" "$d/results.log" >"$d/host.out" 2>&1
	hrc=$?
	[ $grc = 0 ] || grc=1
	if [ $grc != "$wguest" ] || [ $hrc != "$whost" ] ||
	   { [ -n "$re" ] && ! grep -qE "$re" "$d/host.out"; }; then
		echo "not ok: $name: guest $grc (want $wguest), host $hrc (want $whost)${re:+, /$re/}"
		sed 's/^/    /' "$d/retry.out" "$d/host.out"
		fails=$((fails + 1))
	else
		echo "ok: $name"
	fi
}

case_ flaky-forgiven       6.12       global.epoll58 '# exit=1' ''  0 0 '^manifest: retried: epoll_wakeup_test: global.epoll58'
case_ flaky-arm64          6.12-arm64 global.epoll16 '# exit=1' ''  0 0 'passed 5 of 5'
case_ one-rerun-fails      6.12       global.epoll58 '# exit=1' 3   0 0 'passed 4 of 5 reruns'
case_ two-reruns-fail      6.12       global.epoll58 '# exit=1' '2 5' 1 1 'passed only 3 of 5 reruns'
case_ not-on-the-list      6.12       global.epoll1  '# exit=1' 0 1 1 'failed: global.epoll1'
case_ not-for-this-base    v3.19      global.epoll58 '# exit=1' 0 1 1 'failed: global.epoll58'
case_ binary-timed-out     6.12       global.epoll58 '# TIMEOUT 45 seconds' 0 1 1 'the binary failed'

# a retry line the guest did not earn (forged, from a stale list, or from
# a guest that reran too few times) is named by the host, and does not
# make the run pass
# forged NAME FAILED-TEST RETRY-LINE REGEX
forged() {
	local d=$tmp/$1
	mkdir -p "$d"
	{ runner_out "$2" '# exit=1'; echo "$3"; } >"$d/results.log"
	if MANIFEST=$tmp/manifest python3 "$TOP/scripts/check-manifest.py" 6.12 \
		"$d/results.log" >"$d/host.out" 2>&1 ||
	   ! grep -qE "$4" "$d/host.out"; then
		echo "not ok: $1"; sed 's/^/    /' "$d/host.out"; fails=$((fails + 1))
	else
		echo "ok: $1"
	fi
}
forged forged-retry global.epoll1 \
	'# retry: epoll_wakeup_test global.epoll1: passed 5 of 5 reruns' \
	'global.epoll1 was rerun but is not in retries-allowed.txt'
forged too-few-reruns global.epoll58 \
	'# retry: epoll_wakeup_test global.epoll58: passed 3 of 3 reruns' \
	'passed only 3 of 3 reruns \(4 of 5 must pass\)'

# --- the debug guests' exclusions (debug_exclude) ---
# a fake harness binary of three tests that honours "-T NAME"
mkdir -p "$tmp/dx"
cat >"$tmp/dx/fake" <<'EOF'
#!/bin/sh
skip=
while [ $# -gt 0 ]; do
	[ "$1" = -T ] && skip="$skip $2" && shift
	shift
done
set -- epoll1 epoll61 epoll2
for t in $skip; do set -- $(printf '%s\n' "$@" | grep -vx "$t"); done
echo "TAP version 13"
echo "1..$#"
i=0
for t in "$@"; do i=$((i + 1)); echo "ok $i global.$t"; done
EOF
chmod +x "$tmp/dx/fake"
export DEBUG_EXCLUDED=$tmp/debug-excluded.txt
printf '%s\n' '6\.12(-.*)?  epoll_wakeup_test  global.epoll61  a made-up reason' >"$DEBUG_EXCLUDED"

# dx NAME GUEST-LIST DEBUG WANT-HOST REGEX: the guest wraps the binary with
# GUEST-LIST ("binary test" lines), the runner runs it, and the host
# checks the run as DEBUG
dx() {
	local d=$tmp/dx/$1 hrc
	mkdir -p "$d/bin"
	cp "$tmp/dx/fake" "$d/bin/epoll_wakeup_test"
	printf '%s\n' "$2" >"$d/list"
	{
		DEBUG_LIST=$d/list KSFT_DIR=$d/bin \
			$sh -c ". '$TOP/scripts/guest/retry-failed'; debug_exclude"
		echo "TAP version 13"
		echo "1..1"
		echo "# selftests: filesystems/epoll: epoll_wakeup_test"
		(cd "$d/bin" && ./epoll_wakeup_test) | sed 's/^/# /'
		echo "ok 1 selftests: filesystems/epoll: epoll_wakeup_test"
	} >"$d/results.log" 2>&1
	DEBUG=$3 MANIFEST=$tmp/manifest python3 "$TOP/scripts/check-manifest.py" \
		6.12 "$d/results.log" >"$d/host.out" 2>&1
	hrc=$?
	[ $hrc = 0 ] || hrc=1
	if [ $hrc != "$4" ] || ! grep -qE "$5" "$d/host.out"; then
		echo "not ok: $1: host $hrc (want $4), /$5/"
		sed 's/^/    /' "$d/results.log" "$d/host.out"
		fails=$((fails + 1))
	else
		echo "ok: $1"
	fi
}
dx excluded-on-debug   'epoll_wakeup_test global.epoll61' 1 0 \
	'^manifest: debug-excluded: epoll_wakeup_test: global.epoll61 .*made-up reason'
dx excluded-not-debug  'epoll_wakeup_test global.epoll61' 0 1 \
	'global.epoll61 was left out, but this is not a debug run'
dx excluded-not-listed 'epoll_wakeup_test global.epoll1' 1 1 \
	'global.epoll1 was left out, but is not in debug-excluded.txt'
# the guest claims the exclusion, but the binary runs every test
mv "$tmp/dx/fake" "$tmp/dx/fake.real"
printf '#!/bin/sh\nexec "%s"\n' "$tmp/dx/fake.real" >"$tmp/dx/fake"
chmod +x "$tmp/dx/fake"
dx wrapper-ignored     'epoll_wakeup_test global.epoll61' 1 1 \
	'3 passed, more than the 2 the manifest expects'

[ $fails = 0 ] && echo "check-retries: pass" && exit 0
echo "check-retries: $fails case(s) FAILED"
exit 1
}
