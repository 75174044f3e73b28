/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the benchmarks that call epoll_mod_wait(): the syscall number
 * for this ABI (generated per kernel base), the userspace ABI, and a probe.
 */
#ifndef BENCH_MODWAIT_H
#define BENCH_MODWAIT_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "epoll_uapi.h"
#include "epoll_mod_wait.h"

/*
 * A kernel with the series accepts flags 0, no commands and no spec, then
 * finds that -1 is no file: EBADF.  Elsewhere the number is ENOSYS or
 * another system call (userfaultfd on x86_64, socket on i386 in mainline)
 * that rejects these arguments differently.  @skipped names, in the skip
 * line, what the caller leaves out.
 */
static inline bool probe_modwait(const char *skipped)
{
	int ret, e;

	errno = 0;
	ret = epoll_mod_wait(-1, 0, 0, NULL, NULL);
	e = errno;
	if (ret >= 0)
		close(ret);	/* some other system call made an fd */
	if (ret == -1 && e == EBADF)
		return true;
	printf("# epoll_mod_wait not available: syscall %d returned %d (%s), not EBADF; skipping %s\n",
	       (int)__NR_epoll_mod_wait, ret, ret < 0 ? strerror(e) : "ok",
	       skipped);
	return false;
}

#endif /* BENCH_MODWAIT_H */
