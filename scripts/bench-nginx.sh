#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-nginx.sh: the nginx scenario of make bench (project issue 13).
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
#   bench-nginx.sh pack BASE ROOT [smoke]
#                                   put nginx, ab, their shared libraries
#                                   and the loader, rr_preload.so, openloop
#                                   and the runner into the initramfs tree
#                                   ROOT (scripts/guest.sh calls this; smoke:
#                                   the make test smoke, /selftests/nginx_smoke)
#   bench-nginx.sh host [OUTDIR]    the same runner on this machine, report
#                                   in OUTDIR (build/nginx-host/report); rr
#                                   needs the series' kernel, so on a stock
#                                   kernel it is reported as unsupported
#   bench-nginx.sh tools DIR        build rr_preload.so and openloop into DIR
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

# tools DIR: the preload library (shared, against the host's glibc, which
# the guest gets with nginx) and the open-loop client (static)
build_tools() {
	local dir=$1

	mkdir -p "$dir"
	gcc -O2 -g -Wall -Wextra -Werror -shared -fPIC -o "$dir/rr_preload.so" \
		"$TOP/bench/nginx/rr_preload.c" -ldl || return 1
	gcc -O2 -g -Wall -Wextra -Werror -shared -fPIC -o "$dir/urandom_preload.so" \
		"$TOP/bench/nginx/urandom_preload.c" || return 1
	gcc -O2 -g -Wall -Wextra -Werror -static -o "$dir/openloop" \
		"$TOP/bench/nginx/openloop.c" || return 1
}

write_params() {
	local quick=${BENCH_QUICK:-0}

	if [ "$quick" = 1 ]; then
		: "${NGINX_REQUESTS:=300}" "${NGINX_RATE:=50}" "${NGINX_RATE_SECS:=4}"
		: "${NGINX_STALL_AT:=1}" "${NGINX_STALL_SECS:=1.5}"
	fi
	cat <<-EOF
	MODES="${NGINX_MODES:-mutex exclusive rr reuseport all}"
	WORKERS="${NGINX_WORKERS:-4 8}"
	RUNS="${NGINX_RUNS:-closed rate stall}"
	REQUESTS=${NGINX_REQUESTS:-2000}
	CONC=${NGINX_CONC:-16}
	RATE=${NGINX_RATE:-100}
	RATE_SECS=${NGINX_RATE_SECS:-10}
	STALL_AT=${NGINX_STALL_AT:-3}
	STALL_SECS=${NGINX_STALL_SECS:-3}
	SMOKE_REQUESTS=${NGINX_SMOKE_REQUESTS:-200}
	EOF
}

# copy_with_libs ROOT BIN...: BIN and what ldd finds for it, under the
# same paths (the loader included), as guest.sh's add_perf does for perf;
# a BIN named LIBS:FILE brings only FILE's libraries
copy_with_libs() {
	local root=$1 bin lib
	shift

	for bin in "$@"; do
		case $bin in
		LIBS:*) bin=${bin#LIBS:} ;;
		*) cp -L --parents "$bin" "$root/" || return 1 ;;
		esac
		for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
			cp -L --parents "$lib" "$root/" || return 1
		done
	done
}

do_pack() {
	local base=$1 root=$2 kind=${3:-bench} nginx ab dir

	load_base "$base"
	nginx=$(command -v nginx || echo /usr/sbin/nginx)
	ab=$(command -v ab || true)
	[ -x "$nginx" ] || die "nginx not found (apt-get install nginx-light)"
	[ -n "$ab" ] || die "ab not found (apt-get install apache2-utils)"
	dir=$BDIR/guest/nginx-tools
	build_tools "$dir" || die "building rr_preload.so and openloop failed"
	mkdir -p "$root/bench/nginx" "$root/etc" "$root/jobs"
	copy_with_libs "$root" "$nginx" "$ab" "LIBS:$dir/rr_preload.so" || exit 1
	cp "$dir/rr_preload.so" "$dir/urandom_preload.so" "$dir/openloop" "$root/bench/nginx/"
	cp "$S/guest/nginx-run" "$root/bench/nginx/nginx-run"
	chmod +x "$root/bench/nginx/nginx-run"
	# nginx's "user root root" needs the two databases (glibc 2.36 has
	# its files backend built in)
	[ -f "$root/etc/passwd" ] || echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
	[ -f "$root/etc/group" ] || echo "root:x:0:" >"$root/etc/group"
	write_params >"$root/bench/nginx/params"
	if [ "$kind" = smoke ]; then
		mkdir -p "$root/selftests"
		printf '#!/bin/sh\n# the nginx smoke (scripts/bench-nginx.sh)\nSMOKE=1 exec /bench/nginx/nginx-run\n' \
			>"$root/selftests/nginx_smoke"
		chmod +x "$root/selftests/nginx_smoke"
	else
		cp "$S/guest/nginx-run" "$root/jobs/nginx"
	fi
	echo "nginx: $("$nginx" -v 2>&1), ab: $("$ab" -V | head -n 1)"
	du -sh "$root"
}

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
	build_tools "$dir" || die "building rr_preload.so and openloop failed"
	{
		write_params
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
pack)  do_pack "${2:?base}" "${3:?root}" "${4:-bench}" ;;
host)  do_host "${2:-}" ;;
tools) build_tools "${2:?dir}" ;;
*)     die "usage: $0 run BASE | pack BASE ROOT [smoke] | host [OUTDIR] | tools DIR" ;;
esac
exit
}
