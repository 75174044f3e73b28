#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# nginx-pack.sh: the nginx scenario's guest files, built and packed on the
# host (scripts/guest.sh's initramfs stage and scripts/bench-nginx.sh call
# it; it calls neither).
#
#   nginx-pack.sh pack BASE ROOT [smoke]
#                         put nginx, ab, their shared libraries and the
#                         loader, rr_preload.so, openloop and the runner
#                         into the initramfs tree ROOT (smoke: the make
#                         test smoke, /selftests/nginx_smoke)
#   nginx-pack.sh tools DIR
#                         build rr_preload.so, urandom_preload.so and
#                         openloop into DIR
#   nginx-pack.sh params  the runner's parameters (scripts/guest/nginx-run)
#                         from the NGINX_* variables of bench-nginx.sh
#
# Parameters (environment): those of scripts/bench-nginx.sh.

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
		printf '#!/bin/sh\n# the nginx smoke (scripts/nginx-pack.sh)\nSMOKE=1 exec /bench/nginx/nginx-run\n' \
			>"$root/selftests/nginx_smoke"
		chmod +x "$root/selftests/nginx_smoke"
	else
		cp "$S/guest/nginx-run" "$root/jobs/nginx"
	fi
	echo "nginx: $("$nginx" -v 2>&1), ab: $("$ab" -V | head -n 1)"
	du -sh "$root"
}

case $cmd in
pack)   do_pack "${2:?base}" "${3:?root}" "${4:-bench}" ;;
tools)  build_tools "${2:?dir}" ;;
params) write_params ;;
*)      die "usage: $0 pack BASE ROOT [smoke] | tools DIR | params" ;;
esac
exit
}
