#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# man-pages-patches.sh [--check]: the patches for the Linux man-pages
# project in patches/man-pages/, generated from man/epoll_ctl.2 and
# man/epoll_mod_wait.2 (the one source of truth for the text).
#
#   (no argument)  regenerate patches/man-pages/*.patch and its series
#   --check        regenerate into a scratch directory and fail if that
#                  differs from patches/man-pages; apply the committed
#                  series to the pristine man-pages tree with "git am" and
#                  with "quilt push -a" and fail unless both give the same
#                  tree; check the patch headers; lint every page the
#                  series touches with the man-pages project's own
#                  "make lint-man" (groff, mandoc and tbl checks) and with
#                  "mandoc -Tlint -W style" and "groff -ww -z -man", and
#                  fail on any message that the pristine page does not
#                  already give (CONTRIBUTING, "Lint").
#
# The base is the man-pages source that Debian 12 ships: source package
# manpages 6.03-2, whose orig tarball is the upstream man-pages 6.03
# release (Debian's binary manpages-dev 6.03-2 has exactly these pages:
# checked below when it is installed).  It is fetched once with
# "apt-get source --download-only" through a private deb-src list (the
# machine's own apt configuration is not touched), checked against the
# SHA-256 in the .dsc, and kept in the download cache, so later runs are
# offline.  MANPAGES_ORIG=/path/to/manpages_6.03.orig.tar.xz skips the
# download; MANPAGES_APT_URI changes the mirror.
#
# How man/*.2 becomes the man-pages text (roff comments, invisible in man/):
#   .\" man-pages: begin NAME ... .\" man-pages: end
#       a block of man/epoll_ctl.2 that is inserted into the upstream page
#       (NAME says where: see insert_epoll_ctl below);
#   .\" man-pages: skip ... .\" man-pages: end
#       lines of man/epoll_mod_wait.2 left out of the upstream page;
#   .\"+TEXT
#       TEXT is a line of the upstream page only.
# Everything else (the glue: the list of flags allowed with EPOLLEXCLUSIVE,
# SEE ALSO entries, the page header) is done here.

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{
MP_VERSION=6.03
MP_DEBIAN_VERSION=6.03-2
MP_ORIG=manpages_$MP_VERSION.orig.tar.xz
MP_ORIG_SHA256=c675c1aa561daa95dae29a7c30cd20b16b38aae5360a3278919ac882ff91c066
MP_TOPDIR=manpages-$MP_VERSION
MP_APT_URI=${MANPAGES_APT_URI:-http://deb.debian.org/debian}
OUT=$TOP/patches/man-pages
WORK=$BUILD/man-pages

# The author of the kernel series (patches/*/0002-*), for From: and
# Signed-off-by:.  The dates are fixed so that regenerating is stable.
AUTHOR_NAME="Seed 3416f058 maintainers"
AUTHOR_EMAIL="maintainers@users.noreply.a-seed-3416f058.example"
DATE1="2026-12-05T12:00:00+0000"
DATE2="2026-12-05T12:01:00+0000"

# mp_orig: the path of the verified orig tarball, downloading it if needed.
mp_orig() {
	local f=${MANPAGES_ORIG:-$DL_CACHE/$MP_ORIG} tmp apto

	if [ ! -f "$f" ] && [ -z "${MANPAGES_ORIG:-}" ]; then
		echo "man-pages: fetching Debian's manpages $MP_DEBIAN_VERSION source (once; cached in $DL_CACHE)" >&2
		mkdir -p "$DL_CACHE"
		tmp=$(mktemp -d) || return 1
		mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/dl"
		echo "deb-src $MP_APT_URI bookworm main" >"$tmp/sources.list"
		apto=(-o "Dir::Etc::SourceList=$tmp/sources.list"
		      -o "Dir::Etc::SourceParts=$tmp/none"
		      -o "Dir::State::Lists=$tmp/lists"
		      -o "Dir::Cache=$tmp/cache" -o "Debug::NoLocking=1"
		      -o "APT::Sandbox::User=root")
		# Only the orig tarball is needed (the Debian diff does not
		# touch the epoll pages, see above), so a failure to get the
		# rest is not fatal as long as the tarball arrived.
		{ apt-get -q "${apto[@]}" update &&
		  (cd "$tmp/dl" && apt-get -q "${apto[@]}" source --download-only \
			"manpages=$MP_DEBIAN_VERSION"); } >&2
		if [ -f "$tmp/dl/$MP_ORIG" ]; then
			mv "$tmp/dl/$MP_ORIG" "$f.part" && mv "$f.part" "$f"
		fi
		rm -rf "$tmp"
	fi
	[ -f "$f" ] || { echo "man-pages: no $MP_ORIG (apt-get source manpages=$MP_DEBIAN_VERSION failed?)" >&2; return 1; }
	if ! echo "$MP_ORIG_SHA256  $f" | sha256sum -c --quiet - >/dev/null 2>&1; then
		echo "man-pages: $f is not the $MP_ORIG of manpages $MP_DEBIAN_VERSION (SHA-256 differs)" >&2
		return 1
	fi
	echo "$f"
}

# mp_unpack DIR: the pristine man-pages tree in DIR, a git repository with
# one commit (fixed identity and date, so that its ids are stable).
mp_unpack() {
	local dir=$1 orig

	orig=$(mp_orig) || return 1
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -C "$dir" --strip-components=1 -xJf "$orig" || return 1
	[ -f "$dir/man2/epoll_ctl.2" ] || { echo "man-pages: $orig has no man2/epoll_ctl.2" >&2; return 1; }
	(cd "$dir" && git init -q && git add -A -f . &&
	 GIT_AUTHOR_DATE=2023-02-15T00:00:00+0000 GIT_COMMITTER_DATE=2023-02-15T00:00:00+0000 \
	 git -c user.name="man-pages $MP_VERSION" -c user.email=man-pages@invalid \
		commit -q -m "man-pages $MP_VERSION (Debian manpages $MP_DEBIAN_VERSION orig)") ||
		return 1
}

# Debian 12's binary package must have exactly these pages (informational
# when it is not installed).
mp_cross_check_debian() {
	local dir=$1 p rc=0

	dpkg-query -W -f='${Version}' manpages-dev 2>/dev/null | grep -qx "$MP_DEBIAN_VERSION" || {
		echo "man-pages: manpages-dev $MP_DEBIAN_VERSION not installed, Debian cross-check skipped"
		return 0
	}
	for p in man2/epoll_ctl.2 man2/epoll_wait.2 man7/epoll.7; do
		if ! zcat "/usr/share/man/$p.gz" | cmp -s - "$dir/$p"; then
			echo "man-pages: $p differs from Debian's manpages-dev $MP_DEBIAN_VERSION"
			rc=1
		fi
	done
	[ $rc = 0 ] && echo "man-pages: epoll pages identical to Debian 12's manpages-dev $MP_DEBIAN_VERSION"
	return $rc
}

# block FILE NAME: the lines of FILE between ".\" man-pages: begin NAME"
# and ".\" man-pages: end", with ".\"+" lines uncommented.
block() {
	awk -v name="$2" '
		$0 ~ "^\\.\\\\\" man-pages: begin " name "( |$)" { on = 1; n++; next }
		on && /^\.\\" man-pages: end/ { on = 0; next }
		on { sub(/^\.\\"\+/, ""); print }
		END { if (n != 1) { print "man-pages: block " name ": found " n + 0 " times" > "/dev/stderr"; exit 1 } }
	' "$1"
}

# upstream_page FILE: FILE without its skip blocks, markers and header
# comment, ".\"+" lines uncommented, in the man-pages project's form.
upstream_page() {
	awk '
		BEGIN { head = 1 }
		head && /^\.\\"/ { next }          # the series header comment
		head && /^\.TH / {
			print ".\\\" SPDX-License-Identifier: GPL-2.0-or-later"
			print ".\\\""
			print ".TH " tolower($2) " " $3 " (date) \"Linux man-pages (unreleased)\""
			head = 0
			next
		}
		/^\.\\" man-pages: skip/ { skip = 1; next }
		/^\.\\" man-pages: end/ { skip = 0; next }
		/^\.\\" man-pages: / { next }
		skip { next }
		{ sub(/^\.\\"\+/, ""); print }
	' "$1"
}

# insert_epoll_ctl SRC PAGE: patch 1's changes to man2/epoll_ctl.2.
insert_epoll_ctl() {
	local src=$1 page=$2 flag err

	flag=$(block "$src" flag) || return 1
	err=$(block "$src" error) || return 1
	# (ENVIRON, not awk -v, which would eat the backslashes of roff)
	FLAG=$flag ERR=$err awk '
		# EPOLLROUNDROBIN may be given with EPOLLEXCLUSIVE
		/^The following values may be specified in conjunction with$/ { list = 1 }
		list && $0 == ".BR EPOLLWAKEUP ," { print; getline; if ($0 != "and") exit 3
			getline; if ($0 != ".BR EPOLLET .") exit 3
			print ".BR EPOLLET ,"; print "and"; print ".BR EPOLLROUNDROBIN ."
			list = 0; done1 = 1; next }
		# the flag after EPOLLEXCLUSIVE, the last input flag
		/^\.SH RETURN VALUE$/ { print ENVIRON["FLAG"]; done2 = 1 }
		# the error after the last EPOLLEXCLUSIVE one
		/^\.SH ERRORS$/ { errs = 1 }
		{ print }
		errs && $0 == "refers to an epoll instance." { print ENVIRON["ERR"]; errs = 0; done3 = 1 }
		END { if (!(done1 && done2 && done3)) exit 3 }
	' "$page" >"$page.new" || { echo "man-pages: man2/epoll_ctl.2 of $MP_VERSION has moved on: an anchor is missing" >&2; return 1; }
	mv "$page.new" "$page"
}

# see_also PAGE ENTRY BEFORE: add ".BR ENTRY," to PAGE's SEE ALSO list, in
# front of the line ".BR BEFORE" (with or without its comma).
see_also() {
	awk -v e="$2" -v b="$3" '
		/^\.SH SEE ALSO$/ { sa = 1 }
		sa && ($0 == ".BR " b "," || $0 == ".BR " b) { print ".BR " e ","; sa = 0; done = 1 }
		{ print }
		END { if (!done) exit 3 }
	' "$1" >"$1.new" || { echo "man-pages: no SEE ALSO entry $3 in $1" >&2; return 1; }
	mv "$1.new" "$1"
}

commit_as_author() {
	local date=$1 msg=$2

	git add -A . &&
	GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
	git -c user.name="$AUTHOR_NAME" -c user.email="$AUTHOR_EMAIL" \
		commit -q -F "$msg" &&
	if [ -n "${3:-}" ]; then
		git -c user.name="$AUTHOR_NAME" -c user.email="$AUTHOR_EMAIL" \
			notes add -f -m "$3" HEAD
	fi
}

# generate DIR: write the patches and their series into DIR.
generate() {
	local out=$1 repo=$WORK/gen msg

	mp_unpack "$repo" || return 1
	msg=$(mktemp) || return 1
	(
	set -e
	cd "$repo"

	insert_epoll_ctl "$TOP/man/epoll_ctl.2" man2/epoll_ctl.2
	cat >"$msg" <<EOF
epoll_ctl.2: Document EPOLLROUNDROBIN

EPOLLEXCLUSIVE (Linux 4.5) stops the thundering herd when several epoll
instances watch one file, but an exclusive wakeup always goes to the
first instance on the wait queue that has a waiting thread, so one
thread of a pool takes nearly every event while the others stay idle.
The kernel patch "epoll: add EPOLLROUNDROBIN" adds a flag that makes
the instance that took a wakeup move to the end of the wait queue, so
that successive events go to the instances in turn.  It is a rework of
the round-robin half of Jason Baron's 2015 RFC "Add epoll round robin
wakeup mode", whose EPOLLEXCLUSIVE half went into Linux 4.5.

Document the flag, the rule that once a round-robin item is on a wait
queue every exclusive entry of that queue takes its turn (so that a
plain EPOLLEXCLUSIVE waiter cannot take the events away from the
round-robin ones), that it is valid only together with EPOLLEXCLUSIVE,
and the EINVAL that enforces it.

The text was written from the kernel patches (fs/eventpoll.c and
kernel/sched/wait.c) and checked against their selftests, which test
the order of the wakeups and every EINVAL rule.  The Linux version is
left as a FIXME until the kernel patches are merged.

Link: https://lore.kernel.org/lkml/cover.1423509605.git.jbaron@akamai.com/
Signed-off-by: $AUTHOR_NAME <$AUTHOR_EMAIL>
EOF
	commit_as_author "$DATE1" "$msg" \
"Against man-pages $MP_VERSION, as Debian 12 ships it (manpages $MP_DEBIAN_VERSION).
Generated from man/epoll_ctl.2 of the epoll series by
scripts/man-pages-patches.sh; \"make lint-man\" reports nothing new."

	upstream_page "$TOP/man/epoll_mod_wait.2" >man2/epoll_mod_wait.2
	see_also man2/epoll_ctl.2 "epoll_mod_wait (2)" "epoll_wait (2)"
	see_also man2/epoll_wait.2 "epoll_mod_wait (2)" "epoll (7)"
	see_also man7/epoll.7 "epoll_mod_wait (2)" "epoll_wait (2)"
	cat >"$msg" <<EOF
epoll_mod_wait.2: New page documenting epoll_mod_wait(2)

An event loop typically changes its interest list between two waits,
which costs one epoll_ctl(2) call per change plus one for the wait.
The kernel patch "epoll: add epoll_mod_wait()" adds a system call that
runs a batch of epoll_ctl(2) operations, in order and stopping at the
first failure, with a result per operation, and then optionally waits
like epoll_pwait(2), with a nanosecond timeout or a deadline on a
chosen clock.  It is a rework of Fam Zheng's 2015 RFC.

Add a page for it, and refer to it from epoll_ctl(2), epoll_wait(2)
and epoll(7).

The text was written from the kernel patches (fs/eventpoll.c and
include/uapi/linux/eventpoll.h) and checked against their selftests,
which test every argument error, the order of the commands and their
error fields, the clocks, timeouts and deadlines, and the signal mask.
The Linux version, and the system call number that the example's
header takes from the kernel's headers, are still to come: the kernel
patches are not merged.

Link: https://lore.kernel.org/lkml/1421747878-30744-1-git-send-email-famz@redhat.com/
Signed-off-by: $AUTHOR_NAME <$AUTHOR_EMAIL>
EOF
	commit_as_author "$DATE2" "$msg" \
"Against man-pages $MP_VERSION, as Debian 12 ships it (manpages $MP_DEBIAN_VERSION).
Generated from man/epoll_mod_wait.2 of the epoll series by
scripts/man-pages-patches.sh; \"make lint-man\" reports nothing on the
new page and nothing new on the others."

	mkdir -p "$out"
	rm -f "$out"/*.patch
	git format-patch -q -n --zero-commit --no-signature --notes \
		-o "$out" HEAD~2..HEAD
	{
		echo "# Patches for the Linux man-pages project (man-pages $MP_VERSION, the"
		echo "# source of Debian 12's manpages $MP_DEBIAN_VERSION), generated from man/*.2"
		echo "# by scripts/man-pages-patches.sh: edit man/, then run it; do not edit"
		echo "# these files.  make check-patches applies and lints them."
		(cd "$out" && ls -1 ./*.patch | sed 's|^\./||')
	} >"$out/series"
	) || { rm -f "$msg"; return 1; }
	rm -f "$msg"
}

# lint_msgs DIR PAGE...: every lint message for the pages (paths relative
# to DIR), line and column numbers dropped, sorted.
lint_msgs() {
	local dir=$1 p
	shift
	# The man-pages project's own linters (lib/lint-man.mk), run in a
	# copy of its build system that holds only these pages: its make
	# scans every page of the tree at start-up (18 s here, 1 s so).
	rm -rf "$dir.lint"
	mkdir -p "$dir.lint"
	(cd "$dir" && cp -a Makefile lib etc "$dir.lint/" &&
	 cp --parents "$@" "$dir.lint/") || return 1
	(
	cd "$dir.lint" || exit 1
	make -k lint-man LINTMAN="$(printf './%s ' "$@")" 2>&1 >/dev/null |
		grep -v -e '^make\(\[[0-9]*\]\)\?: ' -e '^lib/.*warning: \(overriding\|ignoring\)' |
		sed 's/^/make lint-man: /'
	# and what scripts/lint-man.sh runs on man/, at mandoc's style
	# level, less the messages that lib/lint-man.mk filters out of mandoc
	# as the project's conventions (lower-case titles, "(date)")
	for p in "$@"; do
		mandoc -Tlint -W style "$p" 2>&1 |
			grep -v -e 'STYLE: lower case character in document title:' \
				-e 'UNSUPP: ignoring macro in table:' \
				-e 'WARNING: cannot parse date, using it verbatim: TH (date)' \
				-e 'WARNING: empty block: UR'
		groff -ww -z -man "$p" 2>&1 | sed 's/^/groff: /'
	done
	) | sed -E 's/(\.[0-9][a-z]*):[0-9]+(:[0-9]+)?:/\1:/' | sort
	rm -rf "$dir.lint"
}

check_headers() {
	local p=$1 n=$2 m=$3 author sobs

	grep -q '^From: ' "$p" && grep -q '^Date: ' "$p" ||
		{ echo "  $p: no From: or Date: header"; return 1; }
	grep -qE "^Subject: \[PATCH 0*$n/$m\] [a-z0-9_.]+\.[0-9]: " "$p" ||
		{ echo "  $p: Subject is not \"[PATCH $n/$m] page.N: ...\""; return 1; }
	# format-patch folds a long From: header onto a second line
	author=$(sed -n '/^From: /{s/^From: //;N;s/\n / /;p;q}' "$p" | sed 's/\n.*//')
	sobs=$(grep '^Signed-off-by: ' "$p" | sed 's/^Signed-off-by: //' | sort -u)
	[ "$sobs" = "$author" ] ||
		{ echo "  $p: Signed-off-by is not the author's alone: '$sobs' vs '$author'"; return 1; }
}

check() {
	local tmp bad=0 t1 t2 pages n=0 m p new

	mkdir -p "$WORK"
	tmp=$(mktemp -d "$WORK/check.XXXXXX") || return 1

	echo "== man-pages: patches/man-pages against man-pages $MP_VERSION (Debian manpages $MP_DEBIAN_VERSION)"
	# 1. generated == committed
	if ! generate "$tmp/gen" >"$tmp/gen.log" 2>&1; then
		cat "$tmp/gen.log"
		echo "man-pages: generation failed"
		rm -rf "$tmp"
		return 1
	fi
	if diff -ru "$OUT" "$tmp/gen" >"$tmp/gen.diff"; then
		echo "man-pages: patches/man-pages is what man/*.2 generates"
	else
		echo "man-pages: patches/man-pages is not what man/*.2 generates" \
			"(run scripts/man-pages-patches.sh):"
		sed 's/^/    /' "$tmp/gen.diff" | head -n 60
		bad=1
	fi

	# 2. headers; git am and quilt push -a of the committed series agree
	mapfile -t series < <(grep -v '^#' "$OUT/series" | grep .)
	m=${#series[@]}
	for p in "${series[@]}"; do
		n=$((n + 1))
		check_headers "$OUT/$p" "$n" "$m" || bad=1
	done
	mp_unpack "$tmp/am" || { rm -rf "$tmp"; return 1; }
	mp_cross_check_debian "$tmp/am" || bad=1
	pages=$(cd "$OUT" && cat "${series[@]}" | sed -n 's|^+++ b/||p' | sort -u)
	cp -a "$tmp/am" "$tmp/pristine"
	if (cd "$tmp/am" && git -c user.name=check -c user.email=check@invalid \
			am -q "${series[@]/#/$OUT/}"); then
		t1=$(cd "$tmp/am" && git rev-parse 'HEAD^{tree}')
	else
		echo "man-pages: git am of patches/man-pages/series failed"
		bad=1
	fi
	mkdir -p "$tmp/quilt"
	tar -C "$tmp/quilt" --strip-components=1 -xJf "$(mp_orig)"
	if (cd "$tmp/quilt" && QUILT_PATCHES=$OUT quilt push -a -q >"$tmp/quilt.log" 2>&1); then
		t2=$(cd "$tmp/quilt" && GIT_DIR=$tmp/quilt.git git init -q &&
		     GIT_DIR=$tmp/quilt.git GIT_WORK_TREE=. git add -A -f -- . ':!.pc' &&
		     GIT_DIR=$tmp/quilt.git git write-tree)
	else
		echo "man-pages: quilt push -a failed:"
		sed 's/^/    /' "$tmp/quilt.log"
		bad=1
	fi
	if [ -n "${t1:-}" ] && [ "${t1:-}" = "${t2:-}" ]; then
		echo "man-pages: git am and quilt push -a give the same tree ($t1)"
	elif [ -n "${t1:-}" ] && [ -n "${t2:-}" ]; then
		echo "man-pages: git am tree $t1 differs from the quilt tree $t2"
		bad=1
	fi

	# 3. lint: nothing new on any page the series touches
	if [ -n "${t1:-}" ]; then
		# shellcheck disable=SC2086
		lint_msgs "$tmp/pristine" $(cd "$tmp/pristine" && ls $pages 2>/dev/null) >"$tmp/lint.before"
		# shellcheck disable=SC2086
		lint_msgs "$tmp/am" $pages >"$tmp/lint.after"
		new=$(diff "$tmp/lint.before" "$tmp/lint.after" | sed -n 's/^> //p')
		if [ -n "$new" ]; then
			echo "man-pages: new lint messages on the patched pages:"
			echo "$new" | sed 's/^/    /'
			bad=1
		else
			echo "man-pages: lint (make lint-man, mandoc -Tlint -W style, groff -ww): nothing new on" $pages \
				"($(wc -l <"$tmp/lint.before") message(s) already in $MP_VERSION)"
		fi
	fi
	rm -rf "$tmp"
	[ $bad = 0 ] && echo "man-pages: pass"
	return $bad
}

case ${1:-} in
--check)
	check
	exit
	;;
"")
	generate "$OUT" || exit 1
	echo "wrote $OUT:"
	cat "$OUT/series"
	exit 0
	;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac
}
