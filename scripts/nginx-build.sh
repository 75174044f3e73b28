#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# nginx-build.sh: nginx built from Debian's own source package, twice, for
# the nginx scenario (bench/nginx/README.md):
#
#   stock      Debian's nginx as packaged (1.22.1: its accept handler
#              deletes and re-adds the listener every 16 accepts,
#              ngx_reorder_accept_events(), nginx's own fix since 1.21.6
#              for the uneven wakeups of EPOLLEXCLUSIVE)
#   noreorder  the same with bench/nginx/no-reorder.patch: that re-add
#              compiled out, as nginx before 1.21.6 and any server that
#              shares one listener under EPOLLEXCLUSIVE with no fix of its
#              own
#
#   nginx-build.sh source   fetch Debian's nginx source (apt-get source,
#                           through private lists in build/nginx/apt/; the
#                           machine's apt configuration is not touched),
#                           the version in build/nginx/source-version
#   nginx-build.sh build [stock|noreorder|all]
#                           configure with the flags Debian's debian/rules
#                           gives its nginx binary, paths relative to a
#                           prefix in build/nginx/VARIANT/, and build with
#                           nice -n 19 make -j1: build/nginx/VARIANT/sbin/nginx
#                           (skipped while its stamp, the hashes of the
#                           source, patch, script and flags, still holds)
#   nginx-build.sh smoke    on this machine: each variant with 4 workers,
#                           accept_mutex off, multi_accept off, on
#                           127.0.0.1, ab -n 2000 -c 16 (a new connection a
#                           request), requests per worker for each; then
#                           one run under strace counting the listener's
#                           epoll_ctl ADD and DEL (build/nginx/smoke/)
#
# Dynamic modules whose libraries are not installed (GeoIP, GD, libperl)
# are left out, and said so; the nginx binary itself links the same
# libraries as Debian's.  Missing build packages (libpcre2-dev, ...) are
# installed with apt-get, as scripts/deps.sh does.
#
# Parameters (environment): NGINX_SRC_VERSION (the Debian version to fetch;
# default the installed nginx's, else the newest that downloads),
# NGINX_SRC_REFRESH=1 (fetch again), NGINX_SMOKE_PORT (18180),
# NGINX_SMOKE_REQUESTS (2000), NGINX_SMOKE_CONC (16), NGINX_SMOKE_WORKERS
# (4), NGINX_SMOKE_RUNS (runs per variant, 1), NGINX_SMOKE_STRACE (1; 0
# skips the strace run).

. "$(dirname "$0")/lib.sh"

