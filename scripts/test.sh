#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# test.sh: the whole "make test" job, for every base in $BASES.
#
# For each base: source, quilt push, config, bzImage, headers, selftests,
# initramfs, boot under QEMU; then one summary for all bases.  A base whose
# source cannot be found (v3.19 on a machine without it) is SKIPPED, loudly,
# and never counted as passed: the job then exits 3, unless the user
# narrowed BASES on the make command line (BASES_ORIGIN=command line).
# check-patches always checks every series.

. "$(dirname "$0")/lib.sh"

# The whole job is one compound command: bash reads it all before running
# it, so editing this file during a run cannot change that run.
{

ALL_BASES="v3.19 6.12"
BASES=${BASES:-$ALL_BASES}
# Only a narrowing on the command line is a choice; BASES inherited from
# the environment must not quietly drop a base from a run that looks green.
if [ "${BASES_ORIGIN:-}" = "command line" ]; then
	REQUIRED=$BASES
else
	REQUIRED=$ALL_BASES
fi
S=$TOP/scripts
rm -f "$TIMINGS" "$BUILD"/accel
mkdir -p "$BUILD"

run_step "$BUILD/logs/deps.log" "deps: apt packages" "$S/deps.sh" test || exit 1
run_step "$BUILD/logs/man.log" "man pages: lint" "$S/lint-man.sh" || exit 1

declare -A state reason

# The selftests use the 6.12 tree's kselftest_harness.h, so its source is
# needed even when only v3.19 is tested.
STEP_BASE=6.12 run_step "$BUILD/6.12/logs/source.log" "6.12: source" \
	"$S/kernel.sh" source 6.12 || exit 1

pipeline() {
	local b=$1 st d

	d=$(bdir "$b")
	STEP_BASE=$b$VARIANT
	rm -rf "$d/run-selftests"
	state[$b]=FAIL
	base_source "$b"
	case $? in
	0) ;;
	3) state[$b]=SKIPPED
	   reason[$b]=$(cat "$d/skip-reason")
	   return 0 ;;
	*) return 1 ;;
	esac
	build_base "$b" &&
	run_step "$d/logs/initramfs.log" "$b$VARIANT: initramfs" "$S/guest.sh" initramfs "$b" || return 1
	run_step "$d/logs/boot.log" "$b$VARIANT: boot + selftests in QEMU" "$S/guest.sh" boot "$b" selftests
	st=$?
	[ $st = 0 ] && state[$b]=pass
	if [ $st != 0 ] && [ -f "$d/run-selftests/summary" ]; then
		sed -n '/^FAIL/,$p;/^console shows/,$p' "$d/logs/boot.log" | head -n 100
		grep '^MANIFEST: ' "$d/logs/boot.log" | head -n 60
	fi
	return 0
}

for b in $BASES; do
	mkdir -p "$(bdir "$b")/logs"
	pipeline "$b"
done

check_rc=0
if [ "$DEBUG" = 1 ]; then
	msg "check-patches: not run with DEBUG=1 (the series is the same; make check-patches)"
else
	# Every series, whatever was booted: it needs no kernel build.
	msg "check-patches on: $ALL_BASES"
	STEP_BASE=all run_step "$BUILD/logs/check-patches.log" "check-patches" \
		"$S/check-patches.sh" $ALL_BASES || check_rc=1
fi

# --- summary -------------------------------------------------------------

tp=0; tf=0; ts=0; bad=0
echo
echo "==================== make test summary ===================="
printf '%-6s %-8s %-24s %-6s %6s %6s %7s %-8s  %s\n' base result "uname -r" accel passed failed skipped manifest source
for b in $BASES; do
	sum=$(bdir "$b")/run-selftests/summary
	if [ "${state[$b]}" = SKIPPED ]; then
		printf '%-6s %-8s %s\n' "$b" SKIPPED "${reason[$b]}"
		continue
	fi
	if [ ! -f "$sum" ] || [ "${state[$b]}" = FAIL ] && [ ! -f "$sum" ]; then
		printf '%-6s %-8s %s\n' "$b" FAIL "did not reach the boot stage (see $(bdir "$b")/logs)"
		bad=1
		continue
	fi
	get() { sed -n "s/^$1=//p" "$sum"; }
	printf '%-6s %-8s %-24s %-6s %6s %6s %7s %-8s  %s\n' "$b" "${state[$b]}" \
		"$(get uname)" "$(get accel)" "$(get passed)" "$(get failed)" \
		"$(get skipped)" "$(get manifest)" "$(get source)"
	tp=$((tp + $(get passed))); tf=$((tf + $(get failed))); ts=$((ts + $(get skipped)))
	[ "${state[$b]}" = pass ] || bad=1
done
missing=
for b in $REQUIRED; do
	case " $BASES " in
	*" $b "*) [ "${state[$b]}" = SKIPPED ] && missing="$missing $b" ;;
	*) missing="$missing $b"; reason[$b]="not in BASES=\"$BASES\" (from the environment; narrow it on the make command line to choose)" ;;
	esac
done
for b in $missing; do
	echo
	echo "!!! $b was SKIPPED, not tested: ${reason[$b]}"
done
for b in $ALL_BASES; do
	case " $REQUIRED " in
	*" $b "*) ;;
	*) echo "note: $b not tested: BASES=\"$BASES\" was narrowed on the command line" ;;
	esac
done
echo
echo "wake-mode fairness, 64-bit run (per-waiter counts; jain=1.000 is perfectly even):"
for b in $BASES; do
	res=$(bdir "$b")/run-selftests/results.log
	[ -f "$res" ] || continue
	awk -v b="$b" '/^# selftests: epoll: / { bin = $4 }
		bin !~ /_x?32$/ && sub(/^[# ]*spread: /, "") { print "  " b "  " $0 }' "$res"
done
echo
echo "stage timings (seconds):"
awk '{ printf "  %-6s %-40s %5s\n", $1, $2, $3 }' "$TIMINGS"
echo
if [ "$DEBUG" = 1 ]; then
	echo "debug kernels (kernel-config/debug*.config):"
	for b in $BASES; do
		sum=$(bdir "$b")/run-selftests/summary
		[ -f "$sum" ] || continue
		echo "  $b: kmemleak objects leaked by the job=$(sed -n 's/^kmemleak=//p' "$sum") (older, boot's: $(sed -n 's/^kmemleak_boot=//p' "$sum")), lockdep armed (debug_locks)=$(sed -n 's/^debug_locks=//p' "$sum"), console splats=$(sed -n 's/^splats=//p' "$sum")"
	done
fi
echo "logs: $BUILD/<base>$VARIANT/logs, guest output: $BUILD/<base>$VARIANT/run-selftests"
if [ "$DEBUG" = 1 ]; then
	echo "check-patches: not run (DEBUG=1)"
else
	echo "check-patches: $([ $check_rc = 0 ] && echo pass || echo FAIL) ($BUILD/logs/check-patches.log)"
fi
echo "selftests: $tp passed, $tf failed, $ts skipped"
[ $tf = 0 ] && [ $bad = 0 ] && [ $check_rc = 0 ] || exit 1
if [ -n "$missing" ]; then
	echo "FAIL: required base(s) not tested:$missing (exit 3)"
	exit 3
fi
exit 0
}
