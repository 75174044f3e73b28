# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the epoll series scripts.  Source it; do not run it.
#
# Every long step goes through run_step: one progress line when it starts,
# one with its duration when it ends, its output in a log file, and the log's
# path (plus its tail) when it fails.

set -o pipefail

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-$TOP/build}
CACHE=${EPOLL_SERIES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/epoll-series}
DL_CACHE=${DL_CACHE:-$CACHE/downloads}
JOBS=${JOBS:-$(nproc)}

_t0=$(date +%s)

msg()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
warn() { printf '[%s] WARNING: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }

# Stage timings, appended to $TIMINGS (one "base stage seconds" line each).
TIMINGS=${TIMINGS:-$BUILD/timings.txt}

# run_step LOG LABEL CMD...: run CMD with stdout+stderr to LOG.
run_step() {
	local log=$1 label=$2 start end rc
	shift 2
	mkdir -p "$(dirname "$log")"
	msg "$label ..."
	start=$(date +%s)
	"$@" >"$log" 2>&1
	rc=$?
	end=$(date +%s)
	if [ $rc -ne 0 ]; then
		printf '[%s] FAILED: %s (%ss, exit %d)\n' "$(date +%H:%M:%S)" \
			"$label" $((end - start)) $rc >&2
		echo "----- last lines of $log -----" >&2
		tail -n 25 "$log" >&2
		echo "----- full log: $log -----" >&2
		return $rc
	fi
	msg "$label done ($((end - start))s)"
	mkdir -p "$(dirname "$TIMINGS")"
	label=${label#*: }
	echo "${STEP_BASE:-all} ${label// /_} $((end - start))" >>"$TIMINGS"
	return 0
}

# Load the data file that describes a kernel base (scripts/bases/BASE.conf)
# and the arch/QEMU data it names (scripts/arch/ARCH.conf).
load_base() {
	local base=$1
	[ -f "$TOP/scripts/bases/$base.conf" ] || die "unknown base '$base'"
	# shellcheck disable=SC1090
	. "$TOP/scripts/bases/$base.conf"
	# shellcheck disable=SC1090
	. "$TOP/scripts/arch/$ARCH.conf"
	BDIR=$BUILD/$base
	SRC=$BDIR/src
	OBJ=$BDIR/obj
	HDR=$BDIR/hdr
	LOGS=$BDIR/logs
	STEP_BASE=$base
}

# Content hash of files, for "did the input change" stamps.
hash_files() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }
