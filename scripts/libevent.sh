#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libevent.sh: libevent 2.1.12-stable, Debian 12's source package, stock
# and with bench/libevent/patches/ (its epoll backend hands the changelist
# and the wait to one epoll_mod_wait(2) call), built statically for the
# guests and checked against each other on this machine.
#
#   libevent.sh source     apt-get source libevent (bookworm and
#                          bookworm-security) through a private sources
#                          list in build/libevent/apt/, the machine's apt
#                          configuration untouched; the version it got goes
#                          to build/libevent/source-version.  Skipped when
#                          that is there.
#   libevent.sh build [stock|patched|emulated|all]
#                          copy the source to build/libevent/VARIANT/src,
#                          quilt push bench/libevent/patches/ (patched and
#                          emulated), autoreconf as Debian does, configure
#                          (static libraries, no OpenSSL, no samples) and
#                          make -j1 under nice -n 19, the test programs
#                          (test/regress, test/bench, test/bench_cascade,
#                          test/bench_http, ...) linked -static.  emulated
#                          is the patched library calling the user-space
#                          model of epoll_mod_wait in bench/libevent/emu/
#                          instead of the kernel, for this machine only.
#                          all (the default): the three.
#   libevent.sh check      test/regress of each variant built, on this
#                          machine, with the default epoll backend, with
#                          EVENT_EPOLL_USE_CHANGELIST=1, and with that and
#                          EVENT_PRECISE_TIMER=1 (timerfd); every variant
#                          must pass and fail the same tests as stock.  A
#                          test whose outcome differs is run again, alone,
#                          5 times in both variants: it is a difference
#                          only if one variant never passes it then.
#                          The tests libevent leaves off by default (live
#                          DNS, long timeouts) run once each, for the
#                          record, not compared.  About 15 minutes.
#                          Summary: build/libevent/check/summary.txt; exits
#                          1 on a difference.
#   libevent.sh mutants    the planted bugs, bench/libevent/mutants/*.patch
#                          (first line: "Mutant: <what it breaks>; expect
#                          killed by: <tests>"): each NAME.patch goes on
#                          top of the emulated variant, built in
#                          build/libevent/mutant-NAME/, whose test/regress
#                          runs in the modes that take the batched path
#                          (changelist, changelist-timerfd).  A test that
#                          fails there, fails again alone, and passes alone
#                          in the emulated variant (which must be built)
#                          kills the mutant; a mutant that no test kills
#                          SURVIVED.  One line per mutant; summary in
#                          build/libevent/mutants/summary.txt; exits 1 if
#                          one survived.
#
# Parameters (environment): FORCE=1 rebuilds a variant whose inputs did
# not change; CHECK_VARIANTS ("patched emulated"; stock is always run),
# CHECK_MODES ("epoll changelist changelist-timerfd"), CHECK_OFF=0 leaves
# the off-by-default tests out; MUTANT_MODES ("changelist
# changelist-timerfd"); RTIMEOUT (seconds: 3600, mutants 900) stops a
# test/regress run that hangs.
#
# Needs autoconf, automake, libtool, quilt and dpkg-dev; installs those
# that are missing (as scripts/deps.sh does).  Output: build/libevent/.

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{
set -e

LE=$BUILD/libevent
SELF=$TOP/scripts/libevent.sh
# not the kernel jobs' timings file: these are no kernel stages
# shellcheck disable=SC2034 # run_step reads both
TIMINGS=${LIBEVENT_TIMINGS:-$LE/timings.txt}
# shellcheck disable=SC2034
STEP_BASE=libevent
PATCHES=$TOP/bench/libevent/patches
EMU_H=$TOP/bench/libevent/emu/epoll_mod_wait_emu.h
MUTANT_DIR=$TOP/bench/libevent/mutants
# the programs the guests run, linked -static
PROGS="test/regress test/bench test/bench_cascade test/bench_http test/bench_httpclient"
VARIANTS="stock patched emulated"

APT=(-o "Dir::Etc::SourceList=$LE/apt/sources.list"
	-o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$LE/apt/lists"
	-o "Dir::Cache=$LE/apt/cache"
	-o Debug::NoLocking=1)

# need_tools: install the Debian packages this script calls, if missing
need_tools() {
	"$TOP/scripts/deps.sh" need autoconf:autoreconf automake:automake \
		libtool:libtoolize quilt:quilt dpkg-dev:dpkg-source \
		build-essential:gcc binutils:readelf >/dev/null ||
		die "could not install the build tools (scripts/deps.sh need)"
}

# srcdir: the unpacked Debian source of the version "source" got
srcdir() {
	local v

	[ -f "$LE/source-version" ] || die "no $LE/source-version: run '$0 source' first"
	v=$(cat "$LE/source-version")
	echo "$LE/dl/libevent-${v%-*}"
}

do_source() {
	local dsc v

	if [ -f "$LE/source-version" ] && [ -d "$(srcdir)" ]; then
		msg "libevent $(cat "$LE/source-version") is in $(srcdir) (remove $LE/source-version to fetch again)"
		return 0
	fi
	need_tools
	rm -rf "$LE/apt" "$LE/dl" "$LE/source-version"
	mkdir -p "$LE/apt/lists/partial" "$LE/apt/cache/archives/partial" "$LE/dl"
	cat >"$LE/apt/sources.list" <<-EOF
	deb-src http://deb.debian.org/debian bookworm main
	deb-src http://deb.debian.org/debian-security bookworm-security main
	EOF
	run_step "$LE/logs/apt-update.log" "libevent: apt-get update (build/libevent/apt)" \
		apt-get -q "${APT[@]}" update
	# the download runs as root (no _apt sandbox): build/ may not be
	# readable by _apt
	run_step "$LE/logs/apt-source.log" "libevent: apt-get source libevent" \
		env -C "$LE/dl" apt-get -q "${APT[@]}" -o APT::Sandbox::User=root \
		source libevent
	dsc=$(ls "$LE"/dl/libevent_*.dsc)
	[ "$(echo "$dsc" | wc -l)" = 1 ] || die "expected one .dsc in $LE/dl, got: $dsc"
	v=$(sed -n 's/^Version: //p' "$dsc")
	[ -n "$v" ] || die "no Version: in $dsc"
	echo "$v" >"$LE/source-version"
	[ -d "$(srcdir)" ] || die "apt-get source did not unpack $(srcdir)"
	msg "libevent $v in $(srcdir)"
}

# configure_args SRC: static libraries only; the regression tests and
# the test/bench programs are kept, the samples and TLS are not
configure_args() {
	local a="--disable-shared --enable-static --disable-openssl --disable-samples"

	grep -q -- '--disable-mbedtls' "$1/configure" && a="$a --disable-mbedtls"
	echo "$a"
}

# stamp VARIANT: what a variant's build depends on
stamp() {
	{
		cat "$LE/source-version" "$SELF"
		echo "$1"
		if [ "$1" != stock ]; then
			cat "$PATCHES/series"
			sed -e 's/#.*//' "$PATCHES/series" | while read -r p; do
				if [ -n "$p" ]; then
					cat "$PATCHES/$p"
				fi
			done
		fi
		case $1 in
		emulated) cat "$EMU_H" ;;
		mutant-*) cat "$EMU_H" "$MUTANT_DIR/${1#mutant-}.patch" ;;
		esac
	} | sha256sum | cut -c1-16
}

