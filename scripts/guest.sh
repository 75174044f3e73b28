#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest.sh STAGE BASE [JOB]: one guest job per call.
#
#   initramfs  pack busybox, the init script, the jobs and the binaries for
#              JOB (built before by scripts/guest-progs.sh; the bench job
#              also gets perf and its libraries)
#   boot       boot BASE under QEMU, run JOB, bring back its TAP and status
#
# The guest writes its results to a second serial port, so the console log
# stays the kernel's own.  "boot" exits non-zero when the job failed, when
# no exit status came back, when the guest ran another kernel than the
# patched one, or when the console shows a panic, oops, BUG or WARNING.
# The programs that run in the guest are in scripts/guest/.

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{

stage=$1
base=$2
job=${3:-selftests}
load_base "$base"
GUEST=$BDIR/guest
INITRD=$GUEST/initramfs-$job.cpio.gz
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1500}

# --- initramfs ---------------------------------------------------------

# Bench parameters: the seed's (100 threads, 20000 events, 100 us), or a
# quick smoke-test set with BENCH_QUICK=1.  The profiles: one modwait run
# per N of BENCH_PROFILE_NFDS (empty: none), BENCH_PROFILE_SECS per method,
# sampled at BENCH_PROFILE_FREQ Hz.
write_bench_params() {
	local quick=${BENCH_QUICK:-0}

	if [ "$quick" = 1 ]; then
		: "${BENCH_THREADS:=8}" "${BENCH_EVENTS:=400}" "${BENCH_REPEAT:=1}"
		: "${BENCH_MODWAIT_ARGS:=-r 1 -n 1,8,64 -u}" "${BENCH_TIMEOUT_ARGS:=-k 20}"
		: "${BENCH_PROFILE_SECS:=0.5}"
	fi
	cat <<-EOF
	THREADS=${BENCH_THREADS:-100}
	EVENTS=${BENCH_EVENTS:-20000}
	INTERVAL=${BENCH_INTERVAL:-100}
	REPEAT=${BENCH_REPEAT:-3}
	QUICK=$quick
	SOURCES="${BENCH_SOURCES:-pipe eventfd tcp}"
	MODWAIT_ARGS="${BENCH_MODWAIT_ARGS:--n 1,8,64 -u}"
	TIMEOUT_ARGS="${BENCH_TIMEOUT_ARGS:-}"
	PROFILE_NFDS="${BENCH_PROFILE_NFDS-1 8}"
	PROFILE_SECS=${BENCH_PROFILE_SECS:-2}
	PROFILE_FREQ=${BENCH_PROFILE_FREQ:-1000}
	EOF
}

# Debian's perf, with the shared libraries ldd finds for it.
add_perf() {
	local root=$1 perf lib

	perf=$(command -v perf) || die "perf not found (apt-get install linux-perf)"
	mkdir -p "$root/usr/bin"
	cp "$perf" "$root/usr/bin/perf"
	for lib in $(ldd "$perf" | grep -o '/[^ ]*'); do
		cp -L --parents "$lib" "$root/"
	done
}

