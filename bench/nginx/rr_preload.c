// SPDX-License-Identifier: GPL-2.0
/*
 * rr_preload.so: an LD_PRELOAD library that changes the wake mode of the
 * exclusive epoll items a program adds, for the nginx scenario of make
 * bench (scripts/bench-nginx.sh).  nginx >= 1.11.3 with accept_mutex off
 * adds its listening sockets with EPOLLEXCLUSIVE; this library rewrites
 * every EPOLL_CTL_ADD that carries EPOLLEXCLUSIVE, as RR_PRELOAD_MODE says:
 *
 *   rr     add EPOLLROUNDROBIN (the series' flag, valid only with
 *          EPOLLEXCLUSIVE): the woken waiter is rotated to the tail
 *   strip  remove EPOLLEXCLUSIVE: plain wake-all, the thundering herd
 *   off    (or unset) change nothing
 *
 * Both ways a program can reach the system call are covered: the C
 * library's epoll_ctl() (which nginx calls) and syscall(SYS_epoll_ctl, ...).
 * The mode is read once, in the constructor, so it survives nginx clearing
 * its workers' environment (they are forked, not executed).
 *
 * Each process logs its first rewrite to stderr (nginx sends its workers'
 * stderr to the error log), and the first failure of a rewritten call
 * (EINVAL from a kernel without EPOLLROUNDROBIN):
 *
 *   rr_preload: pid 123 mode rr: EPOLL_CTL_ADD fd 6 events 0x10000001 -> 0x14000001
 *
 * RR_PRELOAD_DEBUG=1 logs every rewrite.  Built with
 *   gcc -O2 -shared -fPIC -o rr_preload.so rr_preload.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/syscall.h>

/*
 * The flags, as the series' uapi headers define them: EPOLLEXCLUSIVE is
 * 1 << 28 on both bases (mainline's value since 4.5; v3.19's patch 0009
 * adds it with the same value), EPOLLROUNDROBIN 1 << 26 on both
 * (include/epoll_mod_wait.h; the RFC's bit 27 is EPOLL_URING_WAKE since
 * 6.2).  Build with -DEPOLLROUNDROBIN_VALUE=... to follow a change.
 */
#ifndef EPOLLEXCLUSIVE
#define EPOLLEXCLUSIVE (1U << 28)
#endif
#ifndef EPOLLROUNDROBIN_VALUE
#define EPOLLROUNDROBIN_VALUE (1U << 26)
#endif

enum { MODE_OFF, MODE_RR, MODE_STRIP };

static int mode = MODE_OFF;
static int debug;
static pid_t logged_pid, failed_pid;

__attribute__((constructor)) static void rr_preload_init(void)
{
	const char *m = getenv("RR_PRELOAD_MODE");
	const char *d = getenv("RR_PRELOAD_DEBUG");

	if (m && !strcmp(m, "rr"))
		mode = MODE_RR;
	else if (m && !strcmp(m, "strip"))
		mode = MODE_STRIP;
	else if (m && *m && strcmp(m, "off"))
		fprintf(stderr, "rr_preload: unknown RR_PRELOAD_MODE '%s', changing nothing\n", m);
	debug = d && *d && strcmp(d, "0");
}

static const char *mode_name(void)
{
	return mode == MODE_RR ? "rr" : mode == MODE_STRIP ? "strip" : "off";
}

/* rewrite: the event to pass instead of *ev, or ev itself. */
static struct epoll_event *rewrite(int op, int fd, struct epoll_event *ev,
				   struct epoll_event *copy)
{
	uint32_t events;
	pid_t pid;

	if (mode == MODE_OFF || op != EPOLL_CTL_ADD || !ev ||
	    !(ev->events & EPOLLEXCLUSIVE))
		return ev;
	*copy = *ev;
	events = ev->events;
	if (mode == MODE_RR)
		copy->events |= EPOLLROUNDROBIN_VALUE;
	else
		copy->events &= ~EPOLLEXCLUSIVE;
	pid = getpid();
	if (debug || logged_pid != pid) {
		logged_pid = pid;
		fprintf(stderr, "rr_preload: pid %d mode %s: EPOLL_CTL_ADD fd %d events %#x -> %#x\n",
			(int)pid, mode_name(), fd, events, copy->events);
	}
	return copy;
}

static int report_failure(int ret, int fd, struct epoll_event *ev)
{
	int err = errno;
	pid_t pid = getpid();

	if (ret < 0 && failed_pid != pid) {
		failed_pid = pid;
		fprintf(stderr, "rr_preload: pid %d mode %s: EPOLL_CTL_ADD fd %d events %#x failed: %s\n",
			(int)pid, mode_name(), fd, ev->events, strerror(err));
	}
	errno = err;
	return ret;
}

/* The C library's syscall(): calling our own would rewrite twice. */
static long (*real_syscall(void))(long, ...)
{
	static long (*real)(long, ...);

	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real;
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	long (*real)(long, ...) = real_syscall();
	struct epoll_event copy, *e = rewrite(op, fd, ev, &copy);
	int ret;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	ret = (int)real(SYS_epoll_ctl, (long)epfd, (long)op, (long)fd, (long)e);
	return e == ev ? ret : report_failure(ret, fd, e);
}

long syscall(long nr, ...)
{
	long (*real)(long, ...) = real_syscall();
	long a[6];
	struct epoll_event copy, *e;
	va_list ap;
	long ret;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (nr != SYS_epoll_ctl)
		return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	e = rewrite((int)a[1], (int)a[2], (struct epoll_event *)a[3], &copy);
	ret = real(nr, a[0], a[1], a[2], (long)e);
	return e == (struct epoll_event *)a[3] ? ret :
		report_failure((int)ret, (int)a[2], e);
}