# One compound command: bash reads it all before running it, so editing
# this file during a run cannot change that run.
{

cmd=${1:-}
NGX=$BUILD/nginx
LOGS=$NGX/logs
PATCH=$TOP/bench/nginx/no-reorder.patch
SELF=$TOP/scripts/nginx-build.sh
# not the kernel jobs' timings file: these are no kernel stages
# shellcheck disable=SC2034 # run_step reads both
TIMINGS=${NGINX_TIMINGS:-$NGX/timings.txt}
STEP_BASE=nginx
VARIANTS="stock noreorder"

# package:command-or-file, as in scripts/deps.sh
NEED_SOURCE="
dpkg-dev:dpkg-source
"
NEED_BUILD="
build-essential:gcc
make:make
dpkg-dev:dpkg-buildflags
patch:patch
libpcre2-dev:/usr/include/pcre2.h
libssl-dev:/usr/include/openssl/ssl.h
zlib1g-dev:/usr/include/zlib.h
libcrypt-dev:/usr/include/crypt.h
"
NEED_SMOKE="
apache2-utils:ab
procps:pgrep
"

# missing PAIR...: the packages of the missing ones (scripts/deps.sh)
missing() {
	"$TOP/scripts/deps.sh" missing "$@"
}

# need PAIR...: install the packages of the missing ones (scripts/deps.sh)
need() {
	"$TOP/scripts/deps.sh" need "$@" >>"$LOGS/apt-install.log" 2>&1 ||
		die "installing the packages of $* failed (log: $LOGS/apt-install.log)"
}

# --- source --------------------------------------------------------------

APT_DIR=$NGX/apt
APT_OPTS=(
	-o "Dir::Etc::SourceList=$APT_DIR/sources.list"
	-o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$APT_DIR/lists"
	-o "Dir::Cache=$APT_DIR/cache"
	-o Debug::NoLocking=1
)

# src_dir: the unpacked source tree (the one directory with debian/rules)
src_dir() {
	local d

	for d in "$NGX"/src/nginx-*/; do
		[ -f "$d/debian/rules" ] && { echo "${d%/}"; return 0; }
	done
	return 1
}

# fetch_version VERSION: apt-get source nginx=VERSION into src.new, which
# replaces src when it worked
fetch_version() {
	local v=$1 new=$NGX/src.new

	rm -rf "$new"
	mkdir -p "$new"
	# the download runs as root (no _apt sandbox): build/ may not be
	# readable by _apt
	if (cd "$new" && apt-get -q "${APT_OPTS[@]}" -o APT::Sandbox::User=root \
		source "nginx=$v"); then
		rm -rf "$NGX/src"
		mv "$new" "$NGX/src"
		return 0
	fi
	rm -rf "$new"
	return 1
}

do_source() {
	local want have listed v got='' log=$LOGS/source.log

	mkdir -p "$LOGS"
	if [ "${NGINX_SRC_REFRESH:-0}" != 1 ] && [ -s "$NGX/source-version" ] && src_dir >/dev/null; then
		msg "nginx source $(cat "$NGX/source-version") already in $(src_dir)"
		return 0
	fi
	# shellcheck disable=SC2086 # one pair a word
	need $NEED_SOURCE
	mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
	cat >"$APT_DIR/sources.list" <<-EOF
	deb-src http://deb.debian.org/debian bookworm main
	deb-src http://deb.debian.org/debian-security bookworm-security main
	EOF
	run_step "$LOGS/source-update.log" "nginx: apt-get update (build/nginx/apt)" \
		apt-get -q "${APT_OPTS[@]}" update || return 1
	listed=$(apt-cache "${APT_OPTS[@]}" showsrc nginx | sed -n 's/^Version: //p' | sort -rVu)
	[ -n "$listed" ] || die "the lists in $APT_DIR have no source package nginx"
	have=$(dpkg-query -W -f '${Version}' nginx 2>/dev/null || true)
	want=${NGINX_SRC_VERSION:-$have}
	# the wanted version first (the installed binary's), then the
	# others, newest first: a pool may list a version it cannot serve
	: >"$log"
	for v in $want $(echo "$listed" | grep -vxF "${want:-none}"); do
		echo "$listed" | grep -qxF "$v" || {
			echo "nginx $v: not in the lists" >>"$log"
			continue
		}
		msg "nginx: apt-get source nginx=$v ..."
		if fetch_version "$v" >>"$log" 2>&1; then
			got=$v
			break
		fi
		warn "apt-get source nginx=$v failed (log: $log)"
		[ -n "${NGINX_SRC_VERSION:-}" ] && die "NGINX_SRC_VERSION=$v cannot be fetched"
	done
	[ -n "$got" ] || die "no version of nginx's source could be fetched (log: $log)"
	echo "$got" >"$NGX/source-version"
	msg "nginx source $got in $(src_dir)"
	if [ -n "$have" ] && [ "$have" != "$got" ]; then
		warn "the installed nginx is $have; its source could not be fetched, so the builds are $got"
	fi
}

# --- build ---------------------------------------------------------------

# debian_flags SRC: the configure flags debian/rules gives its nginx binary,
# one a line: the flavour "light" where the rules still have one (before
# 1.22.1-6), else "bin" (bookworm: one binary, nginx-light a metapackage
# of nginx and libnginx-mod-http-echo).  debian/rules exports
# DEB_BUILD_MAINT_OPTIONS, but GNU make 4.3's $(shell) does not see it:
# given here, as dpkg-buildpackage gives it (-z now, as Debian's binary
# shows).
debian_flags() {
	# shellcheck disable=SC2016 # make's $(...), not the shell's
	(cd "$1" && DEB_BUILD_MAINT_OPTIONS=hardening=+all \
		make -s --no-print-directory -f debian/rules \
		--eval 'ngx-print-flags: ; @printf "%s\n" $($(if $(light_configure_flags),light,bin)_configure_flags)' \
		ngx-print-flags)
}

# dyn_mod_missing FLAG: for a --with-..._module=dynamic flag, the package
# that its build needs and that is not installed (nothing when none)
dyn_mod_missing() {
	local ma

	ma=$(gcc -print-multiarch 2>/dev/null)
	case $1 in
	--with-http_geoip_module=dynamic|--with-stream_geoip_module=dynamic)
		missing libgeoip-dev:/usr/include/GeoIP.h ;;
	--with-http_image_filter_module=dynamic)
		missing libgd-dev:/usr/include/gd.h ;;
	--with-http_perl_module=dynamic)
		missing "libperl-dev:/usr/lib/$ma/libperl.so" ;;
	--with-http_xslt_module=dynamic)
		missing libxslt1-dev:/usr/include/libxslt/xslt.h \
			libxml2-dev:/usr/include/libxml2/libxml/parser.h ;;
	esac
}

