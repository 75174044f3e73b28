#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-bases.sh: the bases are data (make check-bases).
#
#   1. No code names a base: outside scripts/bases/*.conf, a line of
#      scripts/, Makefile or .ci/ that is not a comment may not name one,
#      but for the files listed in ALLOWED below (test fixtures, CI's
#      shared tarball), each with its reason.
#   2. A dry run: a copy of the tracked tree (in build/check-bases/tree)
#      gets one more base, a copy of the tools base's .conf under a new
#      name, and nothing else.  Every job's base list (all_bases) must
#      list it, and make test's job loop (for_each_base, as test.sh runs
#      it) must take it through its source stage.  The tools base's
#      source is shared with build/ (a symlink) when it is unpacked there.
#
# Exit 0 when both hold.  The dry run unpacks one kernel source (a minute
# or two, about 1.5 GB in build/check-bases).

. "$(dirname "$0")/lib.sh"

{
NEW=zz-copy
W=$BUILD/check-bases
rc=0

# file: why it may name a base
ALLOWED="
scripts/check-retries.sh:fixtures: runner output of made-up targets, held to selftests/retries-allowed.txt
scripts/fresh-root.sh:places CI's shared v3.19 tarball (../shared/linux-3.19.tar.xz) in the clean root
.ci/run:CI's shared v3.19 tarball
scripts/bench-report.py:report text about the 6.12 bench kernel's configuration
"

# --- 1. no base names in code ------------------------------------------------
names=$(all_bases | sed 's/\./\\./g; s/ /|/g')
hits=$(cd "$TOP" && git grep -nE "(^|[^0-9A-Za-z.])($names)([^0-9A-Za-z]|$)" -- scripts Makefile .ci |
	grep -v '^scripts/bases/' |
	grep -vE '^[^:]+:[0-9]+:[[:space:]]*(#|"""|//|\*)' || true)
while IFS= read -r h; do
	[ -n "$h" ] || continue
	f=${h%%:*}
	echo "$ALLOWED" | grep -q "^$f:" && continue
	echo "names a base: $h"
	rc=1
done <<<"$hits"
[ $rc = 0 ] && echo "no code outside scripts/bases/ names a base (allowed: $(echo "$ALLOWED" | cut -d: -f1 | xargs))"

# --- 2. a copied .conf is picked up ------------------------------------------
TB=$(tools_base) || exit 1
rm -rf "$W"
mkdir -p "$W/tree" "$W/build"
(cd "$TOP" && git ls-files -z | xargs -0 cp --parents -t "$W/tree") ||
	die "could not copy the tracked tree"
ln -s "$TOP/../shared" "$W/shared" 2>/dev/null
grep -v '^TOOLS_BASE=' "$TOP/scripts/bases/$TB.conf" |
	sed 's/^BASE_ORDER=.*/BASE_ORDER=999/' >"$W/tree/scripts/bases/$NEW.conf"
if [ -d "$BUILD/$TB/src" ]; then
	mkdir -p "$W/build/$TB"
	ln -s "$BUILD/$TB/src" "$W/build/$TB/src"
fi
echo "dry run in $W/tree: scripts/bases/$NEW.conf (a copy of $TB.conf), no other file added or edited"
(
	cd "$W/tree" || exit 1
	git -C "$TOP" diff --quiet HEAD -- || echo "(the copy is of the work tree, with its uncommitted changes)"
	TOP=$W/tree BUILD=$W/build TIMINGS=$W/build/timings.txt BASES='' \
	bash -c '
		. scripts/lib.sh
		echo "all_bases: $(all_bases)"
		case " $(all_bases) " in
		*" '"$NEW"' "*) ;;
		*) echo "FAIL: all_bases does not list '"$NEW"'"; exit 1 ;;
		esac
		seen=
		dry() { echo "for_each_base: $1: $2"; [ "$1" = '"$NEW"' ] && [ "$2" = ok ] && seen=1; return 0; }
		BASES='"$NEW"' for_each_base dry
		[ -n "$seen" ] || { echo "FAIL: '"$NEW"' did not pass its source stage (logs: $BUILD/'"$NEW"'/logs)"; exit 1; }
		echo "'"$NEW"': source stage done: $(cat "$BUILD/'"$NEW"'/source-version")"
	'
) || rc=1
[ $rc = 0 ] && rm -rf "$W/build/$NEW" && echo "check-bases: pass"
exit $rc
}
