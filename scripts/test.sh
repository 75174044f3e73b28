#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# test.sh: the whole "make test" job, for every base in $BASES.
#
# For each base, and each arch of ARCHES that the base supports (default
# "x86_64 arm64": 6.12 is also cross-built and booted on arm64):
# source, quilt push, config, kernel image, headers, selftests, initramfs,
# boot under QEMU; then one summary for all of them.  A base whose
# source cannot be found (v3.19 on a machine without it) is SKIPPED, loudly,
# and never counted as passed: the job then exits 3, unless the user
# narrowed BASES on the make command line (BASES_ORIGIN=command line).
# check-patches always checks every series.

. "$(dirname "$0")/lib.sh"

# The whole job is one compound command: bash reads it all before running
# it, so editing this file during a run cannot change that run.
{

ALL_BASES=$(all_bases)
BASES=${BASES:-$ALL_BASES}
# Guest arches: each base on those of ARCHES its .conf lists in
# ARCHES_SUPPORTED (6.12 is also cross-built and booted on arm64).  CI
# runs both: see docs/guests.md for the cost.
# The debug kernels are x86_64 only (kernel-config/debug*.config).
if [ -z "$VARIANT" ]; then
	ARCHES=${ARCHES:-x86_64 arm64}
else
	ARCHES=${ARCHES:-x86_64}
fi
# Only a narrowing on the command line is a choice; BASES inherited from
# the environment must not quietly drop a base from a run that looks green.
if [ "${BASES_ORIGIN:-}" = "command line" ]; then
	REQUIRED=$BASES
else
	REQUIRED=$ALL_BASES
fi
S=$TOP/scripts
# The 6.12 debug guest (KASAN, SLUB debugging on every cache) ran past
# guest.sh's 1500 s under TCG with 1194 tests: give the debug kernels an
# hour (a hang still ends the boot).
[ "$DEBUG" = 1 ] && export BOOT_TIMEOUT=${BOOT_TIMEOUT:-3600}
rm -f "$TIMINGS" "$BUILD"/accel
mkdir -p "$BUILD"

# every arch named exists and fits the variant, before anything runs
for a in $ARCHES; do
	(set_arch "$a") || exit 2
done
export ARCHES

job_start test || exit 1
run_step "$BUILD/logs/man.log" "man pages: lint" "$S/lint-man.sh" || exit 1

declare -A state reason
# The targets run: BASE on x86_64, BASE-ARCH on another arch.
targets=
unsupported=

# pipeline BASE STATUS: for_each_base's step on the current arch
# (set_arch); state and reason are keyed by the target, BASE or BASE-ARCH.
pipeline() {
	local b=$1 st d t=$1$ARCH_SUFFIX

	if [ "$2" = unsupported ]; then
		unsupported="$unsupported|$b on $GUEST_ARCH: $WHY_UNSUPPORTED"
		return 0
	fi
	targets="$targets $t"
	d=$(bdir "$b")
	rm -rf "$d/run-selftests"
	state[$t]=FAIL
	case $2 in
	ok) ;;
	skipped) state[$t]=SKIPPED
	   reason[$t]=$(cat "$d/skip-reason")
	   return 0 ;;
	*) return 1 ;;
	esac
	build_base "$b" &&
	run_step "$d/logs/initramfs.log" "$t$VARIANT: initramfs" "$S/guest.sh" initramfs "$b" || return 1
	run_step "$d/logs/boot.log" "$t$VARIANT: boot + selftests in QEMU" "$S/guest.sh" boot "$b" selftests
	st=$?
	[ $st = 0 ] && state[$t]=pass
	if [ $st != 0 ] && [ -f "$d/run-selftests/summary" ]; then
		sed -n '/^FAIL/,$p;/^console shows/,$p' "$d/logs/boot.log" | head -n 100
		grep '^MANIFEST: ' "$d/logs/boot.log" | head -n 60
	fi
	return 0
}

for a in $ARCHES; do
	set_arch "$a"
	for_each_base pipeline
done
set_arch x86_64

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
printf '%-12s %-8s %-24s %-6s %6s %6s %7s %-8s  %s\n' target result "uname -r" accel passed failed skipped manifest source
# tdir TARGET: the build directory of BASE or BASE-ARCH
tdir() { echo "$BUILD/$1$VARIANT"; }
for t in $targets; do
	sum=$(tdir "$t")/run-selftests/summary
	if [ "${state[$t]}" = SKIPPED ]; then
		printf '%-12s %-8s %s\n' "$t" SKIPPED "${reason[$t]}"
		continue
	fi
	if [ ! -f "$sum" ]; then
		printf '%-12s %-8s %s\n' "$t" FAIL "did not reach the boot stage (see $(tdir "$t")/logs)"
		bad=1
		continue
	fi
	get() { sed -n "s/^$1=//p" "$sum"; }
	printf '%-12s %-8s %-24s %-6s %6s %6s %7s %-8s  %s\n' "$t" "${state[$t]}" \
		"$(get uname)" "$(get accel)" "$(get passed)" "$(get failed)" \
		"$(get skipped)" "$(get manifest)" "$(get source)"
	tp=$((tp + $(get passed))); tf=$((tf + $(get failed))); ts=$((ts + $(get skipped)))
	[ "${state[$t]}" = pass ] || bad=1
done
# A required base is tested when it ran on some arch and was skipped on
# none (a skip is a missing source, the same on every arch).
missing=
for b in $REQUIRED; do
	ran=0
	for t in $targets; do
		case $t in
		"$b"|"$b"-*) [ "${state[$t]}" = SKIPPED ] || ran=1 ;;
		esac
	done
	case " $BASES " in
	*" $b "*)
		if [ "${state[$b]:-}" = SKIPPED ]; then
			missing="$missing $b"
		elif [ $ran = 0 ]; then
			missing="$missing $b"
			reason[$b]="no arch of ARCHES=\"$ARCHES\" runs it"
		fi ;;
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
IFS='|' read -r -a notes <<<"${unsupported#|}"
for n in "${notes[@]}"; do
	[ -n "$n" ] && echo "note: not built: $n"
done
echo
echo "wake-mode fairness, 64-bit run (per-waiter counts; jain=1.000 is perfectly even):"
for t in $targets; do
	res=$(tdir "$t")/run-selftests/results.log
	[ -f "$res" ] || continue
	awk -v b="$t" '/^# selftests: (filesystems\/)?epoll: / { bin = $4 }
		bin !~ /_x?32$/ && sub(/^[# ]*spread: /, "") { print "  " b "  " $0 }' "$res"
done
echo
echo "stage timings (seconds):"
awk '{ printf "  %-12s %-40s %5s\n", $1, $2, $3 }' "$TIMINGS"
echo
if [ "$DEBUG" = 1 ]; then
	echo "debug kernels (kernel-config/debug*.config):"
	for b in $BASES; do
		sum=$(bdir "$b")/run-selftests/summary
		[ -f "$sum" ] || continue
		echo "  $b: kmemleak objects leaked by the job=$(sed -n 's/^kmemleak=//p' "$sum") (older, boot's: $(sed -n 's/^kmemleak_boot=//p' "$sum")), lockdep armed (debug_locks)=$(sed -n 's/^debug_locks=//p' "$sum"), console splats=$(sed -n 's/^splats=//p' "$sum")"
	done
fi
echo "logs: $BUILD/<target>$VARIANT/logs, guest output: $BUILD/<target>$VARIANT/run-selftests (target: <base> on x86_64, <base>-<arch> otherwise)"
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