# variant_flags SRC VARIANT: the configure flags of VARIANT's build, one a
# line (FLAGS_LEFT_OUT: the flags dropped, with the missing package)
variant_flags() {
	local src=$1 v=$2 vd=$NGX/$2 f m

	FLAGS_LEFT_OUT=
	while IFS= read -r f; do
		case $f in
		# the compiler's file-prefix-map names the tree it compiles
		--with-cc-opt=*)        f=${f//"$src"/"$vd/tree"} ;;
		# paths relative to the prefix: -p DIR moves them all, and
		# nothing needs root (the guest's runner passes -p, -c, -e and
		# sets the pid and temp paths)
		--prefix=*)             f=--prefix=$vd ;;
		--conf-path=*)          f=--conf-path=conf/nginx.conf ;;
		--http-log-path=*)      f=--http-log-path=logs/access.log ;;
		--lock-path=*)          f=--lock-path=logs/nginx.lock ;;
		--pid-path=*)           f=--pid-path=logs/nginx.pid ;;
		--modules-path=*)       f=--modules-path=modules ;;
		--http-*-temp-path=*)   f=${f%%=*}=temp/${f##*/} ;;
		--with-*=dynamic)
			m=$(dyn_mod_missing "$f" | tr '\n' ' ')
			if [ -n "$m" ]; then
				FLAGS_LEFT_OUT="$FLAGS_LEFT_OUT$f (needs ${m% })"$'\n'
				continue
			fi ;;
		esac
		printf '%s\n' "$f"
	done < <(debian_flags "$src")
}

# libs BIN: the sonames BIN links, sorted
libs() { ldd "$1" | awk '$1 !~ /^linux-vdso/ { print $1 }' | sort; }

# stamp_of SRC VARIANT FLAGFILE: what a build of VARIANT depends on
stamp_of() {
	local src=$1 v=$2

	echo "source $(cat "$NGX/source-version") $(hash_files "$NGX"/src/*.dsc)"
	echo "tree $(cd "$src" && find . -type f -print0 | sort -z | xargs -0 cat | sha256sum | cut -c1-16)"
	if [ "$v" = noreorder ]; then
		echo "patch $(hash_files "$PATCH")"
	else
		echo "patch none"
	fi
	echo "script $(hash_files "$SELF")"
	echo "flags $(hash_files "$3")"
}

