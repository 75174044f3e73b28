#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kernel.sh STAGE BASE: one kernel job per call.
#
#   source   find, verify and unpack BASE's source into build/BASE/src
#   apply    quilt push the series in patches/BASE/series
#   config   tinyconfig + kernel-config/ fragments, checked line by line
#   build    the boot image (bzImage; Image on arm64) into build/BASE/obj
#            (kept between runs, ccache'd), copied to build/BASE/bzImage
#   headers  make headers_install into build/BASE/hdr
#
# "source" exits 3 when an optional base has no source (reported SKIPPED).

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{

stage=$1
base=$2
[ -n "$stage" ] && [ -n "$base" ] || die "usage: kernel.sh STAGE BASE"
load_base "$base"

# CROSS_COMPILE (scripts/arch/*.conf) prefixes the target compiler only;
# the host tools are built with the host's gcc.
kmake() {
	local cc=${CROSS_COMPILE}gcc hostcc=gcc

	if command -v ccache >/dev/null; then
		export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}
		# paths relative to the clone, so that another clone hits
		export CCACHE_BASEDIR=$TOP
		cc="ccache $cc"
		hostcc="ccache gcc"
	fi
	make -C "$SRC" O="$1" ARCH="$KARCH" CROSS_COMPILE="$CROSS_COMPILE" \
		CC="$cc" HOSTCC="$hostcc" "${@:2}"
}

# --- source -----------------------------------------------------------

# tree_id DIR: git tree id of DIR's contents, as "git archive" would store it.
tree_id() {
	local tmp

	tmp=$(mktemp -d)
	(cd "$1" && GIT_DIR=$tmp git init -q &&
	 GIT_DIR=$tmp GIT_WORK_TREE=. git add -A -f . &&
	 GIT_DIR=$tmp git write-tree)
	rm -rf "$tmp"
}

# find_source: print the tarball or tree to use, or nothing.
find_source() {
	local user=${!SRC_ENV:-} name dir

	if [ -n "$user" ]; then
		[ -e "$user" ] || die "$SRC_ENV=$user does not exist"
		echo "$user"
		return
	fi
	if [ -n "$SRC_APT_PKG" ]; then
		[ -f "$SRC_APT_TARBALL" ] && echo "$SRC_APT_TARBALL"
		return
	fi
	for dir in "$DL_CACHE" $SRC_SHARED_DIRS; do
		for name in $SRC_CACHE_NAMES; do
			if [ -f "$dir/$name" ]; then
				echo "$dir/$name"
				return
			fi
		done
	done
	download_source
}

