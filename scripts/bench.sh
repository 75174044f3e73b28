#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh: the whole "make bench" job, for every base in $BASES.
#
# Boots the same patched kernels as make test, runs every benchmark in the
# guest under perf stat (software events: TCG has no PMU), and writes
# results/<base>/: CSV files, report.md and PNG plots.
#
# Parameters (environment): BENCH_QUICK=1 for a short smoke run;
# BENCH_THREADS, BENCH_EVENTS, BENCH_INTERVAL (us), BENCH_REPEAT (perf stat
# -r), BENCH_SOURCES ("pipe eventfd tcp"), BENCH_MODWAIT_ARGS,
# BENCH_TIMEOUT_ARGS.  Defaults are the seed's: 100 threads, 20000 events,
# 100 us apart, 3 repeats.

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{
BASES=${BASES:-"v3.19 6.12"}
S=$TOP/scripts
RESULTS=${RESULTS:-$TOP/results}
rm -f "$TIMINGS"
mkdir -p "$BUILD"
# A bench boot can run for a long time under TCG.
export BOOT_TIMEOUT=${BOOT_TIMEOUT:-14400}

run_step "$BUILD/logs/deps-bench.log" "deps: apt packages" "$S/deps.sh" bench || exit 1
STEP_BASE=6.12 run_step "$BUILD/6.12/logs/source.log" "6.12: source" \
	"$S/kernel.sh" source 6.12 || exit 1

rc=0
for b in $BASES; do
	mkdir -p "$BUILD/$b/logs"
	STEP_BASE=$b
	base_source "$b"
	st=$?
	if [ $st = 3 ]; then
		echo "!!! $b was SKIPPED, no results written: $(cat "$BUILD/$b/skip-reason")"
		continue
	fi
	[ $st = 0 ] || { rc=1; continue; }
	build_base "$b" &&
	run_step "$BUILD/$b/logs/initramfs-bench.log" "$b: initramfs with perf" \
		"$S/guest.sh" initramfs "$b" bench &&
	run_step "$BUILD/$b/logs/bench.log" "$b: benchmarks in QEMU" \
		"$S/guest.sh" boot "$b" bench || { rc=1; continue; }

	out=$RESULTS/$b
	rm -rf "$out"
	mkdir -p "$out"
	BENCH_BASE=$b \
	BENCH_ACCEL=$(sed -n 's/^accel=//p' "$BUILD/$b/run-bench/summary") \
	BENCH_DATE=$(date -u +%Y-%m-%dT%H:%MZ) \
	BENCH_SOURCE_VERSION="$(cat "$BUILD/$b/source-version")" \
	run_step "$BUILD/$b/logs/bench-report.log" "$b: report" \
		python3 "$S/bench-report.py" "$BUILD/$b/run-bench/results.log" "$out" ||
		rc=1
	cp "$BUILD/$b/run-bench/results.log" "$out/guest-output.txt"
	msg "$b: results in $out"
done
echo
for b in $BASES; do
	[ -f "$RESULTS/$b/report.md" ] && { echo; cat "$RESULTS/$b/report.md"; }
done
exit $rc
}
