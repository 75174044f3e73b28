/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A user-space model of epoll_mod_wait(2), for the host only: it lets the
 * patched libevent take its batching path on a kernel without the call.
 * scripts/libevent.sh builds the "emulated" variant with
 *
 *	make CPPFLAGS="-include .../epoll_mod_wait_emu.h"
 *
 * (at make time only: configure's checks for functions must not see the
 * declarations of the headers included here),
 * so that every syscall() of libevent comes here.  Only the number of
 * the call on the series' Linux 3.19 base for x86-64, 323, is taken: the
 * patch probes 463 (6.12) first, which a recent host kernel answers as
 * setxattrat() with EINVAL, so the probe's rejection of a foreign call is
 * exercised too.  Every other number goes to the real syscall().
 *
 * The model follows man/epoll_mod_wait.2: argument checks before any
 * command, commands in order, the error field written only for commands
 * that ran, stop at the first failure without waiting, then
 * epoll_pwait2() with the relative timeout of the spec.  It is a model,
 * not the kernel: the commands and the wait are separate system calls
 * here, so it says nothing about performance or about races with other
 * threads.
 *
 * Environment:
 *   EPOLL_EMU_STATS=1     at exit, print the calls and commands made
 *   EPOLL_EMU_REFUSE=N    from the (N+1)th call on, fail with ENOSYS (a
 *                         seccomp filter installed at run time), to
 *                         exercise libevent's fallback
 */
#ifndef EPOLL_MOD_WAIT_EMU_H
#define EPOLL_MOD_WAIT_EMU_H

/* Included before libevent's own config, which asks for GNU extensions:
 * ask for them first, or the headers included here would lock them out. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/syscall.h>

#define EPOLL_EMU_NR 323
#define EPOLL_EMU_MAX_CMDS 1024
#define EPOLL_EMU_ABSTIME (1U << 0)
#define EPOLL_EMU_FOREVER (1U << 1)

struct epoll_emu_cmd {
	uint32_t flags;
	int32_t op;
	int32_t fd;
	uint32_t events;
	uint64_t data;
	int32_t error;
	uint32_t reserved;
};

struct epoll_emu_spec {
	uint64_t events;
	int32_t maxevents;
	int32_t clockid;
	uint32_t flags;
	uint32_t sigsetsize;
	uint64_t sigmask;
	int64_t tv_sec;
	int64_t tv_nsec;
};

_Static_assert(sizeof(struct epoll_emu_cmd) == 32, "cmd layout");
_Static_assert(sizeof(struct epoll_emu_spec) == 48, "spec layout");

__attribute__((unused)) static unsigned long epoll_emu_calls, epoll_emu_cmds,
    epoll_emu_failed;

__attribute__((unused)) static void
epoll_emu_stats(void)
{
	fprintf(stderr, "epoll-emu[%d]: %lu calls, %lu commands, "
	    "%lu failed commands\n", (int)getpid(), epoll_emu_calls,
	    epoll_emu_cmds, epoll_emu_failed);
}

__attribute__((unused)) static int
epoll_emu_fail(int err)
{
	errno = err;
	return -1;
}

__attribute__((unused)) static int
epoll_emu_check_spec(const struct epoll_emu_spec *spec, size_t size)
{
	if (size < sizeof(*spec))
		return EINVAL;
	if (size > sizeof(*spec))
		return E2BIG;	/* the model knows no later version */
	if (spec->maxevents <= 0 ||
	    spec->maxevents > (int)(0x7fffffff / sizeof(struct epoll_event)))
		return EINVAL;
	if ((spec->flags & ~(EPOLL_EMU_ABSTIME | EPOLL_EMU_FOREVER)) ||
	    spec->flags == (EPOLL_EMU_ABSTIME | EPOLL_EMU_FOREVER))
		return EINVAL;
	if (spec->clockid != CLOCK_MONOTONIC &&
	    spec->clockid != CLOCK_REALTIME &&
	    spec->clockid != CLOCK_BOOTTIME)
		return EINVAL;
	if (spec->flags & EPOLL_EMU_FOREVER) {
		if (spec->tv_sec || spec->tv_nsec)
			return EINVAL;
	} else if (spec->tv_sec < 0 || spec->tv_nsec < 0 ||
	    spec->tv_nsec >= 1000000000) {
		return EINVAL;
	}
	if (spec->flags & EPOLL_EMU_ABSTIME)
		return EINVAL;	/* libevent never asks for a deadline */
	if (spec->sigmask)
		return EINVAL;	/* nor for a signal mask */
	return 0;
}

__attribute__((unused)) static int
epoll_emu_mod_wait(int epfd, unsigned flags, int ncmds,
    struct epoll_emu_cmd *cmds, const struct epoll_emu_spec *spec,
    size_t size)
{
	static int refuse_after = -2;
	struct timespec ts;
	int i, err;

	if (refuse_after == -2) {
		const char *s = getenv("EPOLL_EMU_REFUSE");
		refuse_after = s ? atoi(s) : -1;
		if (getenv("EPOLL_EMU_STATS"))
			atexit(epoll_emu_stats);
	}
	if (refuse_after >= 0 && epoll_emu_calls >= (unsigned long)refuse_after
	    && epfd >= 0)
		return epoll_emu_fail(ENOSYS);
	if (epfd >= 0)
		++epoll_emu_calls;

	if (flags)
		return epoll_emu_fail(EINVAL);
	if (ncmds < 0 || ncmds > EPOLL_EMU_MAX_CMDS)
		return epoll_emu_fail(EINVAL);
	if (epfd < 0 || fcntl(epfd, F_GETFD) < 0)
		return epoll_emu_fail(EBADF);
	if (spec && (err = epoll_emu_check_spec(spec, size)))
		return epoll_emu_fail(err);

	for (i = 0; i < ncmds; ++i) {
		struct epoll_emu_cmd *cmd = &cmds[i];
		struct epoll_event ev;

		++epoll_emu_cmds;
		if (cmd->flags || cmd->reserved) {
			err = EINVAL;
		} else {
			ev.events = cmd->events;
			ev.data.u64 = cmd->data;
			err = epoll_ctl(epfd, cmd->op, cmd->fd, &ev) ? errno : 0;
		}
		cmd->error = -err;
		if (err) {
			++epoll_emu_failed;
			return epoll_emu_fail(err);
		}
	}
	if (!spec)
		return 0;

	ts.tv_sec = spec->tv_sec;
	ts.tv_nsec = spec->tv_nsec;
	return epoll_pwait2(epfd,
	    (struct epoll_event *)(uintptr_t)spec->events, spec->maxevents,
	    (spec->flags & EPOLL_EMU_FOREVER) ? NULL : &ts, NULL);
}

__attribute__((unused)) static long
epoll_emu_syscall(long nr, ...)
{
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; ++i)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == EPOLL_EMU_NR)
		return epoll_emu_mod_wait((int)a[0], (unsigned)a[1], (int)a[2],
		    (struct epoll_emu_cmd *)a[3],
		    (const struct epoll_emu_spec *)a[4], (size_t)a[5]);
	return syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

#define syscall epoll_emu_syscall

#endif /* EPOLL_MOD_WAIT_EMU_H */