# download_source: fetch from kernel.org into the cache.  Verified later,
# by tree id, before anything uses it.
download_source() {
	local out=$DL_CACHE/${SRC_URL##*/}

	[ -n "$SRC_URL" ] && [ "${OFFLINE:-0}" != 1 ] || return 0
	command -v curl >/dev/null || return 0
	mkdir -p "$DL_CACHE"
	msg "downloading $SRC_URL" >&2
	if curl -fsSL --connect-timeout 15 --max-time 900 -o "$out.part" \
		"$SRC_URL"; then
		mv "$out.part" "$out"
		echo "$out"
	else
		rm -f "$out.part"
		msg "download of $SRC_URL failed" >&2
	fi
}

# unpack SRC_INPUT: extract (or copy) into $SRC.
unpack() {
	local in=$1

	rm -rf "$SRC" "$OBJ" "$HDR"
	mkdir -p "$SRC"
	if [ -d "$in" ]; then
		tar -C "$in" --exclude=.git --exclude=.pc -cf - . |
			tar -C "$SRC" -xf -
	else
		tar -C "$SRC" --strip-components=1 -xf "$in"
	fi
}

verify_source() {
	local in=$1 blob id

	if [ -n "$SRC_EVENTPOLL_BLOB" ]; then
		blob=$(git hash-object "$SRC/fs/eventpoll.c")
		[ "$blob" = "$SRC_EVENTPOLL_BLOB" ] ||
			die "$in: fs/eventpoll.c is $blob, not vanilla $BASE_VERSION ($SRC_EVENTPOLL_BLOB)"
	fi
	# A user's own tree may legitimately differ elsewhere; anything we
	# downloaded or found in the cache must be exactly vanilla.
	if [ -n "$SRC_TREE_ID" ] && [ ! -d "$in" ] &&
	   [ "$in" != "${!SRC_ENV:-}" ]; then
		id=$(tree_id "$SRC")
		if [ "$id" != "$SRC_TREE_ID" ]; then
			rm -rf "$SRC"
			die "$in: tree $id is not vanilla $BASE_VERSION ($SRC_TREE_ID); delete it"
		fi
	fi
}

describe_source() {
	local in=$1

	if [ -n "$SRC_APT_PKG" ] && [ "$in" = "$SRC_APT_TARBALL" ]; then
		echo "$SRC_APT_PKG $(dpkg-query -W -f '${Version}' "$SRC_APT_PKG")"
	else
		# results quote this: no path of this machine, only one
		# relative to the checkout (../shared/...) or the file's name
		case $in in
		"$TOP"/*) echo "${in#"$TOP"/}" ;;
		*) basename "$in" ;;
		esac
	fi
}

do_source() {
	local in stamp

	in=$(find_source)
	if [ -z "$in" ]; then
		if [ "$SRC_OPTIONAL" = 1 ]; then
			echo "no $base source: set $SRC_ENV=/path/to/linux-$BASE_VERSION (tree or tarball) or put ${SRC_CACHE_NAMES%% *} in $DL_CACHE" >"$BDIR/skip-reason"
			exit 3
		fi
		die "no $base source: apt-get install $SRC_APT_PKG"
	fi
	rm -f "$BDIR/skip-reason"
	stamp="$in $(stat -c '%s %Y' "$in")"
	if [ -f "$SRC/.source-stamp" ] &&
	   [ "$(cat "$SRC/.source-stamp")" = "$stamp" ]; then
		echo "source unchanged: $in"
	else
		echo "unpacking $in"
		unpack "$in"
		verify_source "$in"
		echo "$stamp" >"$SRC/.source-stamp"
	fi
	describe_source "$in" >"$BDIR/source-version"
	make -s -C "$SRC" kernelversion >"$BDIR/kernelversion"
	echo "source: $(cat "$BDIR/source-version") ($(cat "$BDIR/kernelversion"))"
}

# --- apply ------------------------------------------------------------

# snapshot LIST: "sha1 mtime path" for each existing file in LIST.
snapshot() {
	local f

	while read -r f; do
		[ -e "$f" ] && echo "$(sha1sum <"$f" | cut -c1-40) $(stat -c %Y "$f") $f"
	done <"$1"
}

# The tree keeps its objects between runs.  A re-apply pops and pushes the
# whole series, which rewrites every file that any patch touches: give the
# files whose content did not change their old mtime back, and make every
# other one newer than its objects, so that only what changed is rebuilt.
fix_mtimes() {
	local before=$1 list=$2 f sum old_sum old_time

	while read -r f; do
		[ -e "$f" ] || continue
		sum=$(sha1sum <"$f" | cut -c1-40)
		read -r old_sum old_time < <(awk -v f="$f" '$3 == f { print $1, $2 }' "$before")
		if [ "$sum" = "$old_sum" ]; then
			touch -d "@$old_time" "$f"
		else
			touch "$f"
			echo "changed: $f"
		fi
	done <"$list"
}

do_apply() {
	local series=$TOP/patches/$base stamp touched

	export QUILT_PATCHES=$series QUILT_PC=.pc
	stamp=$(hash_files "$series"/series "$series"/*.patch)
	if [ "$(cat "$SRC/.series-stamp" 2>/dev/null)" = "$stamp" ]; then
		echo "series unchanged"
		return 0
	fi
	cd "$SRC" || exit 1
	touched=$(mktemp)
	before=$(mktemp)
	# Pop against the series as it was applied: quilt refuses to work
	# with a series file that no longer matches .pc/applied-patches.
	# quilt keeps the patches directory and series file of the first push
	# in .pc/.quilt_patches and .pc/.quilt_series, and they win over the
	# environment: a source tree pushed from another checkout (a moved
	# one, or BUILD= shared between two) would be pushed from that one's
	# patches again.  Point them at this checkout for the pop, and drop
	# them for the push.
	if [ -s .pc/applied-patches ]; then
		grep -v '^#' .pc/applied-patches >.pc/applied-series
		echo "$QUILT_PATCHES" >.pc/.quilt_patches
		echo "$SRC/.pc/applied-series" >.pc/.quilt_series
		QUILT_SERIES=$SRC/.pc/applied-series quilt files -a --combine - \
			2>/dev/null | sort -u >"$touched"
		snapshot "$touched" >"$before"
		QUILT_SERIES=$SRC/.pc/applied-series quilt pop -a -f -q || exit 1
	fi
	rm -f .pc/.quilt_patches .pc/.quilt_series
	rm -f "$SRC/.series-stamp"
	quilt push -a -q --fuzz=0 || exit 1
	quilt files -a --combine - 2>/dev/null >>"$touched"
	sort -u -o "$touched" "$touched"
	fix_mtimes "$before" "$touched"
	rm -f "$touched" "$before"
	quilt applied
	echo "$stamp" >"$SRC/.series-stamp"
}

# --- config -----------------------------------------------------------

fragments() {
	local f

	for f in $(fragment_names); do
		echo "$TOP/kernel-config/$f.config"
	done
}

# check_fragments CONFIG FRAGMENT...: every requested line must be in CONFIG.
check_fragments() {
	local cfg=$1 missing line opt
	shift

	missing=$(grep -hE '^(CONFIG_[A-Za-z0-9_]+=|# CONFIG_[A-Za-z0-9_]+ is not set)' "$@" |
		while read -r line; do
			if [[ $line == "# "* ]]; then
				opt=${line#\# }; opt=${opt%% *}
				grep -q "^$opt=[ym]" "$cfg" && echo "  $line (got: $(grep "^$opt=" "$cfg"))"
			else
				grep -qxF "$line" "$cfg" ||
					echo "  $line (got: $(grep -E "^(# )?${line%%=*}[= ]" "$cfg" || echo unset))"
			fi
		done)
	if [ -n "$missing" ]; then
		echo "these fragment lines did not land in .config:"
		echo "$missing"
		return 1
	fi
}

do_config() {
	local work=$BDIR/kconfig frags

	frags=$(fragments)
	mkdir -p "$work" "$OBJ"
	kmake "$work" tinyconfig || exit 1
	# merge_config.sh keeps a temporary file in its working directory
	# shellcheck disable=SC2086
	(cd "$work" && "$SRC"/scripts/kconfig/merge_config.sh -m -O "$work" \
		"$work/.config" $frags) || exit 1
	kmake "$work" olddefconfig || exit 1
	# shellcheck disable=SC2086
	check_fragments "$work/.config" $frags || exit 1
	# Only a real change may touch the build tree's .config.
	if cmp -s "$work/.config" "$OBJ/.config"; then
		echo "config unchanged"
	else
		cp "$work/.config" "$OBJ/.config"
		echo "config updated"
	fi
}

# --- build ------------------------------------------------------------

# gcov_profile_vars: on a coverage kernel, profile only the objects the
# series changes (COVERAGE_OBJS of scripts/bases/BASE.conf).  Kbuild reads
# GCOV_PROFILE_<stem>.o per directory; from the command line it reaches
# every directory, which profiles any other object of the same name too
# (harmless: the report reads only the series' lines).
gcov_profile_vars() {
	local o

	[ "$COVERAGE" = 1 ] || return 0
	for o in $COVERAGE_OBJS; do
		echo "GCOV_PROFILE_${o##*/}=y"
	done
}

do_build() {
	# shellcheck disable=SC2046
	kmake "$OBJ" -j"$JOBS" $(gcov_profile_vars) "$KTARGET" || exit 1
	cp "$OBJ/$KIMAGE" "$BDIR/bzImage"
	command -v ccache >/dev/null && ccache -s | grep -Ei 'hits|misses' || true
}

do_headers() {
	rm -rf "$HDR"
	kmake "$OBJ" headers_install INSTALL_HDR_PATH="$HDR" || exit 1
}

mkdir -p "$BDIR"
case $stage in
source)  do_source ;;
apply)   do_apply ;;
config)  do_config ;;
build)   do_build ;;
headers) do_headers ;;
*)       die "unknown stage $stage" ;;
esac
exit
}
