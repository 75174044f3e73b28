#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deps.sh [test|bench]: install the Debian packages a job needs, when missing.
# Non-interactive; needs root (or sudo) only when something is missing.

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{

# package:command-or-file it provides.  Everything a step calls, on a
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
gcc-multilib:/usr/lib32/libc.a
libc6-dev-x32:/usr/libx32/libc.a
linux-source-6.12:/usr/src/linux-source-6.12.tar.xz
mandoc:mandoc
groff-base:groff
bsdextrautils:col
"
NEED_BENCH="
gnuplot-nox:gnuplot
linux-perf:perf
liburing-dev:/usr/include/liburing.h
"
# make bench's nginx scenario, and make test's nginx smoke with NGINX_SMOKE=1
NEED_NGINX="
nginx-light:/usr/sbin/nginx
apache2-utils:ab
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

job=${1:-test}
list=$NEED_TEST
[ "$job" = bench ] && list="$NEED_TEST $NEED_BENCH $NEED_NGINX"
[ "$job" = test ] && [ "${NGINX_SMOKE:-0}" = 1 ] && list="$list $NEED_NGINX"
# shellcheck disable=SC2086
pkgs=$(missing $list | sort -u)
busybox_ok || pkgs="$pkgs busybox-static"
pkgs=$(echo $pkgs | tr ' ' '\n' | sort -u | tr '\n' ' ')
if [ -z "${pkgs// }" ]; then
	echo "all packages present"
	exit 0
fi
echo "installing: $pkgs"
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q || exit 1
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $pkgs || exit 1
busybox_ok || die "/bin/busybox is still not static"
exit
}
