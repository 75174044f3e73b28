/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers shared by the epoll selftests that need no epoll flag:
 * thread ids, the scheduler state of a thread, argv lookups, pipes.
 */
#ifndef THREAD_UTIL_H
#define THREAD_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline pid_t thread_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* State letter of a /proc .../stat file; 0 if it cannot be read. */
static inline char stat_state(const char *path)
{
	char buf[256], *p;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* comm may contain ')' itself: the state follows the last one. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	return p[2];
}

/*
 * Scheduler state letter ('R', 'S', 'D', ...) of thread @tid of this
 * process, read from /proc/self/task/<tid>/stat; 0 if it cannot be read.
 * A task woken by try_to_wake_up() reads as 'R' (TASK_WAKING is reported
 * as running), so 'S' really means "still asleep".
 */
static inline char thread_state(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	return stat_state(path);
}

/* The same for the main thread of another process. */
static inline char process_state(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return stat_state(path);
}

static inline int has_arg(int argc, char **argv, const char *arg)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], arg))
			return 1;
	return 0;
}

/* A non-blocking pipe; 0 or -errno. */
static inline int open_pipe(int *rd, int *wr)
{
	int fds[2];

	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
		return -errno;
	*rd = fds[0];
	*wr = fds[1];
	return 0;
}

/* Close *fd if open, and mark it closed. */
static inline void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

#endif /* THREAD_UTIL_H */
