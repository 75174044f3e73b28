#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# coverage.sh: the whole "make coverage" job, for every base in $BASES.
#
# Builds one more kernel per base, build/BASE-coverage, with gcov on the
# objects the series changes (kernel-config/coverage.config; COVERAGE_OBJS
# in scripts/bases/BASE.conf), boots it, runs the selftests (the same job,
# held to the same checks as make test), brings the gcov counters back
# from the guest's debugfs, and reports which lines the series adds
# (COVERAGE_PATCHES, attributed from the patches, not whole files) ran.
# Writes results/coverage.md.  Fails when a base is below the goal (95 %
# of the added executable lines), when a line that never ran has no
# reason in selftests/coverage-reasons.txt, or when a base was skipped.

export COVERAGE=1
. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{
ALL_BASES=$(all_bases)
BASES=${BASES:-$ALL_BASES}
S=$TOP/scripts
RESULTS=${RESULTS:-$TOP/results}
REASONS=$TOP/selftests/coverage-reasons.txt
REV=$(tree_rev)
T0=$(date +%s)
rm -f "$TIMINGS"
mkdir -p "$BUILD"

job_start test || exit 1

declare -A state line
rc=0
# coverage_base BASE STATUS: for_each_base's step.
coverage_base() {
	local b=$1 d st

	d=$(bdir "$b")
	state[$b]=FAIL
	rm -f "$d/coverage.md" "$d/coverage.json"
	case $2 in
	ok) ;;
	skipped) state[$b]=SKIPPED; line[$b]="SKIPPED: $(cat "$d/skip-reason")"; rc=3; return 0 ;;
	unsupported) state[$b]=SKIPPED; line[$b]="SKIPPED: not on $GUEST_ARCH: $WHY_UNSUPPORTED"; rc=3; return 0 ;;
	*) line[$b]="source failed"; rc=1; return 0 ;;
	esac
	if ! build_base "$b" ||
	   ! run_step "$d/logs/initramfs.log" "$b$VARIANT: initramfs" "$S/guest.sh" initramfs "$b"; then
		line[$b]="build failed (see $d/logs)"
		rc=1
		return 0
	fi
	run_step "$d/logs/boot.log" "$b$VARIANT: boot + selftests in QEMU" "$S/guest.sh" boot "$b" selftests ||
		{ line[$b]="the selftests failed on the coverage kernel (see $d/logs/boot.log)"; rc=1; }
	(
		load_base "$b"
		export COVERAGE_OBJS COVERAGE_PATCHES
		python3 "$S/coverage-report.py" "$b" "$SRC" "$OBJ" "$d/run-selftests/gcda" \
			"$TOP/patches/$b" "$REASONS" "$d/coverage.md" "$d/coverage.json" \
			>"$d/logs/coverage-report.log" 2>&1
	)
	st=$?
	echo "commit $REV, $(date -u '+%F %H:%M UTC')" >"$d/coverage.stamp"
	cat "$d/logs/coverage-report.log"
	if [ $st = 0 ] && [ -z "${line[$b]}" ]; then
		state[$b]=pass
	else
		[ $st = 0 ] || line[$b]="${line[$b]:+${line[$b]}; }coverage: $(tail -n 1 "$d/logs/coverage-report.log")"
		rc=1
	fi
}
for_each_base coverage_base

mkdir -p "$RESULTS"
{
	echo "# Coverage of the lines the series adds"
	echo
	echo "\`make coverage\` (scripts/coverage.sh): one more kernel per base with"
	echo "gcov on the objects the series changes only, the selftests run in it"
	echo "as in \`make test\` (then the kernel's own \`test_wait_rr\`, which the"
	echo "counts include), and the counters read back from debugfs.  Counted:"
	echo "the lines of the patched tree that the feature patches wrote (git"
	echo "blame over one commit per patch, rebuilt from quilt's backups) and"
	echo "for which gcc emitted code.  Lines with no code of their own in this"
	echo "build (declarations, braces, comments, code configured out, lines"
	echo "folded into another by the optimizer) are not counted."
	echo
	echo "- date: $(date -u '+%F %H:%M UTC')"
	echo "- commit: $REV"
	echo "- filters: BASES=\"$BASES\""
	echo "- host: $(nproc) cores, accelerator $(cat "$BUILD/accel" 2>/dev/null || echo "${ACCEL:-?}")"
	echo "- gcc: $(gcc -dumpfullversion), gcov: $(gcov --version | head -n 1)"
	echo "- total wall time: $(( $(date +%s) - T0 ))s"
	echo
	for b in $ALL_BASES; do
		d=$(bdir "$b")
		case " $BASES " in
		*" $b "*) ;;
		*)	# not run now: an earlier run's section, if this tree has one
			[ -f "$d/coverage.md" ] && [ -f "$d/coverage.stamp" ] || continue
			echo "(Not run this time: the $b section below is from an earlier run, $(cat "$d/coverage.stamp").)"
			echo
			cat "$d/coverage.md"
			echo
			continue ;;
		esac
		if [ -f "$d/coverage.md" ]; then
			echo "Measured at $(cat "$d/coverage.stamp")."
			echo
			cat "$d/coverage.md"
		else
			echo "## $b"
			echo
			echo "Not measured: ${line[$b]}."
		fi
		[ -n "${line[$b]}" ] && [ -f "$d/coverage.md" ] && { echo; echo "Run: ${line[$b]}."; }
		echo
	done
	echo "Reasons for lines that never ran: \`selftests/coverage-reasons.txt\`."
} >"$RESULTS/coverage.md"

echo
echo "==================== make coverage summary ===================="
for b in $BASES; do
	d=$(bdir "$b")
	printf '%-6s %-8s %s\n' "$b" "${state[$b]}" \
		"$( [ -f "$d/logs/coverage-report.log" ] && tail -n 1 "$d/logs/coverage-report.log")${line[$b]:+ (${line[$b]})}"
done
echo "report: $RESULTS/coverage.md; logs: $BUILD/<base>$VARIANT/logs"
echo "stage timings (seconds):"
awk '{ printf "  %-15s %-40s %5s\n", $1, $2, $3 }' "$TIMINGS"
exit $rc
}
