#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fresh-root.sh: check the README's promise (on a fresh Debian 12 machine,
# "git clone" then "make test" does everything) in a clean Debian 12 root
# on this machine.  Needs root on the host, and debootstrap.
#
#   create DIR          debootstrap --variant=minbase bookworm DIR from this
#                       machine's apt mirror, with this machine's apt
#                       sources, then apt-get install git and make, nothing
#                       else (what the README's user installs by hand)
#   prepare DIR         clone this checkout's HEAD into DIR/work/checkout
#                       (a fresh clone each time) and put the v3.19 tarball
#                       in DIR/work/shared, i.e. ../shared of the checkout
#   run DIR [ARG...]    prepare, then "make test ARG..." inside the root
#   exec DIR CMD...     run CMD inside the root, with the same mounts and a
#                       clean environment (e.g. bash -lc 'cd /work/checkout
#                       && bash scripts/deps.sh')
#   destroy DIR         unmount whatever is left under DIR, then delete it
#
# Inside the root, commands run as root (so deps.sh needs no sudo) with
# /proc and /sys bound from the host, a /dev of binds of the host's nodes
# (see mount_dev), the host's /etc/resolv.conf copied in, and an environment
# of only HOME, PATH, TERM and LANG: nothing of the caller's (BASES, KSRC,
# ...) leaks in.  QEMU (TCG, -display none, serial ports to files) needs
# only /dev/null and /dev/urandom; /dev/kvm if it exists.
#
# Variables:
#   REPO=PATH       repository whose HEAD is cloned (default: this checkout)
#   SHARED=DIR      where linux-3.19.tar.xz is (default: /work/shared)
#   MIRROR=URL      debootstrap mirror (default: the host's bookworm source)
#   CCACHE_BIND=1   bind the host's ccache directory (~/.cache/epoll-series/
#                   ccache) into the root: faster, but the bzImage timings
#                   are then no longer those of a cold machine.  Off by
#                   default; a run that used it says so.  Only ccache is
#                   bound, not the download cache: where the v3.19 source
#                   comes from stays what a fresh machine would see.
#   KEEP_CHECKOUT=1 reuse DIR/work/checkout (fetch and check out HEAD,
#                   keep its build/) instead of cloning afresh
#
# Logs go to DIR.logs/ (outside the root, kept by destroy); each step prints
# one progress line and, when it fails, its log's path and tail.

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{

usage() {
	sed -n '3,20s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

cmd=$1
[ -n "$cmd" ] && [ -n "$2" ] || usage
DIR=$(realpath -m "$2")
shift 2
case $DIR in
/|/bin|/boot|/dev|/etc|/home|/lib*|/opt|/proc|/root|/run|/sbin|/srv|/sys|/tmp|/usr|/var|/work)
	die "refusing DIR=$DIR" ;;
*[[:space:]]*)
	die "DIR must not contain white space: $DIR" ;;
esac
LOGS=${LOGS:-$DIR.logs}
TIMINGS=$LOGS/timings.txt
REPO=${REPO:-$TOP}
SHARED=${SHARED:-/work/shared}
ROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
[ "$(id -u)" = 0 ] || die "fresh-root.sh needs root on the host (debootstrap, mount, chroot)"

# --- apt configuration --------------------------------------------------

# host_mirror: the URI of the host's first enabled "deb" source for
# bookworm, from one-line .list files or deb822 .sources files (only these
# suffixes count: apt ignores any other file in sources.list.d).
host_mirror() {
	local f

	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '$1 == "deb" {
			i = 2
			if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
			if ($(i + 1) == "bookworm") { print $i; exit }
		}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'BEGIN { RS = ""; FS = "\n" }
		{
			types = uris = suites = ""; enabled = "yes"
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^[ \t]*#/) continue
				k = tolower($i); sub(/:.*/, "", k)
				v = $i; sub(/^[^:]*:[ \t]*/, "", v)
				if (k == "types") types = v
				else if (k == "uris") uris = v
				else if (k == "suites") suites = v
				else if (k == "enabled") enabled = tolower(v)
			}
			if (enabled != "no" && (" " types " ") ~ / deb / &&
			    (" " suites " ") ~ / bookworm /) {
				split(uris, u, " "); print u[1]; exit
			}
		}' "$f"
	done
}

