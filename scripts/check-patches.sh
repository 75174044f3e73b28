#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-patches.sh [BASE...]: prove that each series is postable.
#
#   - every patch has From, Date and "Subject: [PATCH n/m]" headers, a
#     Signed-off-by for its author only, and (feature patches) a Link:;
#   - "git am" of the series onto a clean base gives exactly the tree that
#     "quilt push -a" gave in build/BASE/src;
#   - scripts/checkpatch.pl --strict (from the 6.12 tree: v3.19's does not
#     run on current perl) reports 0 errors and 0 warnings on every feature
#     patch (a selftests-only patch may waive warnings); toolchain build fixes are checked without --strict; whatever
#     checkpatch still reports must be waived, with a reason, in the
#     patch notes (" - TYPE: why", below the "---");
#   - the selftest patches are what scripts/selftest-patches.sh generates
#     from selftests/, and the tests build in the tree of "git am";
#   - every mutant of make mutants (selftests/mutants/BASE/*.patch) still
#     applies, without fuzz, to the tree of "git am";
#   - scripts/check-retries.sh: the guest's rerun of mainline's racy
#     tests (selftests/retries-allowed.txt) forgives nothing else;
#   - with CHECK_BISECT=1 (slow, not in CI), every prefix of the series
#     builds a bzImage.
#
# Unpacks and patches the sources itself when needed (as make test does).

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{
TB=$(tools_base) || exit 1
CHECKPATCH=$BUILD/$TB/src/scripts/checkpatch.pl
rc=0
mkdir -p "$BUILD/$TB/logs"
"$TOP/scripts/kernel.sh" source "$TB" >"$BUILD/$TB/logs/source.log" 2>&1 ||
	die "no $TB source (for checkpatch.pl): see $BUILD/$TB/logs/source.log"

# section FILE SERIES: the banner section a series entry belongs to
# (build-fix, backport, feature, tests or local).  A backport is a mainline fix
# carried for an old base: checked like a build fix (its "commit <sha>
# upstream." line is what stable backports carry, and checkpatch flags it).
series_sections() {
	awk '/^# *Build fixes/ { s = "build-fix" }
	     /^# *Mainline fix/ { s = "backport" }
	     /^# *Feature/ { s = "feature" }
	     /^# *Tests only/ { s = "tests" }
	     /^# *Local/ { s = "local" }
	     /^[^#[:space:]]/ { print s, $1 }' "$1"
}

check_headers() {
	local p=$1 kind=$2 n=$3 m=$4 author sobs

	grep -q '^From: ' "$p" || { echo "  no From: header"; return 1; }
	grep -q '^Date: ' "$p" || { echo "  no Date: header"; return 1; }
	# format-patch pads n to the width of m
	grep -qE "^Subject: \[PATCH 0*$n/$m\] " "$p" ||
		{ echo "  Subject is not [PATCH $n/$m]"; return 1; }
	author=$(sed -n '/^From: /{s/^From: //;N;s/\n / /;p;q}' "$p" | sed 's/\n.*//')
	sobs=$(grep '^Signed-off-by: ' "$p" | sed 's/^Signed-off-by: //' | sort -u)
	if [ "$sobs" != "$author" ]; then
		echo "  Signed-off-by is not the author's alone: '$sobs' vs '$author'"
		return 1
	fi
	if [ "$kind" = feature ] && ! grep -q '^Link: ' "$p"; then
		echo "  feature patch without a Link: to the RFC"
		return 1
	fi
}

# waived PATCH TYPE: the patch notes (between "---" and the diff) name
# TYPE as a checkpatch waiver, with its reason: " - TYPE: why".
waived() {
	sed -n '/^---$/,/^diff --git/p' "$1" | grep -qE -- "^ +- $2: "
}

# checkpatch runs in an empty directory of its own: run in a git
# repository it misreads the patches (spurious TRAILING_WHITESPACE), and it
# may leave a .checkpatch-camelcase cache in its working directory.
run_checkpatch() {
	local p=$1 kind=$2 out last types t rc=0

	mkdir -p "$BUILD/checkpatch"

	case $kind in
	build-fix|backport) out=$(cd "$BUILD/checkpatch" && "$CHECKPATCH" --no-tree --show-types -q "$p") ;;
	*)         out=$(cd "$BUILD/checkpatch" && "$CHECKPATCH" --no-tree --strict --show-types -q "$p") ;;
	esac
	last=$(echo "$out" | grep -E '^total: ' || echo "total: 0 errors, 0 warnings, 0 checks (clean)")
	printf '  checkpatch (%s%s): %s\n' "$kind" \
		"$(case $kind in build-fix|backport) ;; *) echo ', --strict' ;; esac)" "${last#total: }"
	# A feature patch of kernel code has no warning at all; one that only
	# adds selftests (tools/testing/selftests/) may waive warnings that do
	# not apply to user-space test code, like any check, in its notes.
	if [ "$kind" = feature ] && ! echo "$last" | grep -q ' 0 errors, 0 warnings' &&
	   { ! selftests_only "$p" || ! echo "$last" | grep -q ' 0 errors,'; }; then
		echo "$out" | sed 's/^/    /'
		return 1
	fi
	# Anything left must be waived, with a reason, in the patch notes.
	types=$(echo "$out" | sed -n 's/^\(WARNING\|ERROR\|CHECK\):\([A-Z_]*\):.*/\2/p' | sort -u)
	for t in $types; do
		if waived "$p" "$t"; then
			echo "    waived $t: $(sed -n '/^---$/,/^diff --git/p' "$p" | sed -n "s/^ *- $t: //p" | head -n 1) ..."
		else
			echo "    $t is not waived in the patch notes:"
			echo "$out" | grep -A3 ":$t:" | sed 's/^/      /'
			rc=1
		fi
	done
	return $rc
}