# build_variant VARIANT: stock, patched, emulated, or mutant-NAME (emulated
# with bench/libevent/mutants/NAME.patch on top of the series)
build_variant() {
	local v=$1 d=$LE/$1 cppflags='' p

	case $v in
	stock|patched|emulated) ;;
	mutant-*) [ -f "$MUTANT_DIR/${v#mutant-}.patch" ] ||
		die "no $MUTANT_DIR/${v#mutant-}.patch" ;;
	*) die "unknown variant '$v' (stock, patched, emulated or all)" ;;
	esac
	if [ "${FORCE:-0}" != 1 ] && [ "$(cat "$d/stamp" 2>/dev/null)" = "$(stamp "$v")" ] &&
		[ -x "$d/src/test/regress" ]; then
		msg "$v: up to date in $d/src (FORCE=1 rebuilds)"
		return 0
	fi
	rm -rf "$d"
	mkdir -p "$d/logs"
	cp -a "$(srcdir)" "$d/src"
	if [ "$v" != stock ]; then
		# QUILT_PC: dpkg-source's .pc holds Debian's own patches
		run_step "$d/logs/quilt.log" "$v: quilt push -a" \
			env -C "$d/src" QUILT_PATCHES="$PATCHES" QUILT_PC=.pc-epoll-mod-wait \
			quilt push -a
	fi
	if [ "$v" != "${v#mutant-}" ]; then
		run_step "$d/logs/mutant.log" "$v: patch -p1 (the planted bug)" \
			patch -d "$d/src" -p1 -i "$MUTANT_DIR/${v#mutant-}.patch"
	fi
	# Debian's patches touch Makefile.am: regenerate, as dh_autoreconf does
	run_step "$d/logs/autoreconf.log" "$v: autoreconf -fi" \
		env -C "$d/src" nice -n 19 autoreconf -fi
	# shellcheck disable=SC2046
	run_step "$d/logs/configure.log" "$v: configure" \
		env -C "$d/src" nice -n 19 ./configure $(configure_args "$d/src")
	case $v in
	emulated|mutant-*) cppflags="-include $EMU_H" ;;
	esac
	# -all-static: libtool's word for linking the programs -static
	run_step "$d/logs/make.log" "$v: make -j1" \
		env -C "$d/src" nice -n 19 make -j1 LDFLAGS=-all-static CPPFLAGS="$cppflags"
	for p in $PROGS; do
		[ -x "$d/src/$p" ] || die "$v: no $p"
		if readelf -lW "$d/src/$p" | grep -q 'program interpreter'; then
			die "$v: $p is not linked statically"
		fi
	done
	stamp "$v" >"$d/stamp"
}