# The race stress's planted faults (-F): each must fail the check named
# after it, at every ABI (see scripts/guest/run-selftests), with the
# binary's absolute path in the guest.
write_xfail() {
	local a abi s

	for a in $SELFTEST_ABIS; do
		abi=${a#*:}
		s=/selftests/epoll_race_stress$abi
		[ "${KSELFTEST_INTREE:-0}" = 1 ] && [ -z "$abi" ] &&
			s=/kselftest/filesystems/epoll/epoll_race_stress
		echo "xfail_race_drop$abi|$s -d 2 -t 5 -F drop|^not ok 3 no-churn: stranded=[1-9][0-9]* of written="
		echo "xfail_race_dup$abi|$s -d 2 -t 5 -F dup|^not ok 4 tokens exactly once: .* dup=[1-9][0-9]* missing=0 bogus=0\$"
		echo "xfail_race_hang$abi|$s -d 2 -t 5 -F hang|^not ok 6 watchdog: no thread hung"
	done
}

do_initramfs() {
	local root=$GUEST/root busybox

	busybox=$BUSYBOX
	[ -x "$busybox" ] || die "$busybox not found (scripts/deps.sh installs it)"
	file -L "$busybox" | grep -q 'statically linked' ||
		die "$busybox is not static (apt-get install busybox-static)"
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,jobs,selftests}
	cp "$busybox" "$root/bin/busybox"
	sed -e "s|@RESULT_TTY@|$RESULT_TTY|" \
	    -e "s|@RESULT_TTY_MAJMIN@|$RESULT_TTY_MAJMIN|" \
		"$TOP/scripts/guest/init" >"$root/init"
	chmod +x "$root/init"
	mkdir -p "$root/bench"
	cp -a "$GUEST/bench/." "$root/bench/"
	if [ "$job" = bench ]; then
		cp "$TOP/scripts/guest/run-bench" "$root/jobs/bench"
		write_bench_params >"$root/bench/params"
		add_perf "$root"
	elif [ "$job" = nginx ]; then
		# make bench's nginx scenario (scripts/nginx-pack.sh)
		add_perf "$root"
		"$TOP/scripts/nginx-pack.sh" pack "$base" "$root" || exit 1
	elif [ "$job" = stress ]; then
		cp "$TOP/scripts/guest/run-stress" "$root/jobs/stress"
		cp -a "$GUEST/selftests/." "$root/selftests/"
		# the native fuzzer and race stress, when built from the tree
		if [ -d "$GUEST/kselftest" ]; then
			cp "$GUEST/kselftest/filesystems/epoll/epoll_fuzz" \
			   "$GUEST/kselftest/filesystems/epoll/epoll_race_stress" \
			   "$root/selftests/"
		fi
		echo "STRESS_SECS=${STRESS_SECS:-600}" >"$root/selftests/stress-params"
	else
		cp "$TOP/scripts/guest/run-selftests" "$root/jobs/selftests"
		cp -a "$GUEST/selftests/." "$root/selftests/"
		# the in-tree tests, for run_kselftest.sh (do_kselftests)
		if [ -d "$GUEST/kselftest" ]; then
			mkdir -p "$root/kselftest"
			cp -a "$GUEST/kselftest/." "$root/kselftest/"
		fi
		cp "$TOP/scripts/guest/bench-smoke" "$root/selftests/bench_smoke"
		echo bench_smoke >>"$root/selftests/list"
		# the nginx smoke (scripts/nginx-pack.sh), on the host's arch
		# (it packs the host's nginx and ab); NGINX_SMOKE=0 leaves it out
		if nginx_smoke; then
			"$TOP/scripts/nginx-pack.sh" pack "$base" "$root" smoke || exit 1
			echo nginx_smoke >>"$root/selftests/list"
		fi
		write_xfail >"$root/selftests/xfail"
		# mainline's racy tests that may be rerun (selftests/retries-allowed.txt)
		python3 "$TOP/scripts/check-manifest.py" --retries "$base$ARCH_SUFFIX" \
			>"$root/selftests/retry" || exit 1
		cp "$TOP/scripts/guest/retry-failed" "$root/selftests/"
		# mainline's tests whose timing cannot hold on the debug
		# kernels (selftests/debug-excluded.txt): left out there only
		if [ "$DEBUG" = 1 ]; then
			python3 "$TOP/scripts/check-manifest.py" --debug-excluded \
				"$base$ARCH_SUFFIX" >"$root/selftests/debug-excluded" || exit 1
		fi
	fi
	chmod +x "$root/jobs/"*
	(cd "$root" && find . | sort | cpio -o -H newc --quiet) |
		gzip -1 >"$INITRD" || exit 1
	ls -l "$INITRD"
}

# nginx_smoke: whether the selftests job packs the nginx smoke (the scenario's
# check that a real server gets a 200 for every request in every wake
# mode): on by default, on the host's arch only (it packs the host's nginx
# and ab), off with NGINX_SMOKE=0.
nginx_smoke() {
	[ "${NGINX_SMOKE:-1}" = 1 ] && [ -z "$CROSS_COMPILE" ]
}

# --- boot ---------------------------------------------------------------

