#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftest-patches.sh [--check] [BASE...]: the selftests as patches of the
# series, under tools/testing/selftests/filesystems/epoll/.
#
# selftests/ stays the one source of truth; this script generates, per
# base that has selftests/intree/<base>/, one patch per topic:
#
#   wake     epoll_wake_flags.c, epoll_wake_modes.c, epoll_race_stress.c,
#            thread_util.h, wake_common.h, epoll_uapi.h
#   modwait  epoll_mod_wait.c, epoll_mod_wait_leak.c, epoll_fuzz.c,
#            epoll_mod_wait.h (include/epoll_mod_wait.h)
#
# each with the Makefile's TEST_GEN_PROGS and the .gitignore entries.
# In the tree, "kselftest_harness.h" and "kselftest.h" are included as
# "../../kselftest_harness.h" (as epoll_wakeup_test.c does), and
# epoll_uapi.h is selftests/intree/epoll_uapi.h: the flags, with the
# system call number from the kernel's headers ($(KHDR_INCLUDES)) instead
# of the header scripts/guest-progs.sh generates from the installed ones.
#
# A patch is selftests/intree/<base>/<topic>.head (mail headers,
# changelog, Signed-off-by, "---" and the notes; edit that, never the
# generated patch) followed by the diffstat and the diff, computed in a
# scratch repository holding the base's Makefile and .gitignore, from the
# root commit of build/<base>/check/git (the clean base; make
# check-patches builds it).  The patch file is the series entry whose
# name starts with the number in the head's "[PATCH n/m]".
#
#   (no --check)  rewrite patches/<base>/<that entry>
#   --check       regenerate into a scratch directory and fail if the
#                 series' patch differs (make check-patches runs this);
#                 also build the tests from the patched tree of "git am"
#                 with the selftests' own Makefile (KHDR_INCLUDES from
#                 "make headers"), so the patches are known to compile
#
# Bases without selftests/intree/<base>/ are skipped with a note: v3.19
# has no kselftest_harness.h (it came in v4.11), and mainline would take
# the tests on the current base.

. "$(dirname "$0")/lib.sh"

{
CHECK=0
if [ "${1:-}" = --check ]; then
	CHECK=1
	shift
fi
BASES_ARG=${*:-$(all_bases)}
DIR=tools/testing/selftests/filesystems/epoll
UP=$TOP/selftests/intree

topic_files() {
	case $1 in
	wake) echo "epoll_wake_flags.c epoll_wake_modes.c epoll_race_stress.c thread_util.h wake_common.h epoll_uapi.h" ;;
	modwait) echo "epoll_mod_wait.c epoll_mod_wait_leak.c epoll_fuzz.c epoll_mod_wait.h" ;;
	esac
}

topic_progs() {
	case $1 in
	wake) echo "epoll_wake_flags epoll_wake_modes epoll_race_stress" ;;
	modwait) echo "epoll_mod_wait epoll_mod_wait_leak epoll_fuzz" ;;
	esac
}

# source_of NAME: where NAME comes from
source_of() {
	case $1 in
	epoll_uapi.h) echo "$UP/epoll_uapi.h" ;;
	epoll_mod_wait.h) echo "$TOP/include/epoll_mod_wait.h" ;;
	*) echo "$TOP/selftests/$1" ;;
	esac
}

# install_file NAME DEST: the tree's copy of a selftest source
install_file() {
	sed -e 's|^#include "kselftest_harness.h"|#include "../../kselftest_harness.h"|' \
	    -e 's|^#include "kselftest.h"|#include "../../kselftest.h"|' \
		"$(source_of "$1")" >"$2"
}

# series_entry BASE N: the series entry numbered N
series_entry() {
	grep -v '^#' "$TOP/patches/$1/series" | grep -E "^0*$2-" | head -n 1
}

