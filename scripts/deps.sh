#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deps.sh [test|bench]: install the Debian packages a job needs, when missing.
# deps.sh need PKG:WHAT...: install each PKG whose WHAT (a command, or an
# absolute path) is missing (scripts/nginx-build.sh, scripts/libevent.sh).
# deps.sh missing PKG:WHAT...: print those packages, install nothing.
# Non-interactive; needs root (or sudo) only when something is missing.

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{

# package:command-or-file it provides.  Not gcc-multilib: Debian 12's cross
# compilers (the arm64 guest's) conflict with it, for its /usr/include/asm
# symlink alone; gcc-12-multilib has the rest, and scripts/guest-progs.sh gives
# the -m32 and -mx32 builds that symlink itself (asm_fallback).  Everything a step calls, on a
# minbase Debian 12 (debootstrap --variant=minbase), where only git and make
# were installed by hand; 6.12's Documentation/process/changes.rst lists
# what its build needs (rsync for headers_install, kmod, bc, ...).
NEED_TEST="
build-essential:gcc
make:make
rsync:rsync
patch:patch
kmod:depmod
ca-certificates:/etc/ssl/certs/ca-certificates.crt
procps:ps
python3:python3
bc:bc
bison:bison
flex:flex
libelf-dev:/usr/include/libelf.h
libssl-dev:/usr/include/openssl/ssl.h
cpio:cpio
xz-utils:xz
gzip:gzip
file:file
quilt:quilt
ccache:ccache
git:git
curl:curl
perl:perl
python3:python3
busybox-static:/bin/busybox
qemu-system-x86:qemu-system-x86_64
gcc-12-multilib:/usr/lib/gcc/x86_64-linux-gnu/12/32/libgcc.a
libc6-dev-i386:/usr/lib32/libc.a
libc6-dev-x32:/usr/libx32/libc.a
mandoc:mandoc
groff-base:groff
bsdextrautils:col
"
NEED_BENCH="
gnuplot-nox:gnuplot
linux-perf:perf
liburing-dev:/usr/include/liburing.h
"
# make bench's nginx scenario, and make test's nginx smoke (NGINX_SMOKE=0
# leaves it out)
NEED_NGINX="
nginx-light:/usr/sbin/nginx
apache2-utils:ab
"

# make test ARCHES="... arm64": Debian's cross toolchain (its static libc
# comes with it, libc6-dev-arm64-cross) and QEMU for arm64.  The guest's
# busybox is Debian's busybox-static for arm64 (arm64_busybox below).
NEED_ARM64="
gcc-aarch64-linux-gnu:aarch64-linux-gnu-gcc
libc6-dev-arm64-cross:/usr/aarch64-linux-gnu/lib/libc.a
qemu-system-arm:qemu-system-aarch64
"

missing() {
	local pair pkg what

	for pair in "$@"; do
		pkg=${pair%%:*}
		what=${pair#*:}
		if [[ $what == /* ]]; then
			[ -e "$what" ] || echo "$pkg"
		else
			command -v "$what" >/dev/null || echo "$pkg"
		fi
	done
}

# busybox (dynamic) and busybox-static conflict; only the static one can
# be copied into an initramfs, so check what /bin/busybox really is.
busybox_ok() {
	[ -x /bin/busybox ] && file -L /bin/busybox | grep -q 'statically linked'
}

# arm64_busybox: Debian's busybox-static:arm64, unpacked into the cache
# (scripts/arch/arm64.conf's BUSYBOX).  apt needs arm64 among dpkg's
# architectures to fetch it: the usual Debian cross-building setup.
arm64_busybox() {
	local dir=$CACHE/arm64 tmp

	[ -x "$dir/busybox" ] && return 0
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		echo "adding arm64 to dpkg's architectures (for busybox-static:arm64)"
		$SUDO dpkg --add-architecture arm64 || return 1
		$SUDO apt-get update -q || return 1
	fi
	tmp=$(mktemp -d)
	(cd "$tmp" && chmod 777 . && apt-get download -q busybox-static:arm64) || {
		$SUDO apt-get update -q &&
		(cd "$tmp" && apt-get download -q busybox-static:arm64)
	} || { rm -rf "$tmp"; return 1; }
	mkdir -p "$dir"
	dpkg-deb -x "$tmp"/busybox-static_*_arm64.deb "$tmp/root" &&
	cp "$tmp/root/bin/busybox" "$dir/busybox" &&
	echo "busybox for arm64: $dir/busybox ($(basename "$tmp"/busybox-static_*_arm64.deb))"
	rm -rf "$tmp"
	[ -x "$dir/busybox" ]
}

# the bases whose source is a Debian package (SRC_APT_PKG, SRC_APT_TARBALL
# in scripts/bases/*.conf)
for b in $(all_bases); do
	pkg=$(base_field "$b" SRC_APT_PKG)
	[ -n "$pkg" ] && NEED_TEST="$NEED_TEST $pkg:$(base_field "$b" SRC_APT_TARBALL)"
done

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
job=${1:-test}
if [ "$job" = missing ]; then
	shift
	missing "$@"
	exit 0
fi
list=$NEED_TEST
case " ${ARCHES:-} " in
*" arm64 "*) [ "$job" = test ] && list="$list $NEED_ARM64" ;;
esac
[ "$job" = bench ] && list="$NEED_TEST $NEED_BENCH $NEED_NGINX"
[ "$job" = test ] && [ "${NGINX_SMOKE:-1}" = 1 ] && list="$list $NEED_NGINX"
[ "$job" = need ] && { shift; list="$*"; }
# shellcheck disable=SC2086
pkgs=$(missing $list | sort -u)
[ "$job" = need ] || busybox_ok || pkgs="$pkgs busybox-static"
pkgs=$(echo $pkgs | tr ' ' '\n' | sort -u | tr '\n' ' ')
export DEBIAN_FRONTEND=noninteractive
if [ -z "${pkgs// }" ]; then
	echo "all packages present"
else
	echo "installing: $pkgs"
	$SUDO apt-get update -q || exit 1
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -q --no-install-recommends $pkgs || exit 1
	busybox_ok || die "/bin/busybox is still not static"
fi
case " ${ARCHES:-} " in
*" arm64 "*) [ "$job" = test ] && { arm64_busybox || die "no busybox for arm64"; } ;;
esac
exit
}
