#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mutants.sh: the "make mutants" job.  Do the selftests catch the bugs the
# series could plausibly have?
#
# Each selftests/mutants/BASE/NN-name.patch plants one bug in the code the
# series adds (first line: "Mutant: <what it breaks>; expect killed by:
# <tests>").  For each base in $BASES and each mutant that MUTANTS selects:
#
#   1. apply it (patch -p1) to the patched tree build/BASE/src, after
#      saving the files it touches;
#   2. rebuild bzImage incrementally in a build directory of its own,
#      build/mutants/BASE (the kernel of "make test", build/BASE/obj, is
#      never touched), and the headers, selftests and initramfs if the
#      mutant touches a uapi header;
#   3. boot it and run the selftests (guest.sh boot BASE selftests, which
#      also holds the results to selftests/manifest.txt): a non-zero exit
#      means the mutant was KILLED, zero that it SURVIVED;
#   4. reverse it (patch -R), always, also on a failure or an interrupt,
#      and check that every touched file is byte for byte what it was.
#
# Before the mutants, each base's unmutated kernel is booted once (the
# baseline): a mutant is only credited with the failures the baseline did
# not have.  MUTANTS_BASELINE=0 skips it.
#
# Variables:
#   BASES="..."          bases to run (default: every scripts/bases/*.conf)
#   MUTANTS="glob ..."   mutants to run, shell globs on NN-name (default:
#                        every mutant without a current row, see below;
#                        MUTANTS='*' runs them all)
#   BOOT_TIMEOUT=1200    host bound on each guest, in seconds
#   MUTANTS_BASELINE=0   skip the baseline boot
#   MUTANTS_FAILFAST=0   run every selftest binary for each mutant (by
#                        default a mutant's guest boots with
#                        epoll.failfast=1: it stops at the first failing
#                        binary, so "killing tests" are that binary's)
#   MUTANTS_SRC=copy     put the mutants into a private copy of the patched
#                        tree (build/mutants/BASE/src) instead of
#                        build/BASE/src, so that make test can run meanwhile
#   MUTANTS_FORCE=1      run even though make test/stress/bench seems to run
#   MUTANTS_APPEND=1     keep the rows of earlier runs in results/mutants/BASE.tsv and
#                        replace only those of the mutants run now (each
#                        row names the commit it ran at); the default when
#                        MUTANTS is not set
#
# A row is current only while both hashes it records still hold: the
# mutant's diff (its header aside) and the base's kernel patches (the
# series' selftests-only patches aside).  A row without them, or of a
# mutant file that is gone, is stale: reported, never counted, and rerun
# by the next plain "make mutants"; rows of removed mutants are dropped
# (git keeps them).
#   DEBUG=1              use the debug kernels (build/mutants/BASE-debug)
#
# "scripts/mutants.sh --report" rewrites results/mutants.md from what
# build/mutants holds, without running anything.
#
# Results: results/mutants.md (every base with rows), results/mutants/BASE.tsv,
# per mutant the logs in build/mutants/BASE/logs/mutants/ and the guest's
# output in build/mutants/BASE/runs/NN-name/.
#
# The source tree build/BASE/src is shared with make test: a make test that
# ran while a mutant is in would build it.  This script refuses to start
# while make test, stress or bench runs, and waits for one before each
# mutant; MUTANTS_SRC=copy avoids the sharing altogether.

TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
# The normal build tree (sources, quilt state); the mutant kernels get
# their own: every child script below is called with BUILD=$MBUILD, and
# lib.sh's bdir() then puts BASE's objects, headers, selftests and guest
# runs under $MBUILD.  $MBUILD/BASE/src is a symlink to the shared source.
BUILD=${BUILD:-$TOP/build}
MBUILD=${MUTANTS_BUILD:-$BUILD/mutants}
TIMINGS=${TIMINGS:-$MBUILD/timings.txt}
. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{

S=$TOP/scripts
RESULTS=${RESULTS:-$TOP/results}
ALL_BASES=$(all_bases)
BASES=${BASES:-$ALL_BASES}
# No MUTANTS: run what has no current row, keeping the other rows.
if [ -z "${MUTANTS:-}" ]; then
	MUTANTS_STALE_ONLY=1
	MUTANTS='*'
	MUTANTS_APPEND=1
fi
MUTANTS_STALE_ONLY=${MUTANTS_STALE_ONLY:-0}
MUTANTS_SRC=${MUTANTS_SRC:-shared}
export BOOT_TIMEOUT=${BOOT_TIMEOUT:-1200}
T0=$(date +%s)
# The commit this run tests, recorded on each results/mutants/BASE.tsv row.
RUN_REV=$(tree_rev)
# per base: done, running (then interrupted), or why it was not run
declare -A state
REPORT_DUE=0

# mbdir BASE: BASE's directory under the mutants' build tree.
mbdir() { echo "$MBUILD/$1$VARIANT"; }

# mtsv BASE: BASE's results, one row per mutant.  They live in results/
# (committed), not in the build tree, so that a run of one base, or in a
# fresh clone, reports the other base's earlier rows instead of losing them.
mtsv() { echo "$RESULTS/mutants/$1$VARIANT.tsv"; }

# in_mbuild CMD...: run a child script on the mutants' build tree, with
# the guest's extra kernel command line of the current boot.
MB_KCMDLINE=${KCMDLINE_EXTRA:-}
in_mbuild() { BUILD=$MBUILD TIMINGS=$TIMINGS KCMDLINE_EXTRA=$MB_KCMDLINE "$@"; }

# --- processes and interrupts ----------------------------------------------

# Bash runs a trap only between commands, so long steps run in the
# background and are waited for: a signal then reaches the trap at once.
STEP_PID=

# descendants PID: PID's processes, children first.
descendants() {
	local c

	for c in $(pgrep -P "$1"); do
		descendants "$c"
	done
	echo "$1"
}

# stop_step: end the running step and everything it started (QEMU under
# timeout runs in a process group of its own, so it is found by parentage).
stop_step() {
	local pids p

	[ -n "$STEP_PID" ] || return 0
	pids=$(descendants "$STEP_PID")
	for p in $pids; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 2
	for p in $pids; do
		kill -KILL "$p" 2>/dev/null
	done
	wait "$STEP_PID" 2>/dev/null
	STEP_PID=
}

# step LOG LABEL CMD...: run_step, interruptible.
step() {
	run_step "$@" &
	STEP_PID=$!
	wait "$STEP_PID"
	local rc=$?
	STEP_PID=
	return $rc
}

# qstep LOG LABEL CMD...: as step, for a mutant's boot, whose failure is
# an outcome (the mutant was killed), not an error: one line, no log tail.
qstep() {
	local log=$1 label=$2 start rc
	shift 2

	mkdir -p "$(dirname "$log")"
	msg "$label ..."
	start=$(date +%s)
	"$@" >"$log" 2>&1 &
	STEP_PID=$!
	wait "$STEP_PID"
	rc=$?
	STEP_PID=
	msg "$label: exit $rc ($(($(date +%s) - start))s)"
	label=${label#*: }
	echo "${STEP_BASE:-all} ${label// /_} $(($(date +%s) - start))" >>"$TIMINGS"
	return $rc
}

# --- applying and reversing a mutant -----------------------------------------

# The mutant applied right now: its patch, and where its files are saved.
# The state file lets a later run put back what a killed run left.
CUR_PATCH=
CUR_SAVE=

# Exact context, no questions, no .orig or .rej files in the source tree.
PATCH="patch -p1 --fuzz=0 -s -f --no-backup-if-mismatch -r -"

# touched PATCH: the files PATCH changes, relative to the tree.
touched() {
	sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$1" | sort -u
}

# sums SRC FILE...: sha256 of each file of SRC (or "missing").
sums() {
	local src=$1 f
	shift

	for f in "$@"; do
		if [ -e "$src/$f" ]; then
			echo "$(sha256sum <"$src/$f" | cut -c1-64) $f"
		else
			echo "missing $f"
		fi
	done
}

# apply_mutant SRC PATCH SAVE: save the files PATCH touches into SAVE,
# then apply it.  Returns 2 if it does not apply (nothing changed).
apply_mutant() {
	local src=$1 patch=$2 save=$3 f files

	files=$(touched "$patch")
	[ -n "$files" ] || return 2
	$PATCH --dry-run -d "$src" <"$patch" >/dev/null 2>&1 || return 2
	rm -rf "$save"
	mkdir -p "$save/files"
	cp "$patch" "$save/patch"
	echo "$patch" >"$save/origin"
	echo "$src" >"$save/src"
	# shellcheck disable=SC2086
	sums "$src" $files >"$save/sums"
	for f in $files; do
		if [ -e "$src/$f" ]; then
			(cd "$src" && cp -p --parents "$f" "$save/files/") || return 1
		fi
	done
	CUR_PATCH=$patch CUR_SAVE=$save
	ln -sfn "$save" "$MBUILD/applied"
	$PATCH -d "$src" <"$patch" || return 1
}

# restore SAVE: put the saved files back (reverse the patch first, then
# check; copy the saved files over if the reverse went wrong), and check
# the tree against the sums taken before the mutant went in.
restore() {
	local save=$1 src f files

	src=$(cat "$save/src")
	files=$(awk '{ print $2 }' "$save/sums")
	if ! $PATCH -R -d "$src" <"$save/patch" >/dev/null 2>&1 ||
	   ! sums "$src" $files | cmp -s - "$save/sums"; then
		warn "reversing $(basename "$(cat "$save/origin")") did not give the original files back: restoring the saved copies"
		for f in $files; do
			if grep -q "^missing $f\$" "$save/sums"; then
				rm -f "$src/$f"
			else
				cp "$save/files/$f" "$src/$f"
			fi
		done
	fi
	# shellcheck disable=SC2086
	if ! sums "$src" $files | cmp -s - "$save/sums"; then
		warn "$src is NOT back to its original state; expected:"
		cat "$save/sums" >&2
		return 1
	fi
	# Same content, new mtime: both kernels' make rebuilds these files'
	# objects (make test's from ccache), none keeps a mutant object.
	for f in $files; do
		[ -e "$src/$f" ] && touch "$src/$f"
	done
	rm -f "$MBUILD/applied"
	return 0
}

revert_current() {
	[ -n "$CUR_SAVE" ] || return 0
	msg "reversing $(basename "$CUR_PATCH")"
	if restore "$CUR_SAVE"; then
		msg "source tree restored: $(awk '{ print $2 }' "$CUR_SAVE/sums" | tr '\n' ' ')(sha256 checked)"
		CUR_PATCH='' CUR_SAVE=''
		return 0
	fi
	return 1
}

on_exit() {
	local rc=$?

	stop_step
	if ! revert_current; then
		warn "the mutant is still in the source tree; state kept in $MBUILD/applied"
		rc=1
	fi
	# an interrupted run still reports what it finished
	[ "$REPORT_DUE" = 1 ] && write_report
	exit $rc
}

on_signal() {
	trap - INT TERM HUP
	warn "interrupted: stopping the current step and reversing the mutant"
	stop_step
	exit 130
}

# --- results ---------------------------------------------------------------

# failures_nested RESULTS_LOG: "binary: test" for each failed nested test.
failures_nested() {
	[ -f "$1" ] || return 0
	awk '/^# selftests: (filesystems\/)?epoll: / { bin = $4; next }
	     /^# not ok [0-9]+ / { name = $0; sub(/^# not ok [0-9]+ /, "", name)
				   print bin ": " name }' "$1"
}

# failures RUN_DIR: one line per thing that failed the run in RUN_DIR
# (results.log, boot.log), "binary: test" for a failed nested test.
failures() {
	local res=$1/results.log log=$1/boot.log

	[ -f "$res" ] && awk '
		/^# selftests: (filesystems\/)?epoll: / { bin = $4; next }
		/^# not ok [0-9]+ / {
			name = $0; sub(/^# not ok [0-9]+ /, "", name)
			print bin ": " name; seen[bin] = 1; next
		}
		/^not ok [0-9]+ selftests: (filesystems\/)?epoll: / {
			b = $0; sub(/^not ok [0-9]+ selftests: (filesystems\/)?epoll: /, "", b)
			sub(/ .*/, "", b)
			if (!(b in seen)) print b ": (binary failed)"
		}' "$res"
	[ -f "$log" ] || return 0
	# The manifest's view, less what the lines above already say: a
	# binary's failed tests (and so its shortfall), and the binaries that
	# a fail-fast guest (epoll.failfast=1) did not run after a failure.
	grep '^MANIFEST: ' "$log" | grep -v ': failed: ' | sed 's/^MANIFEST: /manifest: /' |
		awk -v failfast="$(grep -c '^# failfast: stopping' "$res" 2>/dev/null)" '
		FILENAME == ARGV[1] { sub(/: .*/, ""); failed[$0] = 1; next }
		{ b = $2; sub(/:$/, "", b) }
		failfast > 0 && / did not run / { next }
		(b in failed) && / passed, fewer than / { next }
		{ print }' <(failures_nested "$res") -
	grep -q '^FAIL: no exit status' "$log" && echo "no exit status from the guest (hang, crash or timeout)"
	grep -q '^console shows a splat' "$log" &&
		echo "console: $(sed -n '/^console shows a splat/,$p' "$log" | head -n 80 |
			grep -m1 -E "$SPLAT_RE" | sed 's/^[0-9]*[-:]//' | cut -c1-100)"
	grep -q '^FAIL: guest ran' "$log" && echo "wrong kernel: $(grep -m1 '^FAIL: guest ran' "$log")"
	# The console checks other than a splat (quoted above): a missing
	# CONSOLE_REQUIRE line or a wrong count of expected warnings.  Name
	# the kernel test's own verdict when it printed one.
	local cc=$1/console-check.txt
	if [ -s "$cc" ] && ! grep -q '^console shows a splat' "$cc"; then
		echo "console: $( { grep -m1 -E ': FAIL' "$cc" || head -n1 "$cc"; } | cut -c1-120)"
	fi
	return 0
}

