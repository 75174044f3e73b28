#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# try-guest.sh BASE 'COMMAND LINE' FILE...: development helper.  Boots
# BASE's built kernel (DEBUG=1: its debug kernel) with busybox and FILE...
# copied into /t, runs COMMAND LINE there as root and prints its output
# and exit status.  Uses a private directory, so it does not disturb
# make test's guest files; it does not build anything.
#
#   scripts/try-guest.sh v3.19 './epoll_race_stress -d 5' /tmp/epoll_race_stress

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{

base=$1
cmd=$2
shift 2 || die "usage: try-guest.sh BASE 'COMMAND' FILE..."
load_base "$base"
[ -f "$BDIR/bzImage" ] || die "$BDIR/bzImage not built (make test first)"
dir=$(mktemp -d /tmp/try-guest.XXXXXX)
root=$dir/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,t,jobs}
cp "$BUSYBOX" "$root/bin/busybox"
sed -e "s|@RESULT_TTY@|$RESULT_TTY|" -e "s|@RESULT_TTY_MAJMIN@|$RESULT_TTY_MAJMIN|" \
	"$TOP/scripts/guest/init" >"$root/init"
for f in "$@"; do
	cp "$f" "$root/t/"
done
printf '#!/bin/sh\ncd /t\n%s\n' "$cmd" >"$root/jobs/try"
chmod +x "$root/init" "$root/jobs/try"
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$dir/initrd"
timeout -k 10 "${BOOT_TIMEOUT:-900}" "$QEMU_BIN" -nodefaults -display none \
	-no-reboot -machine "$QEMU_MACHINE,accel=${ACCEL:-tcg}" -cpu "$QEMU_CPU_TCG" \
	-smp "$QEMU_SMP" -m "$QEMU_MEM" -kernel "$BDIR/bzImage" -initrd "$dir/initrd" \
	-append "$KCMDLINE_CONSOLE $KCMDLINE_POLICY epoll.job=try" \
	$(qemu_channels "$dir/console.log" "$dir/result.log")
sed -i 's/\r$//' "$dir/result.log" "$dir/console.log"
cat "$dir/result.log"
echo "--- console: $dir/console.log (splat lines below, if any)"
grep -nE 'BUG|WARNING|Oops|panic|INFO:|KASAN|lockdep|unreferenced' "$dir/console.log" | head -n 40
grep -q '^guest-exit-status: 0$' "$dir/result.log"
exit
}
