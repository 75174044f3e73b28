#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# posting.sh [--check] [BASE...]: the upstream postings of each series,
# ready for "git send-email posting/<base>/<topic>/*.patch".
#
# Each "# Feature: ..." section of patches/<base>/series is one posting
# (topic "roundrobin" or "modwait"): its patches only (no toolchain fixes,
# backports, tests-only or local patches), numbered on their own, with
#   git format-patch -n --cover-letter --base=<base> --notes
# so that the cover letter ends with "base-commit:" and one
# "prerequisite-patch-id:" per patch of the series that the posting needs
# but does not carry (the EPOLLROUNDROBIN patches for epoll_mod_wait, and
# on v3.19 the toolchain fixes and the POLLFREE backport).  The checkpatch
# waivers of the series' patch notes go along, below the "---".
#
# The commits are those of "git am" of the whole series onto the clean
# base, in build/<base>/check/git, which check-patches.sh builds (run
# "make check-patches BASES=<base>" first; the repository is brought up to
# date with the series here if it is behind).  The subject and the text of
# each cover letter come from covers/<base>/cover-<topic>.txt (first line:
# the subject, without "[PATCH 0/n]"; then a blank line and the text), read
# when the posting is generated; the shortlog and diffstat are
# format-patch's.  Edit those files, never the generated *.patch.
#
# posting/ is build output (not tracked), as b4 generates the patches to
# send at send time: the series and covers/ are the source.
#
#   (no --check)  rewrite posting/<base>/<topic>/*.patch
#   --check       generate into a scratch directory (posting/ is left
#                 alone) and fail if that fails or leaves a placeholder;
#                 run checkpatch --strict on every posting patch
#                 (0 errors and 0 warnings, but a selftests-only patch
#                 may waive warnings; every check must be waived in the
#                 patch notes, as in check-patches.sh)
#
# Bases: what a cover letter says about its base, and its "base-commit:"
# (POSTING_BASE_COMMIT, used only when the base tree is exactly
# SRC_TREE_ID), are fields of scripts/bases/<base>.conf.

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{
POSTING=$TOP/posting
CHECKPATCH=$BUILD/$(tools_base)/src/scripts/checkpatch.pl

# upstream_base BASE: the upstream commit of the base, or nothing.
upstream_base() {
	base_field "$1" POSTING_BASE_COMMIT
}

# base_paragraph BASE ROOT: what the cover letter says about the base
# (POSTING_BASE_TEXT, its @...@ filled in, filled to POSTING_BASE_WRAP).
base_paragraph() {
	local b=$1 root=$2 ver up tree text wrap

	text=$(base_field "$b" POSTING_BASE_TEXT)
	wrap=$(base_field "$b" POSTING_BASE_WRAP)
	ver=$(cat "$BUILD/$b/source-version" 2>/dev/null)
	[ -n "$ver" ] || ver=$(base_field "$b" SRC_APT_PKG)
	up=$(cd "$BUILD/$b/check/git" && git show "$root:Makefile" |
		awk '$1 == "VERSION" { v = $3 } $1 == "PATCHLEVEL" { p = $3 }
		     $1 == "SUBLEVEL" { s = $3 } END { printf "v%s.%s.%s", v, p, s }')
	tree=$(cd "$BUILD/$b/check/git" && git rev-parse "$root^{tree}")
	text=${text//@SOURCE_VERSION@/$ver}
	text=${text//@UPSTREAM@/$up}
	text=${text//@TREE@/$tree}
	if [ "${wrap:-0}" != 0 ]; then
		echo "$text" | fmt -w "$wrap"
	else
		echo "$text"
	fi
}

# sections FILE: "kind topic patch" per series entry.
sections() {
	awk '/^# *Build fixes/ { s = "build-fix"; t = "-" }
	     /^# *Mainline fix/ { s = "backport"; t = "-" }
	     /^# *Feature/ { s = "feature"
			     t = /ROUNDROBIN/ ? "roundrobin" : /epoll_mod_wait/ ? "modwait" : "?" }
	     /^# *Tests only/ { s = "tests"; t = "-" }
	     /^# *Local/ { s = "local"; t = "-" }
	     /^[^#[:space:]]/ { print s, t, $1 }' "$1"
}

# repo BASE: build/BASE/check/git with HEAD = the series, one commit per
# patch; print its path.
repo() {
	local b=$1 r=$BUILD/$1/check/git series want have

	[ -d "$r/.git" ] || {
		echo "posting: no $r: run 'make check-patches BASES=$b' first (it builds it)" >&2
		return 1
	}
	mapfile -t series < <(grep -v '^#' "$TOP/patches/$b/series" | grep .)
	want=$(for p in "${series[@]}"; do git patch-id --stable <"$TOP/patches/$b/$p" | cut -d' ' -f1; done)
	have=$(cd "$r" && for c in $(git rev-list --reverse HEAD | tail -n +2); do
		git show "$c" | git patch-id --stable | cut -d' ' -f1; done)
	if [ "$want" != "$have" ]; then
		echo "posting: $r is behind patches/$b, running git am again" >&2
		(cd "$r" &&
		 git checkout -q -f "$(git rev-list --max-parents=0 HEAD)" &&
		 git clean -q -f -d -x &&
		 git -c user.name=check -c user.email=check@invalid am -q --keep-cr \
			"${series[@]/#/$TOP/patches/$b/}" >&2) ||
			{ (cd "$r" && git am --abort); echo "posting: git am of patches/$b failed" >&2; return 1; }
	fi
	echo "$r"
}

# generate BASE OUT: write OUT/<topic>/*.patch for each feature section.
generate() {
	local b=$1 out=$2 r root base kind topic p c n=0 topics first last cover
	local subj blurb up date name email note
	local -a commits

	r=$(repo "$b") || return 1
	root=$(cd "$r" && git rev-list --max-parents=0 HEAD)
	mapfile -t commits < <(cd "$r" && git rev-list --reverse HEAD | tail -n +2)
	up=$(upstream_base "$b")
	if [ -n "$up" ]; then
		. "$TOP/scripts/bases/$b.conf"
		if [ "$(cd "$r" && git rev-parse "$root^{tree}")" != "${SRC_TREE_ID:-}" ]; then
			echo "posting: the $b tree is not v$BASE_VERSION's ($SRC_TREE_ID): no base-commit" >&2
			up=
		fi
	fi

	# the checkpatch waivers of each patch, as notes of its commit
	note=$(mktemp) || return 1
	while read -r kind topic p; do
		c=${commits[n]}
		n=$((n + 1))
		sed -n '/^Notes:$/,/^$/{/^Notes:$/d;/^$/d;s/^    //;p}' \
			"$TOP/patches/$b/$p" >"$note"
		(cd "$r" && git notes remove --ignore-missing "$c" 2>/dev/null &&
		 if [ -s "$note" ]; then
			git -c user.name=posting -c user.email=posting@invalid \
				notes add -F "$note" "$c"
		 fi) || { rm -f "$note"; return 1; }
	done < <(sections "$TOP/patches/$b/series")
	rm -f "$note"
	[ "$n" = "${#commits[@]}" ] ||
		{ echo "posting: $b: ${#commits[@]} commits for $n series entries" >&2; return 1; }

	topics=$(sections "$TOP/patches/$b/series" | awk '$1 == "feature" { print $2 }' | uniq)
	for topic in $topics; do
		[ "$topic" != "?" ] || { echo "posting: $b: a Feature banner names neither EPOLLROUNDROBIN nor epoll_mod_wait" >&2; return 1; }
		cover=$TOP/covers/$b/cover-$topic.txt
		[ -f "$cover" ] || { echo "posting: no $cover" >&2; return 1; }
		read -r first last < <(sections "$TOP/patches/$b/series" |
			awk -v t="$topic" '$1 == "feature" && $2 == t { if (!f) f = NR; l = NR }
					   END { print f, l }')
		first=${commits[first - 1]}
		last=${commits[last - 1]}
		rm -rf "${out:?}/$topic"
		mkdir -p "$out/$topic"
		# the cover letter's From: and Date: are the committer's and
		# now: take the author and the date of the last patch instead
		date=$(cd "$r" && git log -1 --format=%aI "$last")
		name=$(cd "$r" && git log -1 --format=%an "$last")
		email=$(cd "$r" && git log -1 --format=%ae "$last")
		# (the notes in the default ref, refs/notes/commits, so that
		# format-patch heads them "Notes:" as in patches/)
		(cd "$r" && GIT_COMMITTER_DATE=$date GIT_COMMITTER_NAME=$name \
			GIT_COMMITTER_EMAIL=$email git -c core.abbrev=9 \
			format-patch -q -n --abbrev=9 --cover-letter --base="$root" --zero-commit \
			--no-signature --notes -o "$out/$topic" "$first^..$last") || return 1
		subj=$(head -n 1 "$cover")
		[ -n "$subj" ] && [ -z "$(sed -n 2p "$cover")" ] ||
			{ echo "posting: $cover: line 1 must be the subject, line 2 blank" >&2; return 1; }
		blurb=$(tail -n +3 "$cover"; echo; base_paragraph "$b" "$root")
		SUBJ=$subj BLURB=$blurb UP=$up ROOT=$root awk '
			{ sub(/\*\*\* SUBJECT HERE \*\*\*/, ENVIRON["SUBJ"]) }
			$0 == "*** BLURB HERE ***" { print ENVIRON["BLURB"]; next }
			$0 == "base-commit: " ENVIRON["ROOT"] {
				if (ENVIRON["UP"] != "") print "base-commit: " ENVIRON["UP"]
				next
			}
			{ print }
		' "$out/$topic/0000-cover-letter.patch" >"$out/$topic/cover.tmp" &&
		mv "$out/$topic/cover.tmp" "$out/$topic/0000-cover-letter.patch" || return 1
	done
}

# checkpatch_posting PATCH [NAME]: --strict, 0 errors and 0 warnings (a
# selftests-only patch may waive warnings, as check-patches.sh allows);
# any check or warning left must be waived in the notes (" - TYPE: why").
checkpatch_posting() {
	local p=$1 name=${2:-$1} out last t rc=0

	mkdir -p "$BUILD/checkpatch"
	out=$(cd "$BUILD/checkpatch" && "$CHECKPATCH" --no-tree --strict --show-types -q "$p")
	last=$(echo "$out" | grep -E '^total: ' || echo "total: 0 errors, 0 warnings, 0 checks (clean)")
	echo "  $name: checkpatch --strict: ${last#total: }"
	if ! echo "$last" | grep -q ' 0 errors, 0 warnings' &&
	   { ! selftests_only "$p" || ! echo "$last" | grep -q ' 0 errors,'; }; then
		echo "$out" | sed 's/^/    /'
		return 1
	fi
	for t in $(echo "$out" | sed -n 's/^\(WARNING\|ERROR\|CHECK\):\([A-Z_]*\):.*/\2/p' | sort -u); do
		if sed -n '/^---$/,/^diff --git/p' "$p" | grep -qE -- "^ +- $t: "; then
			echo "    waived $t"
		else
			echo "    $t is not waived in the patch notes"
			rc=1
		fi
	done
	return $rc
}

check_base() {
	local b=$1 tmp bad=0 p

	echo "== posting/$b"
	if [ -f "$BUILD/$b/skip-reason" ] && [ ! -d "$BUILD/$b/check/git" ]; then
		echo "posting/$b: SKIPPED, not checked: $(cat "$BUILD/$b/skip-reason")"
		return 0
	fi
	tmp=$(mktemp -d "$BUILD/posting-check.XXXXXX") || return 1
	if ! generate "$b" "$tmp" 2>"$tmp.err"; then
		cat "$tmp.err"
		echo "posting/$b: could not generate"
		rm -rf "$tmp" "$tmp.err"
		return 1
	fi
	rm -f "$tmp.err"
	echo "posting/$b generates from patches/$b/series and covers/$b/cover-*.txt"
	for p in "$tmp"/*/0*.patch; do
		[ -e "$p" ] || continue
		case $p in
		*/0000-cover-letter.patch)
			if grep -q '\*\*\* \(SUBJECT\|BLURB\) HERE \*\*\*' "$p"; then
				echo "  posting/$b/${p#"$tmp"/}: placeholder left"
				bad=1
			fi ;;
		*)	checkpatch_posting "$p" "posting/$b/${p#"$tmp"/}" || bad=1 ;;
		esac
	done
	rm -rf "$tmp"
	return $bad
}

check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi
rc=0
for b in ${*:-${BASES:-$(all_bases)}}; do
	if [ ! -f "$TOP/patches/$b/series" ]; then
		echo "posting: no patches/$b/series" >&2
		rc=1
		continue
	fi
	if [ $check = 1 ]; then
		check_base "$b" || rc=1
	else
		mkdir -p "$POSTING/$b"
		generate "$b" "$POSTING/$b" || { rc=1; continue; }
		echo "wrote posting/$b:"
		(cd "$POSTING/$b" && ls -1 -- */*.patch)
	fi
done
[ $check = 1 ] && [ $rc = 0 ] && echo "posting: pass"
exit $rc
}
