#!/bin/bash
# Rewrite the topmost quilt patch in git format-patch form: its header and
# changelog kept, then the diffstat and a "diff --git" body with index lines
# regenerated from the quilt backup files.  Run in a tree where the series
# is pushed up to the patch (QUILT_PATCHES and QUILT_PC set as kernel.sh
# sets them); `quilt refresh` alone writes quilt's own diff format.
#
#   scripts/refresh-patch.sh [patch-name]
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

python3 - "$patch" "$body" <<'PY'
import re, sys
patch, body = sys.argv[1], open(sys.argv[2]).read()
text = open(patch).read()
head = text[:text.index("\n---\n") + 5]
# The diffstat as git format-patch prints it
files, cur = [], None
for line in body.splitlines():
    m = re.match(r"diff --git a/(\S+) b/", line)
    if m:
        cur = [m.group(1), 0, 0]
        files.append(cur)
    elif line.startswith("+") and not line.startswith("+++ "):
        cur[1] += 1
    elif line.startswith("-") and not line.startswith("--- "):
        cur[2] += 1
w = max(len(f[0]) for f in files)
d = max(len(str(f[1] + f[2])) for f in files)
maxch = max(f[1] + f[2] for f in files)
room = max(72 - w - d - 4, 10)
stat = ""
for name, add, rm in files:
    n = add + rm
    if maxch > room:
        a2 = add * room // maxch if add else 0
        r2 = rm * room // maxch if rm else 0
        a2 = max(a2, 1) if add else 0
        r2 = max(r2, 1) if rm else 0
    else:
        a2, r2 = add, rm
    stat += " %-*s | %*d %s\n" % (w, name, d, n, "+" * a2 + "-" * r2)
ins = sum(f[1] for f in files)
dels = sum(f[2] for f in files)
summ = " %d file%s changed" % (len(files), "" if len(files) == 1 else "s")
if ins:
    summ += ", %d insertion%s(+)" % (ins, "" if ins == 1 else "s")
if dels:
    summ += ", %d deletion%s(-)" % (dels, "" if dels == 1 else "s")
open(patch, "w").write(head + stat + summ + "\n\n" + body)
PY
echo "refreshed $patch"