# compile VARIANT: the tree's copy, patch, configure, make (each a step)
compile() {
	local v=$1 vd=$NGX/$1 src=$2 flags=()

	mapfile -t flags <"$vd/configure-flags.new"
	rm -rf "$vd/tree" "$vd/sbin" "$vd/modules"
	cp -a "$src" "$vd/tree" || return 1
	if [ "$v" = noreorder ]; then
		run_step "$LOGS/$v-patch.log" "nginx $v: apply no-reorder.patch" \
			patch -d "$vd/tree" -p1 --fuzz=0 --no-backup-if-mismatch -i "$PATCH" || return 1
	fi
	# shellcheck disable=SC2016
	run_step "$LOGS/$v-configure.log" "nginx $v: configure" \
		bash -c 'cd "$1" && shift && exec nice -n 19 ./configure "$@"' _ "$vd/tree" "${flags[@]}" || return 1
	run_step "$LOGS/$v-make.log" "nginx $v: nice -n 19 make -j1" \
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL nice -n 19 make -C "$vd/tree" -j1 || return 1
	mkdir -p "$vd/sbin" "$vd/modules" "$vd/conf" "$vd/logs" "$vd/temp"
	cp "$vd/tree/objs/nginx" "$vd/sbin/nginx" || return 1
	for m in "$vd"/tree/objs/*.so; do
		[ -f "$m" ] && cp "$m" "$vd/modules/"
	done
	# mime.types and friends, for a configuration that includes them
	cp -n "$vd"/tree/conf/* "$vd/conf/"
	return 0
}

build_variant() {
	local v=$1 vd=$NGX/$1 src bin new host_libs our_libs

	case $v in
	stock|noreorder) ;;
	*) die "unknown variant '$v' (stock, noreorder or all)" ;;
	esac
	src=$(src_dir) || die "no nginx source in $NGX/src"
	[ "$v" = noreorder ] && [ ! -f "$PATCH" ] && die "no $PATCH"
	mkdir -p "$vd"
	variant_flags "$src" "$v" >"$vd/configure-flags.new" ||
		die "reading the configure flags from $src/debian/rules failed"
	grep -q '^--with-cc-opt=' "$vd/configure-flags.new" ||
		die "debian/rules gave no configure flags (see $vd/configure-flags.new)"
	printf '%s' "$FLAGS_LEFT_OUT" >"$vd/modules-left-out.new"
	new=$(stamp_of "$src" "$v" "$vd/configure-flags.new")
	bin=$vd/sbin/nginx
	if [ -x "$bin" ] && [ -f "$vd/stamp" ] && [ "$(cat "$vd/stamp")" = "$new" ]; then
		rm -f "$vd/configure-flags.new" "$vd/modules-left-out.new"
		msg "nginx $v: up to date ($bin)"
		return 0
	fi
	rm -f "$vd/stamp"
	if [ -s "$vd/modules-left-out.new" ]; then
		while IFS= read -r f; do
			warn "nginx $v: left out $f"
		done <"$vd/modules-left-out.new"
	fi
	compile "$v" "$src" || return 1
	mv "$vd/configure-flags.new" "$vd/configure-flags"
	mv "$vd/modules-left-out.new" "$vd/modules-left-out"
	"$bin" -V 2>&1 | grep -q '^configure arguments: .*--with-cc-opt=' ||
		die "nginx $v: nginx -V shows no configure arguments"
	if [ -x /usr/sbin/nginx ]; then
		host_libs=$(libs /usr/sbin/nginx)
		our_libs=$(libs "$bin")
		[ "$host_libs" = "$our_libs" ] ||
			die "nginx $v links ${our_libs//$'\n'/ }, /usr/sbin/nginx links ${host_libs//$'\n'/ }"
	fi
	echo "$new" >"$vd/stamp"
	msg "nginx $v: $bin ($("$bin" -v 2>&1), Debian $(cat "$NGX/source-version"), links $(libs "$bin" | paste -sd ' '))"
}

do_build() {
	local which=${1:-all} v

	mkdir -p "$LOGS"
	# shellcheck disable=SC2086
	need $NEED_BUILD
	src_dir >/dev/null && [ -s "$NGX/source-version" ] || do_source || return 1
	[ "$which" = all ] && which=$VARIANTS
	for v in $which; do
		build_variant "$v" || return 1
	done
}

# --- smoke ---------------------------------------------------------------

SMOKE=$NGX/smoke
PORT=${NGINX_SMOKE_PORT:-18180}
REQUESTS=${NGINX_SMOKE_REQUESTS:-2000}
CONC=${NGINX_SMOKE_CONC:-16}
WORKERS=${NGINX_SMOKE_WORKERS:-4}

smoke_conf() {
	local d=$1 user=

	[ "$(id -u)" = 0 ] && user="user root root;"
	cat >"$d/nginx.conf" <<-EOF
	worker_processes $WORKERS;
	daemon off;
	$user
	pid $d/nginx.pid;
	error_log $d/error.log notice;
	events {
		use epoll;
		worker_connections 1024;
		accept_mutex off;
		multi_accept off;
	}
	http {
		log_format perworker '\$pid \$status';
		access_log $d/access.log perworker;
		keepalive_timeout 0;
		types { text/html html; }
		client_body_temp_path $d/temp/body;
		proxy_temp_path $d/temp/proxy;
		fastcgi_temp_path $d/temp/fastcgi;
		uwsgi_temp_path $d/temp/uwsgi;
		scgi_temp_path $d/temp/scgi;
		server {
			listen 127.0.0.1:$PORT;
			root $d/www;
		}
	}
	EOF
}

# children PID: its child processes, sorted
children() { pgrep -P "$1" | sort -n | tr '\n' ' '; }

# smoke_once VARIANT RUN [strace]: one nginx, one ab; prints the
# "worker PID N" lines (and the listener's epoll_ctl counts under strace)
smoke_once() {
	local v=$1 d=$SMOKE/$1/$2 tr=${3:-} bin=$NGX/$1/sbin/nginx top master pids n rc

	rm -rf "$d"
	mkdir -p "$d/www" "$d/temp"
	awk 'BEGIN { s = ""; while (length(s) < 611) s = s "x"; print s }' >"$d/www/index.html"
	smoke_conf "$d"
	if [ -n "$tr" ]; then
		strace -f -qq -e trace=epoll_ctl -o "$d/strace.out" \
			"$bin" -p "$d" -c "$d/nginx.conf" -e "$d/error.log" &
	else
		"$bin" -p "$d" -c "$d/nginx.conf" -e "$d/error.log" &
	fi
	top=$!
	master=
	pids=
	n=0
	for _ in $(seq 100); do
		if [ -n "$tr" ]; then
			master=$(pgrep -P "$top" | head -n 1)
		else
			master=$top
		fi
		[ -n "$master" ] && pids=$(children "$master")
		n=$(wc -w <<<"$pids")
		if [ "$n" = "$WORKERS" ] && [ -s "$d/nginx.pid" ]; then
			break
		fi
		kill -0 "$top" 2>/dev/null || break
		sleep 0.1
	done
	if [ "$n" != "$WORKERS" ]; then
		echo "nginx $v did not start ($n of $WORKERS workers)"
		tail -n 5 "$d/error.log" 2>/dev/null
		[ -n "$master" ] && kill -QUIT "$master" 2>/dev/null
		kill "$top" 2>/dev/null
		wait "$top" 2>/dev/null
		return 1
	fi
	# every worker has added the listener to its epoll
	sleep 0.5
	timeout -s KILL 120 ab -r -s 30 -n "$REQUESTS" -c "$CONC" \
		"http://127.0.0.1:$PORT/index.html" >"$d/ab.out" 2>&1
	rc=$?
	kill -QUIT "$master" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$top" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$top" 2>/dev/null
	wait "$top" 2>/dev/null
	echo "ab-exit $rc"
	sed -n 's/^\(Complete requests\|Failed requests\|Requests per second\):[[:space:]]*/ab \1: /p' "$d/ab.out"
	awk -v pids="$pids" '
		BEGIN { n = split(pids, p, " "); for (i = 1; i <= n; i++) c[p[i]] = 0 }
		{ c[$1]++; s[$2]++; tot++ }
		END {
			for (k in c) print "worker " k " " c[k]
			for (k in s) print "status " k " " s[k]
			print "logged " tot + 0
		}' "$d/access.log"
	if [ -n "$tr" ]; then
		# the listener: the fd the workers add with EPOLLEXCLUSIVE
		awk '
			/EPOLL_CTL_ADD/ && /EPOLLEXCLUSIVE/ {
				if (match($0, /EPOLL_CTL_ADD, [0-9]+/)) {
					fd = substr($0, RSTART + 15, RLENGTH - 15); lfd[fd] = 1
				}
				add++
			}
			/EPOLL_CTL_DEL/ {
				if (match($0, /EPOLL_CTL_DEL, [0-9]+/)) {
					fd = substr($0, RSTART + 15, RLENGTH - 15); del[fd]++
				}
			}
			END {
				d = 0
				for (fd in lfd) d += del[fd]
				print "listener-epoll_ctl ADD " add + 0 " DEL " d + 0
			}' "$d/strace.out"
	fi
}

