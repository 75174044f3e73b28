# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the epoll series scripts.  Source it; do not run it.
#
# Every long step goes through run_step: one progress line when it starts,
# one with its duration when it ends, its output in a log file, and the log's
# path (plus its tail) when it fails.

set -o pipefail

# script_usage FILE: FILE's header comment (after the "#!" and SPDX
# lines, up to its first line that is not a comment), without the "#".
script_usage() {
	sed -n '2,/^[^#]/{/^#/!d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "$1" |
		sed '/./,$!d'
}

# Every script that sources this file answers --help (or -h) with its
# header comment: sourced without arguments, this file sees the script's.
case "${1:-}" in
--help|-h)
	script_usage "$0"
	exit 0 ;;
esac

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-$TOP/build}
CACHE=${EPOLL_SERIES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/epoll-series}
DL_CACHE=${DL_CACHE:-$CACHE/downloads}
JOBS=${JOBS:-$(nproc)}

# DEBUG=1 selects the debug kernels (kernel-config/debug*.config): each
# base gets its own build directory, build/BASE-debug, sharing the
# patched source tree build/BASE/src with the normal kernel.
DEBUG=${DEBUG:-0}
# COVERAGE=1 selects the coverage kernels (kernel-config/coverage.config,
# gcov on the objects the series changes, scripts/bases/*.conf's
# COVERAGE_OBJS): build/BASE-coverage, same shared source.
COVERAGE=${COVERAGE:-0}
# BENCH=1 selects the benchmark kernels (kernel-config/bench*.config: a
# distribution's allocator, tick, preemption model and, on 6.12, entry
# mitigations), which only make bench builds: build/BASE-bench, same
# shared source.
BENCH=${BENCH:-0}
_n=0
for _v in "$DEBUG" "$COVERAGE" "$BENCH"; do
	[ "$_v" = 1 ] && _n=$((_n + 1))
done
if [ $_n -gt 1 ]; then
	echo "DEBUG=1, COVERAGE=1 and BENCH=1 select different kernels: pick one" >&2
	exit 2
fi
unset _n _v
if [ "$DEBUG" = 1 ]; then
	VARIANT=-debug
elif [ "$COVERAGE" = 1 ]; then
	VARIANT=-coverage
elif [ "$BENCH" = 1 ]; then
	VARIANT=-bench
else
	VARIANT=
fi
export DEBUG COVERAGE BENCH

# GUEST_ARCH selects the guest arch (scripts/arch/GUEST_ARCH.conf).  The
# host's own, x86_64, keeps the plain build directories; another arch gets
# build/BASE-ARCH (for example build/6.12-arm64), sharing build/BASE/src.
# set_arch ARCH switches the arch of the calling job (make test's loop).
set_arch() {
	[ -f "$TOP/scripts/arch/$1.conf" ] || {
		echo "unknown arch '$1' (no scripts/arch/$1.conf)" >&2
		exit 2
	}
	GUEST_ARCH=$1
	# shellcheck disable=SC1090
	. "$TOP/scripts/arch/$GUEST_ARCH.conf"
	ARCH_SUFFIX=
	[ "$GUEST_ARCH" = x86_64 ] && return 0
	ARCH_SUFFIX=-$GUEST_ARCH
	if [ -n "$VARIANT" ]; then
		echo "GUEST_ARCH=$GUEST_ARCH: only make test's plain kernels are set up for it, not DEBUG, COVERAGE or BENCH" >&2
		exit 2
	fi
}
set_arch "${GUEST_ARCH:-x86_64}"
export GUEST_ARCH

# bdir BASE: the build directory of BASE's kernel of the current variant.
bdir() { echo "$BUILD/$1$ARCH_SUFFIX$VARIANT"; }

_t0=$(date +%s)