do_build() {
	local what=${1:-all} v p

	[ "$what" = all ] && what=$VARIANTS
	need_tools
	srcdir >/dev/null
	for v in $what; do
		build_variant "$v"
	done
	echo "libevent $(cat "$LE/source-version"), static programs:"
	for v in $what; do
		for p in $PROGS; do
			echo "  $LE/$v/src/$p"
		done
	done
	echo "  (and each variant's test/test-* programs and .libs/libevent*.a)"
}

# --- check ----------------------------------------------------------------------

# mode_env MODE: the environment of a check mode, as VAR=VALUE words
mode_env() {
	case $1 in
	epoll) ;;
	changelist) echo "EVENT_EPOLL_USE_CHANGELIST=1" ;;
	changelist-timerfd) echo "EVENT_EPOLL_USE_CHANGELIST=1 EVENT_PRECISE_TIMER=1" ;;
	*) die "unknown check mode '$1' (epoll, changelist, changelist-timerfd)" ;;
	esac
}

# parse_regress OUT: "TEST OUTCOME" lines from test/regress's output.  A
# test's line is "TEST: [forking] OK"; a failure adds lines and ends with
# "  [NAME FAILED]"; a test that skips itself can print "  SKIP why" and
# then its outcome on the same line, glued to the reason.
parse_regress() {
	awk '
	/^[A-Za-z0-9_.\/-]+: / {
		t = $1; sub(/:$/, "", t)
		if ($NF == "OK" || $NF == "SKIPPED" || $NF == "DISABLED") r[t] = $NF
		else if (!(t in r) || r[t] != "FAILED") r[t] = "RUNNING"
		if (!(t in seen)) { seen[t] = 1; order[n++] = t }
		cur = t
	}
	/^  SKIP / && r[cur] == "RUNNING" {
		if ($0 ~ /OK$/) r[cur] = "OK"
		else if ($0 ~ /SKIPPED$/) r[cur] = "SKIPPED"
	}
	/^  \[.* FAILED\]$/ { r[cur] = "FAILED" }
	/: exited with / { r[cur] = "FAILED" }
	END { for (i = 0; i < n; i++) print order[i], (r[order[i]] == "RUNNING" ? "FAILED" : r[order[i]]) }
	' "$1"
}

# run_regress VARIANT MODE OUT [TEST...]: test/regress with MODE's
# environment (and none of the outer EVENT_* ones), stdout to OUT.out,
# stderr to OUT.err, one "TEST OUTCOME" line per test to OUT.res
# (OK, FAILED, SKIPPED or DISABLED; a retried test's last outcome).
# RTIMEOUT (seconds, 3600) stops a run that hangs; its test FAILED.
run_regress() {
	local v=$1 mode=$2 out=$3 rc=0
	shift 3

	# shellcheck disable=SC2046
	timeout "${RTIMEOUT:-3600}" \
		env $(env | sed -n 's/^\(EVENT_[A-Za-z0-9_]*\)=.*/-u \1/p') $(mode_env "$mode") \
		"$LE/$v/src/test/regress" "$@" >"$out.out" 2>"$out.err" || rc=$?
	parse_regress "$out.out" >"$out.res"
	echo "$rc" >"$out.rc"
}