# KVM is used only when a guest really boots with it: /dev/kvm can exist
# while guests hang.  The probe boots this kernel with a job that only
# reports, under a short timeout, and the answer is kept for the run.
probe_accel() {
	local cache=$BUILD/accel dir

	if [ "$QEMU_KVM" != 1 ]; then
		echo tcg
		return
	fi
	if [ -n "${ACCEL:-}" ]; then
		echo "$ACCEL"
		return
	fi
	if [ -f "$cache" ]; then
		cat "$cache"
		return
	fi
	echo tcg >"$cache"
	if [ -w /dev/kvm ]; then
		dir=$(mktemp -d)
		if timeout -k 5 "${KVM_PROBE_TIMEOUT:-30}" "$QEMU_BIN" -nodefaults \
			-display none -no-reboot -machine "$QEMU_MACHINE,accel=kvm" \
			-cpu "$QEMU_CPU_KVM" -smp 1 -m 256 -kernel "$BDIR/bzImage" \
			-initrd "$INITRD" \
			-append "$KCMDLINE_CONSOLE $KCMDLINE_POLICY epoll.job=none" \
			-serial "file:$dir/console" -serial "file:$dir/result" \
			>"$dir/qemu" 2>&1 && grep -q '^guest-exit-status:' "$dir/result"; then
			echo kvm >"$cache"
		fi
		rm -rf "$dir"
	fi
	cat "$cache"
}

run_qemu() {
	local accel=$1 cpu=$QEMU_CPU_TCG

	[ "$accel" = kvm ] && cpu=$QEMU_CPU_KVM
	# shellcheck disable=SC2046
	timeout -k 10 "$BOOT_TIMEOUT" "$QEMU_BIN" -nodefaults -display none \
		-no-reboot -machine "$QEMU_MACHINE,accel=$accel" -cpu "$cpu" \
		-smp "$QEMU_SMP" -m "$QEMU_MEM" \
		-kernel "$BDIR/bzImage" -initrd "$INITRD" \
		-append "$KCMDLINE_CONSOLE $KCMDLINE_POLICY epoll.job=$job ${KCMDLINE_EXTRA:-}" \
		$(qemu_channels "$RUN/console.log" "$RUN/results.log")
}

# Console lines that fail a run wherever they appear (x86's and arm64's
# wording: "Call Trace:" and "Call trace:").  The debug kernels
# add lockdep, KASAN and SLUB reports; their boot banners (lockdep's
# copyright, KASAN's "initialized") must not match.  kmemleak is judged
# by the guest's own scan (check_debug), which tells the job's leaks from
# boot's; its console line "N new suspected memory leaks" counts both.
SPLAT_RE='Kernel panic|Oops|BUG:|WARNING:|general protection fault|Call Trace:|Call trace:|Unable to handle kernel|Internal error:|INFO: task .* blocked|possible (circular|recursive) locking|inconsistent lock state|suspicious RCU usage|lock held when returning|locking correctness validator|BUG: KASAN|UBSAN|soft lockup|hard LOCKUP|rcu_sched self-detected stall|RCU stall|list_add corruption|list_del corruption|BUG [^ ]+ \(.*\): |Poison overwritten|Redzone|Object padding|Freepointer corrupt|ODEBUG: .*object type'