# Console lines that fail a run (same as guest.sh; only to quote one).
SPLAT_RE='Kernel panic|Oops|BUG:|WARNING:|general protection fault|Call Trace:|INFO: task .* blocked|soft lockup|hard LOCKUP|RCU stall|list_(add|del) corruption'

# new_failures BASELINE MUTANT: the lines of MUTANT that the baseline did
# not have, numbers aside (counts and seeds differ from run to run).
new_failures() {
	# FILENAME, not NR == FNR: the baseline's list is usually empty.
	awk 'function norm(s) { gsub(/[0-9]+/, "N", s); return s }
	     FILENAME == ARGV[1] { base[norm($0)] = 1; next }
	     !(norm($0) in base)' "$1" "$2"
}

# first_few LIST_FILE N: the first N lines joined, and how many more.
first_few() {
	local n total

	n=$2
	total=$(grep -c . "$1")
	printf '%s' "$(head -n "$n" "$1" | paste -sd ';' | sed 's/;/; /g')"
	[ "$total" -gt "$n" ] && printf ' (+%d more)' $((total - n))
	return 0
}

md_escape() { sed 's/|/\\|/g'; }

# --- one base -----------------------------------------------------------------

# The tree the mutants go into: build/BASE/src, or its copy.
MSRC=

# others_running: is a make test, stress or bench of this clone running?
# (Those of other clones, with their own build trees, do not matter.)
others_running() {
	local pid

	for pid in $(pgrep -f "scripts/(test|stress|bench)\.sh"); do
		[ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$TOP" ] && return 0
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$TOP/scripts/" &&
			return 0
	done
	return 1
}

# wait_for_others: with the shared source tree, never put a mutant in
# while make test, stress or bench may build from it.
wait_for_others() {
	[ "$MUTANTS_SRC" = copy ] || [ "${MUTANTS_FORCE:-0}" = 1 ] && return 0
	others_running || return 0
	warn "make test, stress or bench runs on the shared source tree: waiting for it before the next mutant"
	while others_running; do
		sleep 30
	done
}

# prepare BASE: the shared source and series, then the mutants' build tree
# with an unmutated kernel, headers, selftests and initramfs.
prepare() {
	local b=$1 d st L

	d=$(mbdir "$b")
	L=$d/logs
	mkdir -p "$L" "$MBUILD/$b"
	# shellcheck disable=SC2034 # run_step's timings label
	STEP_BASE=$b$VARIANT
	step "$L/source.log" "$b: source" "$S/kernel.sh" source "$b"
	st=$?
	if [ $st = 3 ]; then
		warn "$b SKIPPED: $(cat "$(bdir "$b")/skip-reason" 2>/dev/null)"
		return 3
	fi
	[ $st = 0 ] || return 1
	step "$L/apply.log" "$b: quilt push -a (build/$b/src)" "$S/kernel.sh" apply "$b" || return 1
	if [ "$MUTANTS_SRC" = copy ]; then
		# A private copy: make test may build from build/$b/src meanwhile.
		[ -L "$MBUILD/$b/src" ] && rm -f "$MBUILD/$b/src"
		mkdir -p "$MBUILD/$b/src"
		step "$L/copy.log" "$b: copy build/$b/src (MUTANTS_SRC=copy)" \
			rsync -a --delete "$BUILD/$b/src/" "$MBUILD/$b/src/" || return 1
		MSRC=$MBUILD/$b/src
	else
		[ -d "$MBUILD/$b/src" ] && [ ! -L "$MBUILD/$b/src" ] &&
			rm -rf "$MBUILD/$b/src"
		ln -sfn "$BUILD/$b/src" "$MBUILD/$b/src"
		MSRC=$BUILD/$b/src
	fi
	cp "$(bdir "$b")/source-version" "$d/" 2>/dev/null
	cp "$(bdir "$b")/kernelversion" "$d/" 2>/dev/null
	step "$L/config.log" "$b$VARIANT: config (mutants' build dir)" in_mbuild "$S/kernel.sh" config "$b" &&
	step "$L/build.log" "$b$VARIANT: bzImage, unmutated" in_mbuild "$S/kernel.sh" build "$b" &&
	build_guest "$b" "unmutated"
}

# build_guest BASE WHAT: headers, selftests, benchmarks and initramfs.
build_guest() {
	local b=$1 what=$2 L

	L=$(mbdir "$b")/logs
	msg "$b$VARIANT: guest build, $what"
	build_stages headers "$L" step "$b" in_mbuild &&
	step "$L/initramfs.log" "$b$VARIANT: initramfs" in_mbuild "$S/guest.sh" initramfs "$b" selftests
}

# boot BASE NAME: boot the current kernel; keep its output in runs/NAME.
# Prints the failures to runs/NAME/failures; returns the boot's status.
boot() {
	local b=$1 name=$2 d run rc

	d=$(mbdir "$b")
	run=$d/runs/$name
	rm -rf "$run"
	mkdir -p "$run" "$d/logs/mutants"
	# A mutant's guest stops at its first failing binary (the quick ones
	# run first); the baseline runs everything, so that all of its own
	# failures are known.
	MB_KCMDLINE=${KCMDLINE_EXTRA:-}
	[ "$name" != baseline ] && [ "${MUTANTS_FAILFAST:-1}" = 1 ] &&
		MB_KCMDLINE="$MB_KCMDLINE epoll.failfast=1"
	if [ "$name" = baseline ]; then
		step "$d/logs/mutants/$name-boot.log" "$b$VARIANT: $name: boot + selftests in QEMU" \
			in_mbuild "$S/guest.sh" boot "$b" selftests
	else
		qstep "$d/logs/mutants/$name-boot.log" "$b$VARIANT: $name: boot + selftests in QEMU" \
			in_mbuild "$S/guest.sh" boot "$b" selftests
	fi
	rc=$?
	MB_KCMDLINE=${KCMDLINE_EXTRA:-}
	cp -p "$d/run-selftests/"* "$run/" 2>/dev/null
	cp -p "$d/logs/mutants/$name-boot.log" "$run/boot.log"
	failures "$run" >"$run/failures"
	return $rc
}

# tsv_base TSV: the base whose rows results/mutants/BASE$VARIANT.tsv holds
tsv_base() {
	local b

	b=$(basename "$1" .tsv)
	echo "${b%"$VARIANT"}"
}

# tsv_row TSV NAME DESC EXPECT VERDICT KILLERS SECS: NAME's row, at this
# run's commit and with row_hash (TSV is results/mutants/BASE.tsv), replacing an earlier run's row of the same name.
tsv_row() {
	local tsv=$1 name=$2

	shift 2
	if [ -s "$tsv" ]; then
		awk -F'\t' -v n="$name" '$1 != n' "$tsv" >"$tsv.new" && mv "$tsv.new" "$tsv"
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$@" "$RUN_REV" \
		"$(row_hash "$(tsv_base "$tsv")" "$name")" >>"$tsv"
}

# run_mutant BASE PATCH IDX TOTAL: one mutant, one results/mutants/BASE.tsv line.
run_mutant() {
	local b=$1 p=$2 idx=$3 total=$4 d name desc expect start rc verdict
	local killers=- uapi=0 secs new

	d=$(mbdir "$b")
	name=$(basename "$p" .patch)
	desc=$(sed -n '1s/^Mutant: //p' "$p")
	expect=${desc##*expect killed by: }
	desc=${desc%%; expect killed by: *}
	start=$(date +%s)
	msg "$b$VARIANT [$idx/$total] $name: $desc"

	wait_for_others
	apply_mutant "$MSRC" "$p" "$d/saved"
	rc=$?
	if [ $rc = 2 ]; then
		verdict=n/a
		killers="does not apply to ${MSRC#"$TOP"/} (patch -p1 --fuzz=0)"
	elif [ $rc != 0 ]; then
		verdict=error
		killers="patch failed halfway"
	else
		touched "$p" | grep -qE '(^|/)include/uapi/' && uapi=1
		if ! step "$d/logs/mutants/$name-build.log" "$b$VARIANT: $name: bzImage" \
			in_mbuild "$S/kernel.sh" build "$b"; then
			verdict=build-failed
			killers="does not compile (see $d/logs/mutants/$name-build.log)"
		elif [ $uapi = 1 ] && ! build_guest "$b" "$name"; then
			verdict=build-failed
			killers="headers or selftests do not build"
		else
			boot "$b" "$name"
			rc=$?
			new=$d/runs/$name/new-failures
			if [ -n "$BASELINE_RC" ]; then
				new_failures "$d/runs/baseline/failures" \
					"$d/runs/$name/failures" >"$new"
			else
				cp "$d/runs/$name/failures" "$new"
			fi
			if [ $rc = 0 ]; then
				verdict=survived
			elif [ -s "$new" ] || [ "$BASELINE_RC" != 1 ]; then
				verdict=killed
				killers=$(first_few "$new" 4)
				[ -n "$killers" ] || killers="(boot failed; see $d/runs/$name/boot.log)"
			else
				verdict=inconclusive
				killers="only the baseline's own failures"
			fi
		fi
	fi
	if [ -n "$CUR_SAVE" ] && ! revert_current; then
		die "$b: could not restore $MSRC after $name: stopping (saved files in $CUR_SAVE)"
	fi
	# a uapi mutant left its headers and selftests behind: rebuild them
	if [ $uapi = 1 ]; then
		in_mbuild "$S/kernel.sh" build "$b" >"$d/logs/mutants/$name-unbuild.log" 2>&1
		build_guest "$b" "restored"
	fi
	secs=$(($(date +%s) - start))
	msg "$b$VARIANT [$idx/$total] $name: ${verdict^^} (${secs}s)${killers:+: $killers}"
	tsv_row "$(mtsv "$b")" "$name" "$desc" "$expect" "$verdict" \
		"$killers" "$secs"
}

# run_base BASE: prepare, baseline, every selected mutant.
run_base() {
	local b=$1 d p name g globs sel=() idx=0 secs start

	d=$(mbdir "$b")
	read -ra globs <<<"$MUTANTS"	# no pathname expansion
	for p in "$TOP/selftests/mutants/$b"/*.patch; do
		[ -e "$p" ] || continue
		name=$(basename "$p" .patch)
		if [ "$MUTANTS_STALE_ONLY" = 1 ] &&
		   ! mutant_stale "$b" "$name" "$(awk -F'\t' -v n="$name" '$1 == n { r = $8 } END { print r }' "$(mtsv "$b")" 2>/dev/null)"; then
			continue
		fi
		for g in "${globs[@]}"; do
			# shellcheck disable=SC2053
			if [[ $name == $g || $name.patch == $g ]]; then
				sel+=("$p")
				break
			fi
		done
	done
	# rows of mutants that are gone: git keeps them
	if [ -s "$(mtsv "$b")" ]; then
		awk -F'\t' -v dir="$TOP/selftests/mutants/$b" '
			$1 == "baseline" { print; next }
			{ f = dir "/" $1 ".patch"; if ((getline line < f) > 0) print; close(f) }' \
			"$(mtsv "$b")" >"$(mtsv "$b").new" && mv "$(mtsv "$b").new" "$(mtsv "$b")"
	fi
	if [ ${#sel[@]} = 0 ]; then
		warn "$b: no mutant in selftests/mutants/$b matches MUTANTS='$MUTANTS'"
		state[$b]="no mutant selected"
		return 0
	fi
	msg "$b$VARIANT: ${#sel[@]} mutant(s): $(for p in "${sel[@]}"; do basename "$p" .patch; done | paste -sd ' ')"
	prepare "$b"
	case $? in
	0) ;;
	3) state[$b]="SKIPPED: $(cat "$(bdir "$b")/skip-reason" 2>/dev/null)"; return 3 ;;
	*) state[$b]="FAILED before the first mutant (see $d/logs)"; return 1 ;;
	esac
	mkdir -p "$RESULTS/mutants"
	[ "${MUTANTS_APPEND:-0}" = 1 ] || : >"$(mtsv "$b")"
	state[$b]=running
	BASELINE_RC=
	if [ "${MUTANTS_BASELINE:-1}" != 0 ]; then
		start=$(date +%s)
		boot "$b" baseline
		BASELINE_RC=$?
		[ "$BASELINE_RC" = 0 ] || BASELINE_RC=1
		secs=$(($(date +%s) - start))
		if [ "$BASELINE_RC" = 0 ]; then
			msg "$b$VARIANT: baseline (no mutant) passes (${secs}s)"
			tsv_row "$(mtsv "$b")" baseline "the series as it is" "nothing" \
				pass - "$secs"
		else
			warn "$b$VARIANT: the baseline (no mutant) FAILS; mutants are credited only with failures it does not have:"
			sed 's/^/    /' "$d/runs/baseline/failures" | head -n 20 >&2
			tsv_row "$(mtsv "$b")" baseline "the series as it is" "nothing" \
				FAIL "$(first_few "$d/runs/baseline/failures" 4 | tr '\t' ' ')" "$secs"
		fi
	else
		rm -rf "$d/runs/baseline"
	fi
	for p in "${sel[@]}"; do
		idx=$((idx + 1))
		run_mutant "$b" "$p" "$idx" "${#sel[@]}"
	done
	state[$b]="done"
}

# --- report --------------------------------------------------------------------

# mutant_hash BASE NAME: the hash of the mutant's diff, its header aside
# (from its first diff line to the end of the file).
mutant_hash() {
	sed -En '/^(diff|---|\+\+\+|@@) /,$p' "$TOP/selftests/mutants/$1/$2.patch" |
		git hash-object --stdin | cut -c1-12
}

# series_hash BASE: the hash of the code of BASE's kernel patches, in
# series order: each patch from its first "diff --git" on (a selftests-only
# patch changes what tests run, not what a mutant breaks; a changelog
# changes neither).  scripts/status.py computes the same.
series_hash() {
	local p dir=$TOP/patches/$1

	grep -v '^[[:space:]]*\(#\|$\)' "$dir/series" | while read -r p; do
		selftests_only "$dir/$p" || sed -n '/^diff --git /,$p' "$dir/$p"
	done | git hash-object --stdin | cut -c1-12
}

# row_hash BASE NAME: what a row of NAME records, "mutant:series"
row_hash() {
	[ -f "$TOP/selftests/mutants/$1/$2.patch" ] || return 0
	echo "$(mutant_hash "$1" "$2"):$(series_hash "$1")"
}

# mutant_stale BASE NAME HASH: true unless the mutant file NAME exists and
# HASH, the row's, is what row_hash gives now.
mutant_stale() {
	[ -f "$TOP/selftests/mutants/$1/$2.patch" ] || return 0
	[ -n "$3" ] && [ "$3" = "$(row_hash "$1" "$2")" ] && return 1
	return 0
}

# mutants_not_in BASE TSV: the current mutants with no up-to-date row
mutants_not_in() {
	local f name rev list=

	for f in "$TOP"/selftests/mutants/"$1"/*.patch; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .patch)
		rev=$(awk -F'\t' -v n="$name" '$1 == n { r = $8 } END { print r }' "$2")
		if mutant_stale "$1" "$name" "$rev"; then
			list="$list${list:+, }$name"
		fi
	done
	echo "$list"
}

write_report() {
	local out=$RESULTS/mutants.md b d rev name desc expect verdict killers secs
	local k s o total tsv stale shown unrun

	rev=$(tree_rev)
	mkdir -p "$RESULTS"
	{
		echo "# Mutation testing of the selftests"
		echo
		echo "\`make mutants\` (scripts/mutants.sh): each mutant plants one bug in the"
		echo "series; it is *killed* when the selftests' run in QEMU fails (a failed"
		echo "test, a manifest shortfall, a console splat or no exit status), and"
		echo "*survived* when the run passes.  Killing tests are the failures that"
		echo "the unmutated kernel's run (baseline) did not have."
		if [ "${MUTANTS_FAILFAST:-1}" = 1 ]; then
			echo "Mutant boots use \`epoll.failfast=1\`: the guest stops at the first"
			echo "failing binary (the quick ones run first), so the killing tests are"
			echo "that binary's."
		fi
		echo
		echo "- date: $(date -u '+%F %H:%M UTC')"
		echo "- commit of the tree when this report was written: $rev; each row names the commit its mutant ran at"
		echo "- filters: BASES=\"$BASES\" MUTANTS=\"$MUTANTS\"$([ "$DEBUG" = 1 ] && echo " DEBUG=1 (debug kernels)")"
		echo "- host: $(nproc) cores, accelerator $(cat "$MBUILD/accel" 2>/dev/null || echo "${ACCEL:-?}"), BOOT_TIMEOUT=${BOOT_TIMEOUT}s"
		if [ -n "$REPORT_NOTE" ]; then
			echo "- $REPORT_NOTE"
		else
			echo "- total wall time: $(( $(date +%s) - T0 ))s"
		fi
		for b in $ALL_BASES; do
			d=$(mbdir "$b")
			tsv=$(mtsv "$b")
			[ "$REPORT_TSV" = results.tsv ] || tsv=$d/$REPORT_TSV
			# a base this run did not select: its rows from earlier runs
			[ -z "${state[$b]}" ] && [ -s "$(mtsv "$b")" ] && ! [[ " $BASES " == *" $b "* ]] &&
				{ state[$b]=earlier; tsv=$(mtsv "$b"); }
			echo
			echo "## $b"
			echo
			case ${state[$b]} in
			done) ;;
			earlier) echo "Not run this time: the rows below are from earlier runs (see each row's commit)."
				 echo ;;
			running) echo "**Interrupted**: the mutants below are the ones that finished."
				 echo ;;
			*) echo "Not run: ${state[$b]:-not reached}."
			   continue ;;
			esac
			echo "| mutant | description | expected killer | result | killing tests (first few) | seconds | commit |"
			echo "| --- | --- | --- | --- | --- | ---: | --- |"
			k=0; s=0; o=0; total=0; stale=0
			while IFS=$'\t' read -r name desc expect verdict killers secs rev hash; do
				shown=$verdict
				# A row only counts for the mutant and the series it
				# ran against: one changed or removed since is
				# reported, not scored.
				if [ "$name" != baseline ] && mutant_stale "$b" "$name" "$hash"; then
					shown="$verdict (stale: mutant or series changed or mutant removed since $rev)"
				fi
				printf '| %s | %s | %s | **%s** | %s | %s | %s |\n' "$name" \
					"$(md_escape <<<"$desc")" "$(md_escape <<<"$expect")" \
					"$shown" "$(md_escape <<<"$killers")" "$secs" "${rev:-?}"
				[ "$name" = baseline ] && continue
				if [ "$shown" != "$verdict" ]; then
					stale=$((stale + 1))
					continue
				fi
				total=$((total + 1))
				case $verdict in
				killed) k=$((k + 1)) ;;
				survived) s=$((s + 1)) ;;
				*) o=$((o + 1)) ;;
				esac
			done <"$tsv"
			echo
			echo "Totals for $b: $total mutants, $k killed, $s survived, $o other (n/a, build-failed, inconclusive)$([ $stale -gt 0 ] && echo "; $stale stale rows not counted")."
			unrun=$(mutants_not_in "$b" "$tsv")
			[ -n "$unrun" ] && echo && echo "Never run in their current form: $unrun."
			if [ $s -gt 0 ]; then
				echo
				echo "Survivors (test gaps): $(awk -F'\t' '$4 == "survived" { printf "%s%s", sep, $1; sep = ", " }' "$tsv")."
			fi
		done
		# hand-written reading notes (what each run covered, what was
		# seen), kept apart so that a new run cannot overwrite them
		if [ -s "$RESULTS/mutants/notes.md" ]; then
			echo
			cat "$RESULTS/mutants/notes.md"
		fi
	} >"$out"
	msg "report: $out"
}

# rebuild_report: results/mutants.md again from what build/mutants holds
# (results/mutants/BASE.tsv and each run's output in build/mutants), with
# the killing tests worked out anew where a run's output is still there;
# runs nothing and changes no results/mutants/BASE.tsv.
rebuild_report() {
	local b d name desc expect verdict killers secs new out

	for b in $BASES; do
		d=$(mbdir "$b")
		if [ ! -s "$(mtsv "$b")" ]; then
			state[$b]="no results in $(mtsv "$b")"
			continue
		fi
		BASELINE_RC=$(awk -F'\t' '$1 == "baseline" { print ($4 == "pass") ? 0 : 1 }' "$(mtsv "$b")")
		[ -d "$d/runs/baseline" ] && failures "$d/runs/baseline" >"$d/runs/baseline/failures"
		out=$d/results.report.tsv
		mkdir -p "$d"
		: >"$out"
		while IFS=$'\t' read -r name desc expect verdict killers secs rev hash; do
			if { [ "$verdict" = killed ] || [ "$verdict" = inconclusive ]; } &&
			   [ -f "$d/runs/$name/boot.log" ]; then
				new=$d/runs/$name/new-failures
				failures "$d/runs/$name" >"$d/runs/$name/failures"
				if [ -n "$BASELINE_RC" ]; then
					new_failures "$d/runs/baseline/failures" \
						"$d/runs/$name/failures" >"$new"
				else
					cp "$d/runs/$name/failures" "$new"
				fi
				verdict=killed
				killers=$(first_few "$new" 4)
				if [ -z "$killers" ] && [ "$BASELINE_RC" = 1 ]; then
					verdict=inconclusive
					killers="only the baseline's own failures"
				fi
				[ -n "$killers" ] || killers="(boot failed; see ${d#"$TOP"/}/runs/$name/boot.log)"
			fi
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$desc" "$expect" \
				"$verdict" "$killers" "$secs" "${rev:-?}" "$hash" >>"$out"
		done <"$(mtsv "$b")"
		state[$b]="done"
	done
	REPORT_TSV=results.report.tsv
	REPORT_NOTE="report rebuilt by scripts/mutants.sh --report from results/mutants/*.tsv (killing tests worked out anew where build/mutants still holds a run's output); run time: the seconds column"
	write_report
}

# --- main ----------------------------------------------------------------------

REPORT_TSV=results.tsv
REPORT_NOTE=
if [ "${1:-}" = --report ]; then
	rebuild_report
	exit 0
fi

mkdir -p "$MBUILD"
exec 9>"$MBUILD/lock"
flock -n 9 || die "another make mutants runs ($MBUILD/lock)"
trap on_exit EXIT
trap on_signal INT TERM HUP
rm -f "$TIMINGS" "$MBUILD/accel"

if [ "$MUTANTS_SRC" != copy ] && [ "${MUTANTS_FORCE:-0}" != 1 ] && others_running; then
	die "make test, stress or bench is running: it shares build/<base>/src with make mutants; wait for it, or use MUTANTS_SRC=copy (or MUTANTS_FORCE=1)"
fi

# A run that was killed without its trap (SIGKILL, power) left a mutant in.
if [ -L "$MBUILD/applied" ] && [ -d "$MBUILD/applied" ]; then
	warn "a previous run left $(cat "$MBUILD/applied/origin") applied: restoring it"
	restore "$(readlink -f "$MBUILD/applied")" || die "could not restore the source tree"
fi

# The manifest as it is now: guest.sh's check-manifest.py reads $MANIFEST, so
# an edit of selftests/manifest.txt during the run cannot change its verdicts.
mkdir -p "$MBUILD"
cp "$TOP/selftests/manifest.txt" "$MBUILD/manifest.snapshot"
export MANIFEST=$MBUILD/manifest.snapshot
msg "mutants: BASES=\"$BASES\" MUTANTS=\"$MUTANTS\"; build dir $MBUILD"
# The selftests use the tools base's kselftest_harness.h, whatever BASES is.
TB=$(tools_base) || exit 1
STEP_BASE=$TB step "$MBUILD/$TB/logs/source.log" "$TB: source" \
	"$S/kernel.sh" source "$TB" || exit 1
mkdir -p "$MBUILD/$TB"
[ -d "$MBUILD/$TB/src" ] && [ ! -L "$MBUILD/$TB/src" ] ||
	ln -sfn "$BUILD/$TB/src" "$MBUILD/$TB/src"

rc=0
REPORT_DUE=1
for b in $BASES; do
	run_base "$b"
	case $? in
	0) ;;
	3) [ $rc = 0 ] && rc=3 ;;	# as make test: a skipped base is no pass
	*) rc=1 ;;
	esac
done
REPORT_DUE=0
write_report
echo
for b in $BASES; do
	d=$(mbdir "$b")
	if [ "${state[$b]}" = "done" ] || [ "${state[$b]}" = running ]; then
		echo "$b: $(awk -F'\t' '$1 != "baseline" { n++; c[$4]++ }
			END { printf "%d mutants: %d killed, %d survived", n, c["killed"], c["survived"];
			      o = n - c["killed"] - c["survived"]; if (o) printf ", %d other", o }' "$(mtsv "$b")")"
		awk -F'\t' '$4 == "survived" { print "  survived: " $1 }' "$(mtsv "$b")"
	else
		echo "$b: ${state[$b]:-not reached}"
	fi
done
echo "total wall time: $(( $(date +%s) - T0 ))s; report: $RESULTS/mutants.md"
exit $rc
}
