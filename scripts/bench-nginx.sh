#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-nginx.sh: the nginx scenario of make bench.
# Debian's nginx-light serving a small static file on loopback in the
# guest of each bench kernel, ab (apache2-utils) and bench/nginx/openloop.c
# as clients, five ways of spreading accepts over the workers (accept
# mutex, EPOLLEXCLUSIVE, EPOLLEXCLUSIVE|EPOLLROUNDROBIN, reuseport,
# wake-all; see scripts/guest/nginx-run), results/<base>/nginx.md from
# scripts/nginx-report.py.
#
#   bench-nginx.sh run BASE         initramfs (job "nginx"), boot the bench
#                                   kernel, report into results/BASE/
#                                   (make bench calls this per base)
#   bench-nginx.sh host [OUTDIR]    the same runner on this machine, report
#                                   in OUTDIR (build/nginx-host/report); rr
#                                   needs the series' kernel, so on a stock
#                                   kernel it is reported as unsupported
#
# The guest's files are built and packed by scripts/nginx-pack.sh.
#
# Parameters (environment): NGINX_MODES ("mutex exclusive rr reuseport
# all"), NGINX_WORKERS ("4 8"), NGINX_RUNS ("closed rate stall"),
# NGINX_REQUESTS (2000), NGINX_CONC (16), NGINX_RATE (req/s, 100),
# NGINX_RATE_SECS (10), NGINX_STALL_AT (3 s), NGINX_STALL_SECS (3 s),
# NGINX_SMOKE_REQUESTS (200); BENCH_QUICK=1 makes them small.

export BENCH=${BENCH:-1}
. "$(dirname "$0")/lib.sh"

{
cmd=${1:-}
S=$TOP/scripts

do_run() {
	local b=$1 d out

	[ -n "$b" ] || die "usage: $0 run BASE"
	d=$(bdir "$b")
	[ -f "$d/bzImage" ] || die "no bench kernel in $d (make bench builds it)"
	out=${RESULTS:-$TOP/results}/$b
	mkdir -p "$out" "$d/logs"
	# shellcheck disable=SC2034 # run_step reads it
	STEP_BASE=$b$VARIANT
	run_step "$d/logs/initramfs-nginx.log" "$b$VARIANT: initramfs with nginx" \
		"$S/guest.sh" initramfs "$b" nginx &&
	run_step "$d/logs/nginx.log" "$b$VARIANT: nginx in QEMU" \
		"$S/guest.sh" boot "$b" nginx || return 1
	cp "$d/run-nginx/results.log" "$out/nginx-guest-output.txt"
	rm -f "$out"/nginx-dist-*
	NGINX_BASE=$b \
	NGINX_ACCEL=$(sed -n 's/^accel=//p' "$d/run-nginx/summary") \
	NGINX_DATE=$(date -u +%Y-%m-%dT%H:%MZ) \
	NGINX_KCONFIG="bench config, build/$b$VARIANT" NGINX_REQUIRE_ALL_MODES=1 \
	run_step "$d/logs/nginx-report.log" "$b$VARIANT: nginx report" \
		python3 "$S/nginx-report.py" "$d/run-nginx/results.log" "$out" || return 1
	msg "$b: $out/nginx.md"
}

do_host() {
	local out=${1:-$BUILD/nginx-host/report} dir=$BUILD/nginx-host

	mkdir -p "$dir" "$out"
	"$S/nginx-pack.sh" tools "$dir" || die "building rr_preload.so and openloop failed"
	{
		"$S/nginx-pack.sh" params
		echo "NGX_DIR=$dir/work"
		echo "OPENLOOP=$dir/openloop"
		echo "PRELOAD=$dir/rr_preload.so"
		echo "CLIENT_PRELOAD=$dir/urandom_preload.so"
		echo "PORT=${NGINX_PORT:-18080}"
		echo "NGX_NO_SYSCTL=1"
	} >"$dir/params"
	NGX_PARAMS=$dir/params sh "$S/guest/nginx-run" | tee "$dir/output.txt"
	NGINX_BASE="host ($(uname -r))" NGINX_ACCEL="none (host)" \
	NGINX_DATE=$(date -u +%Y-%m-%dT%H:%MZ) \
		python3 "$S/nginx-report.py" "$dir/output.txt" "$out"
}

case $cmd in
run)   do_run "${2:-}" ;;
host)  do_host "${2:-}" ;;
*)     die "usage: $0 run BASE | host [OUTDIR]" ;;
esac
exit
}