# git am the series onto a clean copy of the base; print the tree id.
git_am_tree() {
	local b=$1 dir=$BUILD/$1/check repo p

	repo=$dir/git
	if [ ! -d "$repo/.git" ] ||
	   [ "$(cat "$dir/base-stamp" 2>/dev/null)" != "$(cat "$BUILD/$b/src/.source-stamp")" ]; then
		rm -rf "$dir"
		mkdir -p "$repo"
		# copy the patched tree with quilt's backups, then pop: the
		# base is what "quilt pop -a" gives back
		(cd "$BUILD/$b/src" && tar --exclude=.source-stamp \
			--exclude=.series-stamp -cf - .) |
			tar -C "$repo" -xf - || return 1
		(cd "$repo" && QUILT_PATCHES=$TOP/patches/$b quilt pop -a -f -q >/dev/null) ||
			return 1
		rm -rf "$repo/.pc"
		(cd "$repo" && git init -q && git add -A -f . &&
		 git -c user.name=check -c user.email=check@invalid commit -q -m base) ||
			return 1
		cat "$BUILD/$b/src/.source-stamp" >"$dir/base-stamp"
	fi
	cd "$repo" || return 1
	git checkout -q -f "$(git rev-list --max-parents=0 HEAD)" 2>/dev/null &&
	git clean -q -f -d -x &&
	git -c user.name=check -c user.email=check@invalid am -q --keep-cr \
		$(grep -v '^#' "$TOP/patches/$b/series" | grep . |
		  sed "s|^|$TOP/patches/$b/|") >&2 || { git am --abort; return 1; }
	git rev-parse 'HEAD^{tree}'
}

quilt_tree() {
	local src=$BUILD/$1/src tmp

	tmp=$(mktemp -d)
	(cd "$src" && GIT_DIR=$tmp git init -q &&
	 GIT_DIR=$tmp GIT_WORK_TREE=. git add -A -f -- . ':!.pc' \
		':!.source-stamp' ':!.series-stamp' && GIT_DIR=$tmp git write-tree)
	rm -rf "$tmp"
}

# bisect_builds BASE: build a bzImage at every prefix of the series (the
# commits git_am_tree made), in one object directory so that each step
# rebuilds only what the patch touched.  The toolchain build fixes only
# work as a set (gcc 12 needs all of them), so the first prefix built is
# the one that ends with the last build fix; every later one is checked.
bisect_builds() {
	local b=$1 n=0 p obj=$BUILD/$1/bisect-obj repo=$BUILD/$1/check/git
	local kinds log=$BUILD/$1/logs/bisect.log

	mapfile -t kinds < <(series_sections "$TOP/patches/$b/series" | cut -d' ' -f1)
	cd "$repo" || return 1
	for p in $(git rev-list --reverse HEAD --max-count=100 | tail -n +2); do
		n=$((n + 1))
		if [ "${kinds[n - 1]}" = build-fix ] && [ "${kinds[n]}" = build-fix ]; then
			echo "  prefix $n: $(git log -1 --format=%s "$p") (build fix, checked with the set)"
			continue
		fi
		git checkout -q -f "$p" || return 1
		mkdir -p "$obj"
		cp "$(bdir "$b")/obj/.config" "$obj/.config"
		msg "$b: prefix $n builds? $(git log -1 --format=%s)"
		{ make -s -C "$repo" O="$obj" ARCH=x86_64 olddefconfig &&
		  make -C "$repo" O="$obj" ARCH=x86_64 -j"$JOBS" bzImage; } >"$log" 2>&1 ||
			{ echo "  prefix $n does not build (see $log)"; tail -n 15 "$log"; return 1; }
		echo "  prefix $n builds"
	done
}

