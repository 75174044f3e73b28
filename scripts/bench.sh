#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh: the whole "make bench" job, for every base in $BASES.
#
# Builds a third kernel per base from the same patched source, the bench
# kernel (build/<base>-bench: tinyconfig plus the fragments of make test,
# then kernel-config/bench.config and bench-<base>.config, which make it
# resemble a distribution's), boots it, runs every benchmark in the guest
# under perf stat (software events: TCG has no PMU), records a cpu-clock
# profile of each bench/modwait method at N=1 and N=8 and resolves its
# kernel samples here against the bench kernel's vmlinux, and writes
# results/<base>/: CSV files, report.md, PNG plots, the profiles and the
# kernel's .config.
#
# Parameters (environment): BENCH_QUICK=1 for a short smoke run;
# BENCH_THREADS, BENCH_EVENTS, BENCH_INTERVAL (us), BENCH_REPEAT (perf stat
# -r), BENCH_SOURCES ("pipe eventfd tcp"), BENCH_MODWAIT_ARGS,
# BENCH_TIMEOUT_ARGS, BENCH_PROFILE_NFDS ("1 8"), BENCH_PROFILE_SECS (2 s
# per method), BENCH_PROFILE_FREQ (1000 Hz).  Defaults are the seed's: 100
# threads, 20000 events, 100 us apart, 3 repeats.

# the bench kernels: lib.sh picks build/<base>-bench from BENCH
export BENCH=1
. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{
BASES=${BASES:-$(all_bases)}
S=$TOP/scripts
RESULTS=${RESULTS:-$TOP/results}
rm -f "$TIMINGS"
mkdir -p "$BUILD"
# A bench boot can run for a long time under TCG.
export BOOT_TIMEOUT=${BOOT_TIMEOUT:-14400}

job_start bench || exit 1

# bench_base BASE STATUS: for_each_base's step.
bench_base() {
	local b=$1 d out frags

	d=$(bdir "$b")
	case $2 in
	ok) ;;
	skipped) echo "!!! $b was SKIPPED, no results written: $(cat "$d/skip-reason")"
		 return 0 ;;
	unsupported) echo "!!! $b does not build for $GUEST_ARCH: $WHY_UNSUPPORTED"
		 return 0 ;;
	*) return 1 ;;
	esac
	build_base "$b" &&
	run_step "$d/logs/initramfs-bench.log" "$b$VARIANT: initramfs with perf" \
		"$S/guest.sh" initramfs "$b" bench &&
	run_step "$d/logs/bench.log" "$b$VARIANT: benchmarks in QEMU" \
		"$S/guest.sh" boot "$b" bench || return 1

	out=$RESULTS/$b
	# results/<base> also holds make stress's stress.txt: replace only
	# what make bench writes
	mkdir -p "$out"
	find "$out" -mindepth 1 -maxdepth 1 ! -name stress.txt -exec rm -rf {} +
	cp "$d/obj/.config" "$out/kernel.config"
	# the fragments kernel.sh merged, in its order
	frags=$(load_base "$b"
		for f in $(fragment_names); do
			printf ' %s' "$f.config"
		done)
	BENCH_BASE=$b \
	BENCH_ACCEL=$(sed -n 's/^accel=//p' "$d/run-bench/summary") \
	BENCH_DATE=$(date -u +%Y-%m-%dT%H:%MZ) \
	BENCH_SOURCE_VERSION="$(cat "$d/source-version")" \
	BENCH_KCONFIG="bench config (build/$b$VARIANT, kernel-config/:$frags)" \
	BENCH_VMLINUX=$d/obj/vmlinux \
	BENCH_PROFILE_DIR=$d/run-bench/profile \
	run_step "$d/logs/bench-report.log" "$b$VARIANT: report and profiles" \
		python3 "$S/bench-report.py" "$d/run-bench/results.log" "$out" ||
		return 1
	# the profiles' perf.data went to $d/run-bench/profile; not their base64
	sed '/^=== profile-data: /,/^=== profile-end: /{/^=== profile-/!d}' \
		"$d/run-bench/results.log" >"$out/guest-output.txt"
	# the nginx scenario, results/<base>/nginx.md (BENCH_NGINX=0: skip it)
	if [ "${BENCH_NGINX:-1}" = 1 ]; then
		"$S/bench-nginx.sh" run "$b" || return 1
	fi
	msg "$b: results in $out"
}

rc=0
for_each_base bench_base || rc=1
echo
for b in $BASES; do
	[ -f "$RESULTS/$b/report.md" ] && { echo; cat "$RESULTS/$b/report.md"; }
done
exit $rc
}
