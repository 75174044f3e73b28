/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The epoll flags the tests need, for C libraries whose <sys/epoll.h>
 * predates them.  The system call numbers come from the kernel's own
 * headers: the Makefile puts $(KHDR_INCLUDES) first, so <sys/syscall.h>
 * finds the <asm/unistd.h> of "make headers".
 */
#ifndef EPOLL_UAPI_H
#define EPOLL_UAPI_H

#include <sys/epoll.h>
#include <sys/syscall.h>

#ifndef EPOLLEXCLUSIVE
#define EPOLLEXCLUSIVE		(1U << 28)
#endif

#ifndef EPOLLROUNDROBIN
#define EPOLLROUNDROBIN		(1U << 26)
#endif

#endif /* EPOLL_UAPI_H */
