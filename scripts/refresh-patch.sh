#!/bin/bash
# Rewrite the topmost quilt patch in git format-patch form: its header and
# changelog kept, then the diffstat and a "diff --git" body with index lines
# regenerated from the quilt backup files.  Run in a tree where the series
# is pushed up to the patch (QUILT_PATCHES and QUILT_PC set as kernel.sh
# sets them); `quilt refresh` alone writes quilt's own diff format.
#
#   scripts/refresh-patch.sh [patch-name]
case "${1:-}" in --help|-h) sed -n '2,/^[^#]/{/^#/!d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac
set -eu
top=${1:-$(quilt top)}
name=$(basename "$top")
patch=$QUILT_PATCHES/$name
pc=${QUILT_PC:-.pc}/$name
body=$(mktemp)
trap 'rm -f "$body"' EXIT

for f in $(quilt files "$name"); do
	old=$pc/$f
	[ -s "$old" ] || old=/dev/null
	new=$f
	[ -e "$new" ] || new=/dev/null
	# --no-index exits 1 when the files differ
	git diff --no-index --no-color --abbrev=9 "$old" "$new" |
		sed -e "1s|^diff --git .*|diff --git a/$f b/$f|" \
		    -e "s|^--- a/.*|--- a/$f|" -e "s|^+++ b/.*|+++ b/$f|" \
		    >>"$body" || true
done
sed -i -e "s|^--- a//dev/null|--- /dev/null|" "$body"

# The diffstat exactly as git format-patch prints it: from a scratch
# repository holding the old files, with the body applied and committed.
repo=$(mktemp -d)
trap 'rm -f "$body"; rm -rf "$repo"' EXIT
git -C "$repo" init -q
for f in $(quilt files "$name"); do
	if [ -s "$pc/$f" ]; then
		mkdir -p "$repo/$(dirname "$f")"
		cp "$pc/$f" "$repo/$f"
	fi
done
git -C "$repo" add -A >/dev/null 2>&1
git -C "$repo" -c user.name=x -c user.email=x@x commit -q --allow-empty -m base
git -C "$repo" apply --index "$body"
git -C "$repo" -c user.name=x -c user.email=x@x commit -q -m new
stat=$(git -C "$repo" show --stat=72 --format= HEAD)

python3 - "$patch" "$body" "$stat" <<'PY'
import sys
patch, body, stat = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
text = open(patch).read()
head = text[:text.index("\n---\n") + 5]
open(patch, "w").write(head + stat.strip("\n") + "\n\n" + body)
PY
echo "refreshed $patch"