msg()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
warn() { printf '[%s] WARNING: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }

# selftests_only PATCH: every file the patch touches is under
# tools/testing/selftests/ (check-patches.sh and posting.sh let such a
# patch waive checkpatch warnings; a patch of kernel code may not)
selftests_only() {
	! grep '^diff --git ' "$1" | grep -qv ' a/tools/testing/selftests/'
}

# Stage timings, appended to $TIMINGS (one "base stage seconds" line each).
TIMINGS=${TIMINGS:-$BUILD/timings.txt}

# run_step LOG LABEL CMD...: run CMD with stdout+stderr to LOG.
run_step() {
	local log=$1 label=$2 start end rc
	shift 2
	mkdir -p "$(dirname "$log")"
	msg "$label ..."
	start=$(date +%s)
	"$@" >"$log" 2>&1
	rc=$?
	end=$(date +%s)
	if [ $rc -ne 0 ]; then
		printf '[%s] FAILED: %s (%ss, exit %d)\n' "$(date +%H:%M:%S)" \
			"$label" $((end - start)) $rc >&2
		echo "----- last lines of $log -----" >&2
		tail -n 25 "$log" >&2
		echo "----- full log: $log -----" >&2
		return $rc
	fi
	msg "$label done ($((end - start))s)"
	mkdir -p "$(dirname "$TIMINGS")"
	label=${label#*: }
	echo "${STEP_BASE:-all} ${label// /_} $((end - start))" >>"$TIMINGS"
	return 0
}

# --- the bases, as data ------------------------------------------------------
#
# Every base is one file, scripts/bases/BASE.conf; nothing else names the
# bases.  BASE_ORDER (a number) orders them in every job and report.

# base_field BASE FIELD: one field of BASE's .conf (empty when unset).
# The field is unset first: a caller that loaded another base has that
# base's value of it in its environment.
base_field() {
	( unset "$2"; . "$TOP/scripts/bases/$1.conf" >/dev/null 2>&1; eval "printf '%s' \"\${$2:-}\"" )
}

# all_bases: every base, in BASE_ORDER (then name) order.
all_bases() {
	local f b

	for f in "$TOP"/scripts/bases/*.conf; do
		b=$(basename "$f" .conf)
		printf '%s %s\n' "$(base_field "$b" BASE_ORDER)" "$b"
	done | sort -k1,1n -k2,2 | awk '{ printf "%s%s", sep, $2; sep = " " } END { print "" }'
}

# tools_base: the base whose source provides the kselftest harness
# (kselftest_harness.h) and checkpatch.pl to every job (TOOLS_BASE=1 in
# its .conf; its source stage runs first, whatever BASES says).
tools_base() {
	local b

	for b in $(all_bases); do
		[ "$(base_field "$b" TOOLS_BASE)" = 1 ] && { echo "$b"; return 0; }
	done
	echo "no scripts/bases/*.conf sets TOOLS_BASE=1" >&2
	return 1
}

# Load the data file that describes a kernel base (scripts/bases/BASE.conf)
# and the arch/QEMU data it names (scripts/arch/ARCH.conf).
load_base() {
	local base=$1
	[ -f "$TOP/scripts/bases/$base.conf" ] || die "unknown base '$base'"
	# shellcheck disable=SC1090
	. "$TOP/scripts/bases/$base.conf"
	case " $ARCHES_SUPPORTED " in
	*" $GUEST_ARCH "*) ;;
	*) die "$base does not support $GUEST_ARCH: ${ARCHES_WHY_NOT:-not in its ARCHES_SUPPORTED}" ;;
	esac
	ARCH=$GUEST_ARCH
	BASE_NAME=$base
	# shellcheck disable=SC1090
	. "$TOP/scripts/arch/$ARCH.conf"
	BDIR=$(bdir "$base")
	SRC=$BUILD/$base/src
	OBJ=$BDIR/obj
	HDR=$BDIR/hdr
	LOGS=$BDIR/logs
	STEP_BASE=$base$ARCH_SUFFIX$VARIANT
	if [ "$DEBUG" = 1 ]; then
		EXTRA_FRAGMENTS="debug debug-$base"
		KCMDLINE_POLICY="$KCMDLINE_POLICY $KCMDLINE_DEBUG"
		QEMU_MEM=$QEMU_MEM_DEBUG
	fi
	[ "$COVERAGE" = 1 ] && EXTRA_FRAGMENTS="coverage"
	[ "$BENCH" = 1 ] && EXTRA_FRAGMENTS="bench bench-$base"
	return 0
}

# qemu_channels CONSOLE RESULT: the QEMU options of the loaded arch's
# console and result channel (QEMU_CHANNELS), written to those files.
qemu_channels() {
	local ch=${QEMU_CHANNELS//@CONSOLE@/$1}

	echo "${ch//@RESULT@/$2}"
}

# fragment_names: the kernel-config/ fragments of the loaded base, arch and
# variant, in merge order (later ones win), those that exist only.
fragment_names() {
	local f

	for f in common "$ARCH" "$BASE_NAME" "$BASE_NAME-$ARCH" ${EXTRA_FRAGMENTS:-}; do
		[ -f "$TOP/kernel-config/$f.config" ] && echo "$f"
	done
	return 0
}

# tree_rev: this checkout's short commit, with "+dirty" when tracked files
# differ from it; every result file names the commit it came from.
tree_rev() {
	local rev

	rev=$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ -n "$(git -C "$TOP" status --porcelain --untracked-files=no 2>/dev/null)" ] &&
		rev="$rev+dirty"
	echo "$rev"
}

# Content hash of files, for "did the input change" stamps.
hash_files() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

# base_source BASE: the source stage.  6.12's source is unpacked first by
# every job (the selftests use its kselftest harness).  Returns 3 when an
# optional base has no source: the caller reports it SKIPPED, loudly.
base_source() {
	local b=$1 st t log

	log=$(bdir "$b")/logs/source.log

	# (the tools base's x86_64 source stage ran first, in job_start;
	# another arch records its own)
	[ "$b" = "$(tools_base)" ] && [ -z "$ARCH_SUFFIX" ] && return 0
	mkdir -p "$(dirname "$log")"
	msg "$b$ARCH_SUFFIX: source ..."
	t=$(date +%s)
	"$TOP/scripts/kernel.sh" source "$b" >"$log" 2>&1
	st=$?
	echo "$b$ARCH_SUFFIX source $(($(date +%s) - t))" >>"$TIMINGS"
	if [ $st = 3 ]; then
		warn "$b SKIPPED: $(cat "$(bdir "$b")/skip-reason")"
		return 3
	fi
	if [ $st != 0 ]; then
		tail -n 20 "$log"
		echo "full log: $log"
		return 1
	fi
	msg "$b$ARCH_SUFFIX: $(tail -n 1 "$log")"
}

# build_stages FROM LOGDIR RUN BASE [WRAP...]: the stages of a base's
# build, from stage FROM (apply, config, build, headers, selftests,
# kselftests or benches) to the last, each run as
#   RUN LOGDIR/STAGE.log "LABEL" [WRAP...] CMD... BASE
# RUN is run_step for the jobs (build_base); make mutants passes its
# interruptible step and a WRAP that points the command at its build tree.
build_stages() {
	local from=$1 logs=$2 run=$3 b=$4 t st label cmd on=0
	shift 4

	t=$b$ARCH_SUFFIX$VARIANT
	while IFS='|' read -r st label cmd; do
		[ "$st" = "$from" ] && on=1
		[ $on = 1 ] || continue
		# shellcheck disable=SC2086
		"$run" "$logs/$st.log" "$t: $label" "$@" $cmd "$b" || return 1
	done <<-EOF
	apply|quilt push -a|$TOP/scripts/kernel.sh apply
	config|config|$TOP/scripts/kernel.sh config
	build|$KTARGET|$TOP/scripts/kernel.sh build
	headers|headers_install|$TOP/scripts/kernel.sh headers
	selftests|build selftests|$TOP/scripts/guest-progs.sh selftests
	kselftests|build in-tree selftests|$TOP/scripts/guest-progs.sh kselftests
	benches|build benchmarks|$TOP/scripts/guest-progs.sh benches
	EOF
	[ $on = 1 ] || { echo "build_stages: no stage '$from'" >&2; return 1; }
}

# build_base BASE: patched kernel, headers, selftests and benchmarks.
build_base() {
	build_stages apply "$(bdir "$1")/logs" run_step "$1"
}

# --- the job loop --------------------------------------------------------------

# job_start DEPS_SET: what every job does first: the apt packages of
# DEPS_SET (scripts/deps.sh), then the tools base's source (the selftests
# use its kselftest harness, check-patches its checkpatch.pl), so it is
# needed even when BASES leaves that base out.
job_start() {
	local tb

	tb=$(tools_base) || return 1
	run_step "$BUILD/logs/deps-$1.log" "deps: apt packages" "$TOP/scripts/deps.sh" "$1" || return 1
	STEP_BASE=$tb$VARIANT run_step "$(bdir "$tb")/logs/source.log" "$tb: source" \
		"$TOP/scripts/kernel.sh" source "$tb"
}

# for_each_base FN: the job loop, over $BASES (default: every base) on the
# current arch.  For each base: its build directory, then its source stage,
# then "FN BASE STATUS", STATUS being
#   ok           the source is ready (FN builds, boots, reports)
#   skipped      no source; why is in $(bdir BASE)/skip-reason
#   failed       the source stage failed (its log was shown)
#   unsupported  the base does not build for $GUEST_ARCH; why is in
#                $WHY_UNSUPPORTED (no source stage was run)
# Returns 1 if any FN call did.
for_each_base() {
	local fn=$1 b st rc=0

	for b in ${BASES:-$(all_bases)}; do
		[ -f "$TOP/scripts/bases/$b.conf" ] || die "unknown base '$b' (no scripts/bases/$b.conf)"
		STEP_BASE=$b$ARCH_SUFFIX$VARIANT
		WHY_UNSUPPORTED=$(base_supports "$b" "$GUEST_ARCH") || {
			"$fn" "$b" unsupported || rc=1
			continue
		}
		mkdir -p "$(bdir "$b")/logs"
		base_source "$b"
		case $? in
		0) st=ok ;;
		3) st=skipped ;;
		*) st=failed ;;
		esac
		"$fn" "$b" "$st" || rc=1
	done
	return $rc
}

# base_supports BASE ARCH: BASE lists ARCH in its ARCHES_SUPPORTED; if
# not, prints why.
base_supports() {
	( unset ARCHES_SUPPORTED ARCHES_WHY_NOT; . "$TOP/scripts/bases/$1.conf"
	  case " $ARCHES_SUPPORTED " in
	  *" $2 "*) exit 0 ;;
	  *) echo "${ARCHES_WHY_NOT:-not in its ARCHES_SUPPORTED}"; exit 1 ;;
	  esac )
}