# counts RES: "N ok, N failed, N skipped, N disabled"
counts() {
	awk '{ c[$2]++ } END { printf "%d ok, %d failed, %d skipped, %d disabled\n",
		c["OK"], c["FAILED"], c["SKIPPED"], c["DISABLED"] }' "$1"
}

# passes VARIANT MODE TEST N: how many of N runs of TEST alone pass
passes() {
	local v=$1 mode=$2 t=$3 n=$4 i ok=0 o

	o=${RERUN:-$LE/check/rerun}/$v-$mode-${t//\//_}
	mkdir -p "$(dirname "$o")"
	for i in $(seq 1 "$n"); do
		run_regress "$v" "$mode" "$o.$i" "$t"
		if grep -q " OK$" "$o.$i.res"; then
			ok=$((ok + 1))
		fi
	done
	echo "$ok"
}

do_check() {
	local modes=${CHECK_MODES:-epoll changelist changelist-timerfd}
	local others=${CHECK_VARIANTS:-patched emulated} v m t a b sa sb
	local c=$LE/check diffs=0 vs n off

	vs=stock
	for v in $others; do
		[ "$v" = stock ] && continue
		if [ -x "$LE/$v/src/test/regress" ]; then
			vs="$vs $v"
		elif [ "$v" = patched ]; then
			die "no $LE/patched/src/test/regress: run '$0 build' first"
		else
			warn "no $v build: not checked ('$0 build $v')"
		fi
	done
	[ -x "$LE/stock/src/test/regress" ] || die "no $LE/stock/src/test/regress: run '$0 build' first"
	rm -rf "$c"
	mkdir -p "$c"
	for m in $modes; do
		mode_env "$m" >/dev/null
		for v in $vs; do
			STEP_BASE=libevent run_step "$c/$v-$m.log" "check: $v regress ($m)" \
				run_regress "$v" "$m" "$c/$v-$m"
			msg "$v ($m): $(counts "$c/$v-$m.res"), exit $(cat "$c/$v-$m.rc")"
		done
	done

	# the tests libevent leaves out unless named: once each, for the record
	off=$(awk '$2 == "DISABLED" { print $1 }' "$c/stock-changelist.res" 2>/dev/null || true)
	if [ -n "$off" ] && [ "${CHECK_OFF:-1}" = 1 ]; then
		mkdir -p "$c/off"
		msg "off-by-default tests, once each: $(echo "$off" | wc -w) tests x $(echo "$vs" | wc -w) variants ..."
		for t in $off; do
			for v in $vs; do
				RTIMEOUT=300 run_regress "$v" changelist "$c/off/$v-${t//\//_}" "+$t"
			done
		done
	else
		off=
	fi

	{
	echo "libevent $(cat "$LE/source-version"): test/regress on $(uname -sr), $(tree_rev)"
	echo "modes: epoll (default environment), changelist (EVENT_EPOLL_USE_CHANGELIST=1),"
	echo "changelist-timerfd (EVENT_EPOLL_USE_CHANGELIST=1 EVENT_PRECISE_TIMER=1)"
	echo
	for m in $modes; do
		for v in $vs; do
			printf '%-9s %-19s %s\n' "$v" "$m" "$(counts "$c/$v-$m.res")"
		done
	done
	for m in $modes; do
		echo
		echo "== $m"
		t=$(awk '$2 == "FAILED" { print $1 }' "$c/stock-$m.res" | tr '\n' ' ')
		echo "stock fails on this machine: ${t:-none}"
		t=$(awk '$2 == "SKIPPED" { print $1 }' "$c/stock-$m.res" | tr '\n' ' ')
		echo "stock skips: ${t:-none}"
		for v in $vs; do
			[ "$v" = stock ] && continue
			# every test whose outcome differs from stock's
			join -a1 -a2 -e MISSING -o 0,1.2,2.2 \
				<(sort "$c/stock-$m.res") <(sort "$c/$v-$m.res") |
				awk '$2 != $3' >"$c/$v-$m.diff"
			n=$(awk '$2 != "MISSING"' "$c/$v-$m.diff" | wc -l)
			echo "$v: same outcome as stock for all tests but $n"
			while read -r t a b; do
				# a test that bench/libevent/patches/ adds
				if [ "$a" = MISSING ] && { [ "$b" = OK ] || [ "$b" = SKIPPED ]; }; then
					echo "$v: $t (added by the patches): $b"
					continue
				fi
				if [ "$a" = MISSING ] || [ "$b" = MISSING ] ||
					{ [ "$a" != OK ] && [ "$a" != FAILED ]; } ||
					{ [ "$b" != OK ] && [ "$b" != FAILED ]; }; then
					echo "$v: DIFFERENCE $t: stock $a, $v $b"
					diffs=$((diffs + 1))
					continue
				fi
				sa=$(passes stock "$m" "$t" 5)
				sb=$(passes "$v" "$m" "$t" 5)
				if { [ "$sa" = 0 ] && [ "$sb" != 0 ]; } ||
					{ [ "$sb" = 0 ] && [ "$sa" != 0 ]; }; then
					echo "$v: DIFFERENCE $t: stock $a, $v $b; alone, stock passed $sa/5, $v $sb/5"
					diffs=$((diffs + 1))
				else
					echo "$v: flaky $t: stock $a, $v $b; alone, stock passed $sa/5, $v $sb/5"
				fi
			done <"$c/$v-$m.diff"
		done
	done
	if [ -n "$off" ]; then
		echo
		echo "== off by default in libevent (live DNS, long timeouts, timing), run once"
		echo "   each here in the changelist mode, not compared:"
		for t in $off; do
			printf '%-45s' "$t"
			for v in $vs; do
				printf ' %s %s' "$v" "$(cut -d' ' -f2 "$c/off/$v-${t//\//_}.res")"
			done
			echo
		done
	fi
	echo
	if [ $diffs = 0 ]; then
		echo "RESULT: no difference"
	else
		echo "RESULT: $diffs difference(s)"
	fi
	} >"$c/summary.txt"
	cat "$c/summary.txt"
	[ $diffs = 0 ]
}

# --- mutants --------------------------------------------------------------------

do_mutants() {
	local o=$LE/mutants modes=${MUTANT_MODES:-changelist changelist-timerfd}
	local RTIMEOUT=${RTIMEOUT:-900} p name v m t line fails killers k
	local survived=0 n=0

	set -- "$MUTANT_DIR"/*.patch
	[ -f "$1" ] || die "no mutants in $MUTANT_DIR"
	[ -x "$LE/emulated/src/test/regress" ] ||
		die "no $LE/emulated/src/test/regress: run '$0 build emulated' first"
	need_tools
	rm -rf "$o"
	mkdir -p "$o"
	for p; do
		name=$(basename "$p" .patch)
		v=mutant-$name
		build_variant "$v"
		line=
		k=0
		for m in $modes; do
			mode_env "$m" >/dev/null
			STEP_BASE=libevent run_step "$o/$name-$m.log" "mutants: $name regress ($m)" \
				run_regress "$v" "$m" "$o/$name-$m"
			msg "$name ($m): $(counts "$o/$name-$m.res"), exit $(cat "$o/$name-$m.rc")"
			# a killer fails again alone, and passes without the bug
			killers=
			fails=$(awk '$2 == "FAILED" { print $1 }' "$o/$name-$m.res")
			for t in $fails; do
				if [ "$(RERUN=$o passes "$v" "$m" "$t" 1)" = 0 ] &&
					[ "$(RERUN=$o passes emulated "$m" "$t" 1)" = 1 ]; then
					killers="$killers $t"
					k=$((k + 1))
				else
					killers="$killers $t(flaky:not-counted)"
				fi
			done
			line="$line; $m:${killers:- none}"
		done
		n=$((n + 1))
		if [ $k -gt 0 ]; then
			line="killed   $name$line"
		else
			line="SURVIVED $name$line"
			survived=$((survived + 1))
		fi
		echo "$line" | tee -a "$o/lines.txt"
		t=$(sed -n '1s/.*expect killed by: //p' "$p")
		echo "  expected: $t" >>"$o/lines.txt"
	done
	{
	echo "libevent $(cat "$LE/source-version"): planted bugs, test/regress on $(uname -sr), $(tree_rev)"
	echo "modes: $modes; per mode, the tests that kill the mutant"
	echo
	cat "$o/lines.txt"
	echo
	echo "RESULT: $((n - survived)) killed, $survived survived of $n"
	} >"$o/summary.txt"
	rm -f "$o/lines.txt"
	[ $survived = 0 ]
}

case ${1:-} in
source)  do_source ;;
build)   do_build "${2:-all}" ;;
check)   do_check ;;
mutants) do_mutants ;;
*)       die "usage: $0 source | build [stock|patched|emulated|all] | check | mutants (--help says more)" ;;
esac
exit
}