# show VARIANT RUN OUT: the counts of one run, per worker in pid order
# (the order they were forked, about the order they added the listener)
show() {
	local v=$1 run=$2 out=$3 counts total

	counts=$(awk '/^worker / { print $2, $3 }' "$out" | sort -n | awk '{ print $2 }' | paste -sd ' ')
	total=$(sed -n 's/^logged //p' "$out")
	printf '%-10s %-5s requests %-5s 200s %-5s per worker (pid order): %-22s largest share %s\n' \
		"$v" "$run" "$total" "$(sed -n 's/^status 200 //p' "$out")" "$counts" \
		"$(echo "$counts" | awk -v t="$total" '{
			m = 0; for (i = 1; i <= NF; i++) if ($i > m) m = $i
			if (t > 0) printf "%.1f%%", 100 * m / t; else print "-" }')"
}

do_smoke() {
	local v r runs=${NGINX_SMOKE_RUNS:-1} out sum=$SMOKE/summary.txt st=${NGINX_SMOKE_STRACE:-1}

	do_build all || return 1
	# shellcheck disable=SC2086
	need $NEED_SMOKE
	mkdir -p "$SMOKE"
	if [ "$st" = 1 ] && ! command -v strace >/dev/null; then
		warn "no strace: the listener's epoll_ctl counts are skipped"
		st=0
	fi
	{
		echo "nginx-build.sh smoke, $(date -u +%Y-%m-%dT%H:%MZ), host kernel $(uname -r), $(nproc) CPUs"
		echo "Debian nginx source $(cat "$NGX/source-version"); $WORKERS workers, accept_mutex off, multi_accept off; ab -n $REQUESTS -c $CONC (no -k)"
	} | tee "$sum"
	for r in $(seq "$runs"); do
		for v in $VARIANTS; do
			out=$SMOKE/$v-run$r.txt
			smoke_once "$v" "run$r" >"$out" 2>&1 || { cat "$out"; return 1; }
			show "$v" "run$r" "$out" | tee -a "$sum"
			grep -E '^ab (Failed|Requests)' "$out" | sed 's/^/    /' | tee -a "$sum"
		done
	done
	[ "$st" = 1 ] || return 0
	echo "under strace -f -e trace=epoll_ctl (one run each; tracing slows the workers, so the spread of these runs is not the above's):" | tee -a "$sum"
	for v in $VARIANTS; do
		out=$SMOKE/$v-strace.txt
		smoke_once "$v" strace strace >"$out" 2>&1 || { cat "$out"; return 1; }
		# ADD counts the one of each worker at start, DEL the one of
		# each worker at its graceful exit (closing the listener)
		sed -n 's/^listener-epoll_ctl ADD \([0-9]*\) DEL \([0-9]*\)$/\1 \2/p' "$out" |
			while read -r a d; do
				printf '%-10s listener epoll_ctl ADD %s DEL %s (%s workers: re-adds while serving %s)\n' \
					"$v" "$a" "$d" "$WORKERS" $((a - WORKERS))
			done | tee -a "$sum"
		show "$v" strace "$out" | tee -a "$sum"
	done
	msg "summary: $sum"
}

case $cmd in
source) do_source ;;
build)  do_build "${2:-all}" ;;
smoke)  do_smoke ;;
*)      die "usage: $0 source | build [stock|noreorder|all] | smoke" ;;
esac
exit
}
