#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# stress.sh: the whole "make stress" job, for every base in $BASES.
#
# Builds the debug kernels (kernel-config/debug*.config: lockdep, SLUB
# debugging, kmemleak, hung-task and soft-lockup detectors, KASAN on 6.12),
# boots each under QEMU and runs the fuzzer and the race stress for
# STRESS_SECS seconds (default 600) per base.  Fails on any failed check,
# console splat, kmemleak report, disarmed lockdep or missing exit status.
# Writes results/<base>/stress.txt: the guest output and a summary.

# the debug kernels: lib.sh picks build/<base>-debug from DEBUG
export DEBUG=1
. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{
BASES=${BASES:-$(all_bases)}
S=$TOP/scripts
RESULTS=${RESULTS:-$TOP/results}
export STRESS_SECS=${STRESS_SECS:-600}
# the commit the results come from, taken when the run starts
RUN_REV=$(tree_rev)
rm -f "$TIMINGS"
mkdir -p "$BUILD"
# the run itself plus boot, scans and a margin for a slow debug kernel
export BOOT_TIMEOUT=${BOOT_TIMEOUT:-$((STRESS_SECS * 2 + 900))}

job_start test || exit 1

declare -A state
# stress_base BASE STATUS: for_each_base's step.
stress_base() {
	local b=$1 d

	d=$(bdir "$b")
	state[$b]=FAIL
	case $2 in
	ok) ;;
	skipped) state[$b]="SKIPPED ($(cat "$d/skip-reason"))"
		 return 0 ;;
	unsupported) state[$b]="SKIPPED (not on $GUEST_ARCH: $WHY_UNSUPPORTED)"
		 return 0 ;;
	*) return 1 ;;
	esac
	build_base "$b" &&
	run_step "$d/logs/initramfs-stress.log" "$b-debug: initramfs" \
		"$S/guest.sh" initramfs "$b" stress || return 1
	msg "$b-debug: stress for ${STRESS_SECS}s (progress: $d/run-stress/results.log)"
	run_step "$d/logs/stress.log" "$b-debug: fuzz + race stress in QEMU" \
		"$S/guest.sh" boot "$b" stress && state[$b]=pass
	mkdir -p "$RESULTS/$b"
	{
		echo "# make stress on $b: $(date -u +%F), $(nproc) host cores, $(sed -n 's/^accel=//p' "$d/run-stress/summary")"
		echo "# commit: $RUN_REV, STRESS_SECS=$STRESS_SECS"
		echo "# source: $(cat "$d/source-version"), kernel-config: common $b debug debug-$b"
		echo "# result: ${state[$b]}"
		sed 's/^/# /' "$d/run-stress/summary"
		cat "$d/run-stress/results.log"
	} >"$RESULTS/$b/stress.txt"
}
for_each_base stress_base

echo
echo "==================== make stress summary ===================="
rc=0
for b in $BASES; do
	d=$(bdir "$b")
	echo "$b: ${state[$b]}"
	case ${state[$b]} in
	pass) ;;
	SKIPPED*) echo "!!! $b was SKIPPED, not stressed"; continue ;;
	*) rc=1 ;;
	esac
	[ -f "$d/run-stress/summary" ] || continue
	sed -n 's/^[# ]*\(fuzz: seed=.*\)/  \1/p; s/^[# ]*\(stress: seed=.*\)/  \1/p' "$d/run-stress/results.log"
	echo "  uname=$(sed -n 's/^uname=//p' "$d/run-stress/summary") seconds=$(sed -n 's/^seconds=//p' "$d/run-stress/summary") kmemleak=$(sed -n 's/^kmemleak=//p' "$d/run-stress/summary") debug_locks=$(sed -n 's/^debug_locks=//p' "$d/run-stress/summary") splats=$(sed -n 's/^splats=//p' "$d/run-stress/summary")"
	echo "  full output: $RESULTS/$b/stress.txt"
done
# every base with results, so that a run of one base keeps the other's
# shellcheck disable=SC2046
python3 "$S/stress-report.py" "$RESULTS" \
	$(all_bases) >"$RESULTS/stress.md" &&
	echo "table of bad-input classes and totals: $RESULTS/stress.md"
exit $rc
}