# check_mutants BASE: each selftests/mutants/BASE/*.patch applies, without
# fuzz, to the tree git_am_tree made.  A series edit that moves the code a
# mutant plants its bug in must bring the mutant along; otherwise make
# mutants, which CI does not run, reports it "n/a" instead of killed.
check_mutants() {
	local b=$1 p bad=0 n=0

	# the planted bugs of make mutants, and the planted leaks that
	# make test DEBUG=1 must fail on (selftests/mutants/debug/BASE)
	for p in "$TOP/selftests/mutants/$b"/*.patch "$TOP/selftests/mutants/debug/$b"/*.patch; do
		[ -e "$p" ] || continue
		n=$((n + 1))
		patch -p1 --dry-run --fuzz=0 -s -f -d "$BUILD/$b/check/git" \
			<"$p" >/dev/null 2>&1 && continue
		echo "$b: mutant ${p#"$TOP"/} does not apply to the series (make mutants would call it n/a)"
		bad=1
	done
	[ $bad = 0 ] && echo "$b: all $n mutants apply to the series"
	return $bad
}

# check_mutant_numbers: a mutant's number names it forever (make mutants
# keys its rows by number): every mutant removed in git history is listed
# in selftests/mutants/retired.txt, no current mutant has a retired
# number (but those reused before the rule), and no number is used twice.
check_mutant_numbers() {
	local R=$TOP/selftests/mutants/retired.txt bad=0 d b f n name dup

	if [ "$(git -C "$TOP" rev-parse --is-shallow-repository 2>/dev/null)" != false ]; then
		echo "mutant numbers: not checked (no full git history here)"
		return 0
	fi
	for d in "$TOP"/selftests/mutants/*/; do
		b=$(basename "$d")
		[ "$b" = debug ] && continue
		dup=$(find "$d" -maxdepth 1 -name '[0-9]*-*.patch' -printf '%f\n' |
			sed 's/-.*//' | sort | uniq -d)
		[ -z "$dup" ] || { echo "mutant numbers: $b uses $(echo $dup) twice"; bad=1; }
		for f in "$d"[0-9]*-*.patch; do
			[ -e "$f" ] || continue
			f=$(basename "$f" .patch)
			n=${f%%-*}
			if grep -qE "^$b $n [^ ]+\$" "$R"; then
				echo "mutant numbers: $b/$f has number $n, retired in $R"
				bad=1
			fi
		done
		while read -r f; do
			f=$(basename "$f" .patch)
			n=${f%%-*} name=${f#*-}
			[ -e "$d$f.patch" ] && continue
			grep -qE "^$b $n $name( |\$)" "$R" || {
				echo "mutant numbers: $b/$f.patch was removed; retire number $n in selftests/mutants/retired.txt"
				bad=1
			}
		done < <(git -C "$TOP" log --all --no-renames --diff-filter=A --name-only \
			--format= -- "selftests/mutants/$b" | grep -E '/[0-9]+-[^/]*\.patch$' | sort -u)
	done
	[ $bad = 0 ] && echo "mutant numbers: none reused, every removed mutant's number retired"
	return $bad
}

check_base() {
	local b=$1 n=0 m kind name bad=0 t1 t2

	mkdir -p "$BUILD/$b/logs"
	base_source "$b"
	case $? in
	0) ;;
	3) echo "$b: SKIPPED, not checked: $(cat "$BUILD/$b/skip-reason")"
	   return 0 ;;
	*) return 1 ;;
	esac
	"$TOP/scripts/kernel.sh" apply "$b" >"$BUILD/$b/logs/apply.log" 2>&1 ||
		{ echo "$b: quilt push -a failed, see $BUILD/$b/logs/apply.log"; return 1; }
	m=$(series_sections "$TOP/patches/$b/series" | wc -l)
	echo "== $b: $m patches"
	while read -r kind name; do
		n=$((n + 1))
		echo "$n/$m $name [$kind]"
		check_headers "$TOP/patches/$b/$name" "$kind" "$n" "$m" || bad=1
		run_checkpatch "$TOP/patches/$b/$name" "$kind" || bad=1
	done < <(series_sections "$TOP/patches/$b/series")
	t1=$(git_am_tree "$b") || { echo "$b: git am failed"; return 1; }
	t2=$(quilt_tree "$b")
	if [ "$t1" = "$t2" ]; then
		echo "$b: git am and quilt push -a give the same tree ($t1)"
	else
		echo "$b: git am tree $t1 differs from the quilt tree $t2"
		bad=1
	fi
	"$TOP/scripts/check-syscall-tables.sh" "$b" "$BUILD/$b/src" || bad=1
	check_mutants "$b" || bad=1
	# the selftest patches are what selftests/ generates, and compile
	"$TOP/scripts/selftest-patches.sh" --check "$b" || bad=1
	if [ "${CHECK_BISECT:-0}" = 1 ]; then
		bisect_builds "$b" || bad=1
	fi
	return $bad
}

CHECK_BASES=${*:-${BASES:-$(all_bases)}}
check_mutant_numbers || rc=1
for b in $CHECK_BASES; do
	check_base "$b" || rc=1
done
# shellcheck disable=SC2086
"$TOP/scripts/posting.sh" --check $CHECK_BASES || rc=1
"$TOP/scripts/man-pages-patches.sh" --check || rc=1
# the rerun of mainline's racy tests forgives only what it may
"$TOP/scripts/check-retries.sh" || rc=1
# the cover letters quote exactly the figures results/ holds
python3 "$TOP/scripts/cover-figures.py" --check || rc=1
exit $rc
}