# copy_apt_config: the host's apt sources replace the one line debootstrap
# wrote, so that apt in the root sees the same suites (bookworm-updates and
# -security too) from the same mirror, with their keyrings.  Of apt.conf(.d),
# only files about reaching the mirror are copied (a proxy, http options,
# "Check-Valid-Until false" for a mirror that serves a dated snapshot): the
# rest (a Docker image's trimmings, ...) is not what a fresh machine has.
copy_apt_config() {
	local f key

	rm -f "$DIR/etc/apt/sources.list"
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		 /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		mkdir -p "$DIR$(dirname "$f")"
		cp "$f" "$DIR$f"
		echo "apt source: $f"
		for key in $(sed -n 's/.*[Ss]igned-[Bb]y[:=][[:space:]]*\([^] ]*\).*/\1/p' "$f"); do
			[ -f "$key" ] && [ ! -e "$DIR$key" ] || continue
			mkdir -p "$DIR$(dirname "$key")"
			cp "$key" "$DIR$key"
			echo "keyring: $key"
		done
	done
	for f in /etc/apt/apt.conf /etc/apt/apt.conf.d/*; do
		[ -f "$f" ] && [ ! -e "$DIR$f" ] || continue
		grep -qiE 'proxy|Check-Valid-Until|Check-Date|Acquire::https?::' "$f" ||
			continue
		cp "$f" "$DIR$f"
		echo "apt.conf: $f"
	done
}

# --- mounts -------------------------------------------------------------

# mounts_under: the mount points under DIR, deepest first.
mounts_under() {
	awk -v d="$DIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts |
		awk '{ print length($0), $0 }' | sort -rn | cut -d' ' -f2-
}

umount_all() {
	local m

	for m in $(mounts_under); do
		umount "$m" 2>/dev/null || umount -l "$m" ||
			warn "could not unmount $m"
	done
	m=$(mounts_under)
	[ -z "$m" ] || { warn "still mounted under $DIR: $m"; return 1; }
}

bind() {
	mkdir -p "$DIR$2"
	mount --bind "$1" "$DIR$2" || die "mount --bind $1 $DIR$2 failed"
}

# mount_dev: the root's /dev is a tmpfs holding binds of the host's device
# nodes that a build and QEMU use (as debootstrap does in a container), not
# a bind of the whole of /dev: a maintainer script that removes or replaces
# a node then gets EBUSY instead of changing the host's /dev.  /dev/kvm is
# bound when the host has it; without it the KVM probe is skipped (TCG).
mount_dev() {
	local d

	mount -t tmpfs -o mode=755,nosuid dev "$DIR/dev" || die "mount tmpfs on $DIR/dev failed"
	for d in null zero full random urandom tty ptmx kvm pts shm; do
		if [ -d "/dev/$d" ]; then
			mkdir "$DIR/dev/$d"
		elif [ -c "/dev/$d" ]; then
			touch "$DIR/dev/$d"
		else
			continue
		fi
		mount --bind "/dev/$d" "$DIR/dev/$d" || die "mount --bind /dev/$d failed"
	done
	ln -s /proc/self/fd "$DIR/dev/fd"
	ln -s /proc/self/fd/0 "$DIR/dev/stdin"
	ln -s /proc/self/fd/1 "$DIR/dev/stdout"
	ln -s /proc/self/fd/2 "$DIR/dev/stderr"
}

# mount_all: what a chroot needs from the host, undone on any exit.
mount_all() {
	[ -x "$DIR/bin/bash" ] || die "$DIR is not a root (fresh-root.sh create $DIR)"
	# the root's device nodes are the host's: a broken one fails every
	# maintainer script (half-configured packages)
	[ -c /dev/null ] || die "the host's /dev/null is not a character device: $(ls -ld /dev/null)"
	[ -z "$(mounts_under)" ] ||
		die "something is already mounted under $DIR (another run? else: fresh-root.sh destroy $DIR, or umount it)"
	trap 'umount_all' EXIT
	trap 'exit 130' INT TERM HUP
	bind /proc /proc
	bind /sys /sys
	mount_dev
	if [ "${CCACHE_BIND:-0}" = 1 ]; then
		mkdir -p "$CACHE/ccache"
		bind "$CACHE/ccache" /root/.cache/epoll-series/ccache
		msg "CCACHE_BIND=1: the host's $CACHE/ccache is bound into the root (a warm ccache: not a cold build)"
	fi
	rm -f "$DIR/etc/resolv.conf"
	cp -L /etc/resolv.conf "$DIR/etc/resolv.conf"
	[ -e /dev/kvm ] || msg "no /dev/kvm on this host: the guests boot with TCG"
}

# in_root CMD...: CMD inside the root, as root, with a clean environment.
in_root() {
	env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash \
		TERM="${TERM:-dumb}" LANG=C.UTF-8 PATH=$ROOT_PATH \
		chroot "$DIR" "$@"
}

# --- create -------------------------------------------------------------

install_git_make() {
	export DEBIAN_FRONTEND=noninteractive
	in_root apt-get update -q || return 1
	# --no-install-recommends: the strictest reading of "only git and make"
	# (git would pull in less, patch, openssh-client and ca-certificates
	# as recommends).  deps.sh must then name every package it relies on.
	in_root apt-get install -y -q --no-install-recommends git make
}

do_create() {
	local mirror

	if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
		die "$DIR exists and is not empty (fresh-root.sh destroy $DIR first)"
	fi
	command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"
	mirror=${MIRROR:-$(host_mirror | head -n 1)}
	[ -n "$mirror" ] || die "no bookworm source in /etc/apt/sources.list{,.d/*.list,.d/*.sources}: set MIRROR="
	rm -rf "$LOGS"
	mkdir -p "$LOGS"
	msg "root: $DIR, mirror: $mirror, logs: $LOGS"
	run_step "$LOGS/debootstrap.log" "debootstrap --variant=minbase bookworm" \
		debootstrap --variant=minbase bookworm "$DIR" "$mirror" || exit 1
	run_step "$LOGS/apt-config.log" "copy the host's apt sources" copy_apt_config || exit 1
	sed 's/^/  /' "$LOGS/apt-config.log"
	mount_all
	run_step "$LOGS/git-make.log" "apt-get install git make (only)" install_git_make || exit 1
	umount_all || exit 1
	trap - EXIT
	in_root dpkg-query -W -f '${Package} ${Version}\n' >"$LOGS/packages-created.txt"
	{
		echo "created: $(date -R)"
		echo "debootstrap --variant=minbase bookworm $mirror"
		echo "then: apt-get install --no-install-recommends git make"
		echo "packages: $(wc -l <"$LOGS/packages-created.txt")"
	} >"$DIR/.fresh-root-created"
	msg "created $DIR: $(wc -l <"$LOGS/packages-created.txt") packages, $(du -sh --one-file-system "$DIR" | cut -f1)"
	msg "next: scripts/fresh-root.sh run $DIR"
}

# --- prepare, run, exec -------------------------------------------------

clone_checkout() {
	local co=$DIR/work/checkout head

	head=$(git -C "$REPO" rev-parse HEAD) || return 1
	if [ -n "$(git -C "$REPO" status --porcelain --untracked-files=no)" ]; then
		echo "warning: $REPO has uncommitted changes; the root gets its HEAD only"
	fi
	if [ "${KEEP_CHECKOUT:-0}" = 1 ] && [ -d "$co/.git" ]; then
		git -C "$co" fetch -q "$REPO" HEAD &&
		git -C "$co" checkout -q --detach "$head" || return 1
	else
		rm -rf "$co"
		mkdir -p "$DIR/work"
		git clone -q --no-hardlinks "$REPO" "$co" || return 1
		[ "$(git -C "$co" rev-parse HEAD)" = "$head" ] ||
			git -C "$co" checkout -q --detach "$head" || return 1
	fi
	echo "checkout: $(git -C "$co" log -1 --format='%h %s')"
}

place_tarball() {
	local tb=$SHARED/linux-3.19.tar.xz dst=$DIR/work/shared/linux-3.19.tar.xz

	[ -f "$tb" ] || { echo "no $tb (set SHARED=)"; return 1; }
	mkdir -p "$(dirname "$dst")"
	if [ -f "$dst" ] && cmp -s "$tb" "$dst"; then
		echo "tarball already in place: $dst"
		return 0
	fi
	rm -f "$dst"
	# a hard link when the root is on the same file system; nothing writes it
	ln "$tb" "$dst" 2>/dev/null || cp "$tb" "$dst" || return 1
	echo "tarball: $tb -> $dst"
}

do_prepare() {
	[ -f "$DIR/.fresh-root-created" ] || die "$DIR was not made by fresh-root.sh create"
	mkdir -p "$LOGS"
	run_step "$LOGS/clone.log" "git clone $REPO (HEAD) into $DIR/work/checkout" clone_checkout || exit 1
	sed 's/^/  /' "$LOGS/clone.log"
	run_step "$LOGS/tarball.log" "v3.19 tarball into $DIR/work/shared" place_tarball || exit 1
}

do_run() {
	local log t rc args

	log=$LOGS/run-$(date +%Y%m%d-%H%M%S).log
	do_prepare
	args=
	[ $# = 0 ] || args=$(printf ' %q' "$@")
	mount_all
	msg "chroot $DIR: cd /work/checkout && make test$args (log: $log)"
	[ "${CCACHE_BIND:-0}" = 1 ] && echo "CCACHE_BIND=1 (warm host ccache)" >"$log"
	t=$(date +%s)
	in_root /bin/bash -lc "cd /work/checkout && make test$args" 2>&1 | tee -a "$log"
	rc=${PIPESTATUS[0]}
	t=$(($(date +%s) - t))
	echo "all make_test $t" >>"$TIMINGS"
	umount_all
	trap - EXIT
	if [ "$rc" = 0 ]; then
		msg "make test in $DIR: exit 0 (${t}s$([ "${CCACHE_BIND:-0}" = 1 ] && echo ', CCACHE_BIND=1')), log: $log"
	else
		printf '[%s] FAILED: make test in %s (exit %d, %ss), full log: %s\n' \
			"$(date +%H:%M:%S)" "$DIR" "$rc" "$t" "$log" >&2
	fi
	exit "$rc"
}

do_exec() {
	local rc

	[ $# -gt 0 ] || usage
	mount_all
	in_root "$@"
	rc=$?
	umount_all
	trap - EXIT
	exit "$rc"
}

# --- destroy ------------------------------------------------------------

do_destroy() {
	[ -e "$DIR" ] || { msg "$DIR does not exist"; exit 0; }
	# only what create made (or a debootstrap that stopped half way)
	[ -f "$DIR/.fresh-root-created" ] || [ -f "$LOGS/debootstrap.log" ] ||
		die "$DIR has no .fresh-root-created and no $LOGS/debootstrap.log: not deleting it"
	umount_all || die "not deleting $DIR while something is mounted under it"
	msg "deleting $DIR ..."
	rm -rf --one-file-system "$DIR" || die "rm -rf $DIR failed"
	msg "deleted $DIR (logs kept: $LOGS)"
}

case $cmd in
create)  do_create ;;
prepare) do_prepare ;;
run)     do_run "$@" ;;
exec)    do_exec "$@" ;;
destroy) do_destroy ;;
*)       usage ;;
esac
exit
}
