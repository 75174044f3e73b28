// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_mod_wait_leak - no failure path of epoll_mod_wait() loses memory.
 *
 * The RFC leaked the kernel copy of the commands when reading the wait
 * spec faulted.  The series streams the batch through a buffer on the
 * stack and allocates nothing, so this guards the paths against a copy
 * coming back: a full batch (EPOLL_MOD_MAX_CMDS commands, 32 KiB) is
 * pushed through each failure path LOOPS times; a leak of one copy per
 * call would lose LOOPS * 32 KiB (over 100 MiB), while the bound allows
 * LEAK_SLACK_KB for unrelated activity.  A kernel with kmemleak
 * (make test DEBUG=1) finds smaller leaks; this test needs no debug
 * option.
 *
 * Diagram legend: t0 the test thread, (mw) epoll_mod_wait() with its
 * commands, e0 the epoll instance, s0 a pipe read end, ! the failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wclobbered"

#include "kselftest_harness.h"
#include "epoll_uapi.h"
#include "epoll_mod_wait.h"

#define LOOPS		4000
#define LEAK_SLACK_KB	(16 * 1024)
#define NO_MEMINFO	LONG_MIN

/* MemAvailable (or MemFree on kernels without it), in KiB */
static long mem_available_kb(void)
{
	char line[128];
	long avail = -1, free_kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		long kb;

		if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
			avail = kb;
		else if (sscanf(line, "MemFree: %ld kB", &kb) == 1)
			free_kb = kb;
	}
	fclose(f);
	return avail >= 0 ? avail : free_kb;
}

FIXTURE(leak) {
	int ep;
	int rd, wr;
	struct epoll_mod_cmd *cmds;
	void *hole;	/* an unmapped page */
};

FIXTURE_SETUP(leak)
{
	int p[2];

	self->ep = epoll_create1(0);
	ASSERT_LE(0, self->ep);
	ASSERT_EQ(0, pipe(p));
	self->rd = p[0];
	self->wr = p[1];
	self->cmds = calloc(EPOLL_MOD_MAX_CMDS, sizeof(*self->cmds));
	ASSERT_TRUE(self->cmds != NULL);
	self->hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	ASSERT_TRUE(self->hole != MAP_FAILED);
	ASSERT_EQ(0, munmap(self->hole, 4096));
}

FIXTURE_TEARDOWN(leak)
{
	free(self->cmds);
	close(self->rd);
	close(self->wr);
	close(self->ep);
}

/* A full batch of DELs of an fd that is not in the set: all would fail. */
static void fill_dels(struct epoll_mod_cmd *cmds, int fd)
{
	int i;

	for (i = 0; i < EPOLL_MOD_MAX_CMDS; i++) {
		memset(&cmds[i], 0, sizeof(cmds[i]));
		cmds[i].op = EPOLL_CTL_DEL;
		cmds[i].fd = fd;
		cmds[i].error = 1;
	}
}

/*
 * Call LOOPS times, each expected to fail with @err, and return how many
 * KiB of memory went missing meanwhile (negative if some was freed).
 */
static long leaked_kb(struct __test_metadata *_metadata, int ep,
		      struct epoll_mod_cmd *cmds, void *spec, int err)
{
	long before, after;
	int i;

	before = mem_available_kb();
	if (before < 0)
		return NO_MEMINFO;
	for (i = 0; i < LOOPS; i++) {
		errno = 0;
		if (epoll_mod_wait(ep, 0, EPOLL_MOD_MAX_CMDS, cmds, spec) != -1 ||
		    errno != err) {
			TH_LOG("call %d: expected -1/%s, got errno %s", i,
			       strerror(err), strerror(errno));
			return LONG_MAX;
		}
	}
	after = mem_available_kb();
	ksft_print_msg("leak: %d calls, available %ld -> %ld KiB\n", LOOPS,
		       before, after);
	return before - after;
}

/*
 *   t0 (mw) [DEL s0 x1024] + spec at an unmapped page!
 *         \
 *          e0        EFAULT before any command: the copy must be freed
 */
TEST_F(leak, spec_fault)
{
	long kb;

	fill_dels(self->cmds, self->rd);
	kb = leaked_kb(_metadata, self->ep, self->cmds, self->hole, EFAULT);
	if (kb == NO_MEMINFO)
		SKIP(return, "no /proc/meminfo");
	EXPECT_GT(LEAK_SLACK_KB, kb);
}

/*
 *   t0 (mw) [DEL s0 x1024] + spec with a bad clockid!
 *         \
 *          e0        EINVAL before any command
 */
TEST_F(leak, spec_invalid)
{
	struct epoll_event ev[1];
	struct epoll_wait_spec spec = {
		.maxevents = 1, .events = EPOLL_MOD_PTR(ev), .clockid = -1,
	};
	long kb;

	fill_dels(self->cmds, self->rd);
	kb = leaked_kb(_metadata, self->ep, self->cmds, &spec, EINVAL);
	if (kb == NO_MEMINFO)
		SKIP(return, "no /proc/meminfo");
	EXPECT_GT(LEAK_SLACK_KB, kb);
}

/*
 *   t0 (mw) [DEL s0 ! ...1023 more] + spec
 *         \
 *          e0        the first command fails with ENOENT: no wait
 */
TEST_F(leak, command_fails)
{
	struct epoll_event ev[1];
	struct epoll_wait_spec spec = {
		.maxevents = 1, .events = EPOLL_MOD_PTR(ev),
		.clockid = CLOCK_MONOTONIC,
	};
	long kb;

	fill_dels(self->cmds, self->rd);
	kb = leaked_kb(_metadata, self->ep, self->cmds, &spec, ENOENT);
	if (kb == NO_MEMINFO)
		SKIP(return, "no /proc/meminfo");
	EXPECT_GT(LEAK_SLACK_KB, kb);
	EXPECT_EQ(-ENOENT, self->cmds[0].error);
	EXPECT_EQ(1, self->cmds[1].error);
}

/*
 *   t0 (mw) [DEL s0 x1024] on a pipe fd instead of an epoll fd!
 *
 *                    EINVAL before any command is read
 */
TEST_F(leak, not_epoll)
{
	long kb;

	fill_dels(self->cmds, self->rd);
	kb = leaked_kb(_metadata, self->rd, self->cmds, NULL, EINVAL);
	if (kb == NO_MEMINFO)
		SKIP(return, "no /proc/meminfo");
	EXPECT_GT(LEAK_SLACK_KB, kb);
}

/*
 *   t0 (mw) [DEL s0 x1024] on epfd -1, not an open fd!
 *
 *                    EBADF before any command is read
 */
TEST_F(leak, bad_epfd)
{
	long kb;

	fill_dels(self->cmds, self->rd);
	kb = leaked_kb(_metadata, -1, self->cmds, NULL, EBADF);
	if (kb == NO_MEMINFO)
		SKIP(return, "no /proc/meminfo");
	EXPECT_GT(LEAK_SLACK_KB, kb);
}

int main(int argc, char **argv)
{
	errno = 0;
	if (epoll_mod_wait(-1, 0, 0, NULL, NULL) != -1 || errno != EBADF) {
		printf("1..0 # SKIP epoll_mod_wait not supported by this kernel\n");
		return KSFT_SKIP;
	}
	return test_harness_run(argc, argv);
}