check_console() {
	local log=$RUN/console.log rest=$RUN/console.unexpected rc=0 n

	# A kernel test's own warning (test_wait_rr), bracketed by its marker
	# lines, is expected (once); everything outside them is held to SPLAT_RE.
	if [ -n "${EXPECTED_WARN_BEGIN:-}" ]; then
		n=$(awk -v b="$EXPECTED_WARN_BEGIN" -v e="$EXPECTED_WARN_END" \
			-v at="${EXPECTED_WARN_AT:-}" '
			index($0, b) { in_ = 1; next }
			index($0, e) { in_ = 0 }
			in_ && /WARNING:/ { n++; if (!index($0, at)) n += 100 }
			END { print n + 0 }' "$log")
		if [ "$n" != 1 ]; then
			echo "console: not exactly one warning, at ${EXPECTED_WARN_AT:-anywhere}, between the markers of the expected one ($log):"
			sed -n "/$EXPECTED_WARN_BEGIN/,/$EXPECTED_WARN_END/p" "$log" | head -n 40
			rc=1
		fi
	fi
	awk -v b="${EXPECTED_WARN_BEGIN:-}" -v e="${EXPECTED_WARN_END:-}" '
		b != "" && index($0, b) { skip = 1 }
		!skip { print }
		e != "" && index($0, e) { skip = 0 }' "$log" >"$rest"
	if grep -qE "$SPLAT_RE" "$rest"; then
		echo "console shows a splat ($log):"
		grep -nE -B2 -A12 "$SPLAT_RE" "$rest" | head -n 80
		rc=1
	fi
	if [ -n "${CONSOLE_REQUIRE:-}" ] && ! grep -qF "$CONSOLE_REQUIRE" "$log"; then
		echo "console lacks '$CONSOLE_REQUIRE' ($log):"
		grep -F "${CONSOLE_REQUIRE%%:*}" "$log" | head -n 10
		rc=1
	fi
	return $rc
}

# check_debug: on a debug kernel the guest must have scanned for leaks
# (none found) and lockdep must still be armed after the job.
check_debug() {
	local res=$RUN/results.log leaks locks more rc=0

	[ "$DEBUG" = 1 ] || return 0
	leaks=$(sed -n 's/^guest-kmemleak: //p' "$res" | tail -n 1)
	locks=$(sed -n 's/^guest-debug-locks: //p' "$res" | tail -n 1)
	if [ -z "$leaks" ]; then
		echo "FAIL: no kmemleak scan came back from the debug kernel"
		rc=1
	elif [ "$leaks" != 0 ]; then
		echo "FAIL: kmemleak found $leaks unreferenced objects allocated during the job (each below, with its backtrace, symbolized here against $OBJ/vmlinux):"
		sed -n 's/^kmemleak-job: /  /p' "$res" | head -n 4000 |
			python3 "$TOP/scripts/symbolize.py" "$OBJ/vmlinux" "$SRC"
		more=$(sed -n 's/^kmemleak-job-unprinted: //p' "$res" | tail -n 1)
		[ "${more:-0}" = 0 ] ||
			echo "(and $more more of the job's objects: the guest sends the first 200 whole, then only counts)"
		echo "(and $(sed -n 's/^guest-kmemleak-boot: //p' "$res" | tail -n 1) objects from before the job, not counted; the first few:)"
		sed -n 's/^kmemleak-boot-sample: /  /p' "$res"
		rc=1
	fi
	if [ "$locks" != 1 ]; then
		echo "FAIL: lockdep is not armed after the job (debug_locks=${locks:-missing}): it reported something, or is not built in"
		rc=1
	fi
	return $rc
}

# extract_gcda: a coverage kernel's counters (scripts/guest/init's
# gcov_dump) from the result channel into $RUN/gcda, under the path the
# kernel gave them (the object tree's absolute path, then the object's).
extract_gcda() {
	local res=$RUN/results.log tmp=$RUN/gcda.b64 n path

	[ "$COVERAGE" = 1 ] || return 0
	rm -rf "$RUN/gcda" "$tmp"
	mkdir -p "$RUN/gcda" "$tmp"
	awk -v tmp="$tmp" '
		/^gcov-gcda: / { n++; out = tmp "/" n; print substr($0, 12) >(tmp "/index"); next }
		/^gcov-end$/ { close(out); out = ""; next }
		out != "" { print >out }' "$res" || return 1
	[ -f "$tmp/index" ] || { echo "FAIL: no gcov data came back from the coverage kernel"; return 1; }
	n=0
	while read -r path; do
		n=$((n + 1))
		path=$RUN/gcda/${path#/}
		mkdir -p "$(dirname "$path")"
		base64 -d <"$tmp/$n" >"$path" || return 1
	done <"$tmp/index"
	rm -rf "$tmp"
	echo "gcov: $n gcda files in $RUN/gcda"
}

summarize() {
	local res=$RUN/results.log pass fail skip bfail bskip status uname retried

	status=$(sed -n 's/^guest-exit-status: //p' "$res" | tail -n 1)
	uname=$(sed -n 's/^guest-uname: //p' "$res" | tail -n 1)
	pass=$(grep -cE '^# ok [0-9]+ ' "$res" | head -n 1)
	skip=$(grep -cE '^# ok [0-9]+ .*# SKIP' "$res")
	fail=$(grep -cE '^# not ok [0-9]+ ' "$res")
	bfail=$(grep -cE '^not ok [0-9]+ ' "$res")
	bskip=$(grep -cE '^ok [0-9]+ .*# SKIP' "$res")
	pass=$((pass - skip))
	# a mainline test that failed and then passed at least four of its
	# five reruns (scripts/guest/retry-failed, selftests/retries-allowed.txt;
	# check-manifest.py holds each to it)
	retried=$(grep -cE '^# retry: \S+ \S+: passed [45] of 5 reruns$' "$res")
	pass=$((pass + retried))
	fail=$((fail - retried))
	bfail=$((bfail - $(grep -cE '^# retry: \S+: forgiven ' "$res")))
	{
		echo "base=$base"
		echo "arch=$ARCH"
		echo "source=$(cat "$BDIR/source-version" 2>/dev/null)"
		echo "uname=${uname:-none}"
		echo "accel=$ACCEL_USED"
		echo "cpus=$(sed -n 's/^guest-cpus: //p' "$res")"
		echo "passed=$pass"
		echo "failed=$fail"
		echo "skipped=$((skip + bskip))"
		echo "binaries_failed=$bfail"
		echo "binaries_skipped=$bskip"
		echo "retried=$retried"
		echo "status=${status:-none}"
		echo "seconds=$BOOT_SECS"
		echo "debug=$DEBUG"
		echo "kmemleak=$(sed -n 's/^guest-kmemleak: //p' "$res" | tail -n 1)"
		echo "kmemleak_boot=$(sed -n 's/^guest-kmemleak-boot: //p' "$res" | tail -n 1)"
		echo "debug_locks=$(sed -n 's/^guest-debug-locks: //p' "$res" | tail -n 1)"
		echo "splats=$(grep -cE "$SPLAT_RE" "$RUN/console.unexpected")"
	} >"$RUN/summary"
}

do_boot() {
	local rc=0 uname status start mrc crc

	RUN=$BDIR/run-$job
	rm -rf "$RUN"
	mkdir -p "$RUN"
	ACCEL_USED=$(probe_accel)
	echo "accelerator: $ACCEL_USED"
	start=$(date +%s)
	run_qemu "$ACCEL_USED"
	echo "qemu exit: $?"
	BOOT_SECS=$(($(date +%s) - start))
	touch "$RUN/results.log" "$RUN/console.log"
	# the guest's tty turns \n into \r\n
	sed -i 's/\r$//' "$RUN/results.log" "$RUN/console.log"
	cat "$RUN/results.log"
	check_console >"$RUN/console-check.txt"
	crc=$?
	summarize
	status=$(sed -n 's/^status=//p' "$RUN/summary")
	uname=$(sed -n 's/^uname=//p' "$RUN/summary")
	if [ "$status" = none ]; then
		echo "FAIL: no exit status came back from the guest (timeout ${BOOT_TIMEOUT}s, hang or crash); console tail:"
		tail -n 40 "$RUN/console.log"
		rc=1
	elif [ "$status" != 0 ]; then
		echo "FAIL: guest job exited $status"
		grep -E '^(# )?not ok' "$RUN/results.log"
		rc=1
	fi
	case $uname in
	*"$LOCALVERSION"*) ;;
	*) echo "FAIL: guest ran '$uname', not a kernel with localversion $LOCALVERSION"; rc=1 ;;
	esac
	cat "$RUN/console-check.txt"
	[ $crc = 0 ] || rc=1
	check_debug || rc=1
	extract_gcda || rc=1
	[ "$(sed -n 's/^failed=//p' "$RUN/summary")" = 0 ] || rc=1
	# A complete run, not just a clean one: every binary of the manifest,
	# each with its number of passed tests, and no unexplained skip.
	if [ "$job" = selftests ]; then
		MANIFEST_EXCLUDE=$(nginx_smoke || echo nginx_smoke) DEBUG=$DEBUG \
		python3 "$TOP/scripts/check-manifest.py" "$base$ARCH_SUFFIX" "$RUN/results.log" \
			>"$RUN/manifest.txt" 2>&1
		mrc=$?
		cat "$RUN/manifest.txt"
		echo "manifest=$([ $mrc = 0 ] && echo pass || echo FAIL)" >>"$RUN/summary"
		[ $mrc = 0 ] || rc=1
	fi
	echo "result=$([ $rc = 0 ] && echo pass || echo FAIL)" >>"$RUN/summary"
	cat "$RUN/summary"
	return $rc
}

case $stage in
initramfs) do_initramfs ;;
boot)      do_boot ;;
*)         die "unknown stage $stage" ;;
esac
exit
}
