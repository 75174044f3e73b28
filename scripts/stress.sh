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
BASES=${BASES:-"v3.19 6.12"}
S=$TOP/scripts
RESULTS=${RESULTS:-$TOP/results}
export STRESS_SECS=${STRESS_SECS:-600}
# the commit the results come from, taken when the run starts
RUN_REV=$(tree_rev)
rm -f "$TIMINGS"
mkdir -p "$BUILD"
# the run itself plus boot, scans and a margin for a slow debug kernel
export BOOT_TIMEOUT=${BOOT_TIMEOUT:-$((STRESS_SECS * 2 + 900))}

run_step "$BUILD/logs/deps.log" "deps: apt packages" "$S/deps.sh" test || exit 1
STEP_BASE=6.12 run_step "$(bdir 6.12)/logs/source.log" "6.12: source" \
	"$S/kernel.sh" source 6.12 || exit 1

declare -A state
for b in $BASES; do
	d=$(bdir "$b")
	mkdir -p "$d/logs"
	STEP_BASE=$b$VARIANT
	state[$b]=FAIL
	base_source "$b"
	st=$?
	if [ $st = 3 ]; then
		state[$b]="SKIPPED ($(cat "$d/skip-reason"))"
		continue
	fi
	[ $st = 0 ] || continue
	build_base "$b" &&
	run_step "$d/logs/initramfs-stress.log" "$b-debug: initramfs" \
		"$S/guest.sh" initramfs "$b" stress || continue
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
done

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
	$(cd "$S/bases" && ls -r -- *.conf | sed 's/\.conf$//') >"$RESULTS/stress.md" &&
	echo "table of bad-input classes and totals: $RESULTS/stress.md"
exit $rc
}
