#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# lint-man.sh: every page under man/ must be silent under both
# "mandoc -Tlint" and "groff -ww -z -man".

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{

rc=0
for page in "$TOP"/man/*.[1-9]; do
	[ -e "$page" ] || continue
	echo "lint $page"
	out=$(mandoc -Tlint -W style "$page" 2>&1; groff -ww -z -man "$page" 2>&1)
	if [ -n "$out" ]; then
		echo "$out"
		rc=1
	fi
done
exit $rc
exit
}