# gen_topic BASE REPO TOPIC OUTFILE: commit TOPIC in REPO, write its patch
gen_topic() {
	local b=$1 repo=$2 topic=$3 out=$4 head f p stat

	head=$UP/$b/$topic.head
	for f in $(topic_files "$topic"); do
		install_file "$f" "$repo/$DIR/$f" || return 1
	done
	# each program after the last TEST_GEN_PROGS line, in the order given
	python3 - "$repo/$DIR/Makefile" $(topic_progs "$topic") <<-'PY'
	import sys
	path, progs = sys.argv[1], sys.argv[2:]
	lines = open(path).read().split("\n")
	last = max(k for k, l in enumerate(lines) if l.startswith("TEST_GEN_PROGS"))
	lines[last + 1:last + 1] = [f"TEST_GEN_PROGS += {p}" for p in progs]
	open(path, "w").write("\n".join(lines))
	PY
	for p in $(topic_progs "$topic"); do
		echo "$p" >>"$repo/$DIR/.gitignore"
	done
	git -C "$repo" add -A "$DIR" &&
	git -C "$repo" -c user.name=x -c user.email=x@x commit -q -m "$topic" ||
		return 1
	stat=$(git -C "$repo" show --stat=72 --format= HEAD)
	{
		cat "$head"
		echo
		echo "$stat" | sed '/^$/d'
		echo
		git -C "$repo" show --format= --no-color --abbrev=9 --no-renames HEAD
	} >"$out"
}

gen_base() {
	local b=$1 outdir=$2 git=$BUILD/$1/check/git repo root topic n entry

	[ -d "$git/.git" ] || die "$git: run make check-patches BASES=$b first (it builds the clean base)"
	root=$(git -C "$git" rev-list --max-parents=0 HEAD) || return 1
	repo=$(mktemp -d)
	git -C "$repo" init -q
	mkdir -p "$repo/$DIR"
	for f in Makefile .gitignore; do
		git -C "$git" show "$root:$DIR/$f" >"$repo/$DIR/$f" || return 1
	done
	git -C "$repo" add -A &&
	git -C "$repo" -c user.name=x -c user.email=x@x commit -q -m base || return 1
	for topic in wake modwait; do
		[ -f "$UP/$b/$topic.head" ] || continue
		n=$(sed -n 's/^Subject: \[PATCH \([0-9]*\)\/[0-9]*\].*/\1/p' "$UP/$b/$topic.head")
		entry=$(series_entry "$b" "$(printf %04d "$n")")
		[ -n "$entry" ] || die "patches/$b/series has no entry $n for $topic"
		gen_topic "$b" "$repo" "$topic" "$outdir/$entry" || return 1
		echo "$entry"
	done
	rm -rf "$repo"
}

# build_check BASE: make the tests from the tree of "git am" of the series
build_check() {
	local b=$1 git=$BUILD/$1/check/git log=$BUILD/$1/logs/selftest-patches-build.log

	mkdir -p "$(dirname "$log")"
	# A make of our own (make test calls this at MAKELEVEL 1, where
	# lib.mk would leave OUTPUT empty and write the binaries to /), with
	# the output directory given explicitly.
	(cd "$git" && git checkout -q -f HEAD && git clean -q -f -d -x &&
	 env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS make -s headers >/dev/null &&
	 env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS \
		make -C "$DIR" -s OUTPUT="$git/$DIR") >"$log" 2>&1 ||
		{ echo "  building the tests in the patched tree failed, see $log"; tail -n 20 "$log"; return 1; }
	for p in $(topic_progs wake) $(topic_progs modwait); do
		[ -x "$git/$DIR/$p" ] ||
			{ echo "  $DIR/$p was not built, see $log"; return 1; }
	done
	echo "  built from the patched tree: $(topic_progs wake) $(topic_progs modwait)"
	(cd "$git" && git clean -q -f -d -x)
}

rc=0
for b in $BASES_ARG; do
	if [ ! -d "$UP/$b" ]; then
		echo "$b: no selftests/intree/$b, no selftest patches (see the header of $0)"
		continue
	fi
	if [ $CHECK = 1 ]; then
		tmp=$(mktemp -d)
		entries=$(gen_base "$b" "$tmp") || { rc=1; rm -rf "$tmp"; continue; }
		for e in $entries; do
			if cmp -s "$tmp/$e" "$TOP/patches/$b/$e"; then
				echo "$b: $e matches selftests/"
			else
				echo "$b: $e differs from what selftests/ generates (run scripts/selftest-patches.sh $b):"
				diff -u "$TOP/patches/$b/$e" "$tmp/$e" | head -n 40
				rc=1
			fi
		done
		rm -rf "$tmp"
		[ $rc = 0 ] && { build_check "$b" || rc=1; }
	else
		entries=$(gen_base "$b" "$TOP/patches/$b") || { rc=1; continue; }
		for e in $entries; do
			echo "$b: wrote patches/$b/$e"
		done
	fi
done
exit $rc
}
