// SPDX-License-Identifier: GPL-2.0
/*
 * rr_join - what adding the n-th round-robin item to one source costs.
 *
 * EPOLL_CTL_ADD with EPOLLEXCLUSIVE | EPOLLROUNDROBIN queues the item's
 * wait entry on the source's wait queue with add_wait_queue_rr(), which
 * walks the whole queue under the queue's lock, interrupts off, to mark
 * the exclusive entries of the same kind (the join rule; see
 * kernel/sched/wait.c in the series).  So the n-th ADD walks n - 1
 * entries: adding N items costs O(N^2) entry visits in all, and one ADD
 * holds the lock for O(N).  This measures both, against plain
 * EPOLLEXCLUSIVE (add_wait_queue_exclusive_peer(), which stops at the
 * first round-robin peer and otherwise also walks the queue) and plain
 * EPOLLIN (no walk):
 *
 *   [main] -- ADD #1 ---> [epoll 0] ---|
 *          -- ADD #2 ---> [epoll 1] ---|--> [one eventfd's wait queue]
 *          -- ...                      |
 *          -- ADD #N ---> [epoll N-1] -|
 *
 * One thread, N epoll instances, one eventfd; the i-th ADD puts instance i
 * on the eventfd.  Each ADD is timed alone (CLOCK_MONOTONIC around the
 * call) and the times are reported per bucket of consecutive ADDs.  No
 * waiter sleeps and nothing is woken: this is the cost of the join, not
 * of a wakeup.
 *
 * Caveats: under TCG every instruction is emulated, so the absolute times
 * are not a machine's; the ratio between the first and the last bucket
 * (the slope in n) is what carries over.  Each instance is an open file:
 * the program raises RLIMIT_NOFILE to N + 16 (root in the guest can).
 * The epoll instances' own allocation is in every ADD's time in all modes.
 *
 * Options:
 *
 *   -n N      items (epoll instances) to add, default 10000
 *   -b B      ADDs per bucket in the report, default 1000
 *   -m MODE   roundrobin (default), exclusive or all; may be repeated
 *
 * Output: "# Run summary", one line per bucket (first and last ADD number,
 * mean and max ns per ADD), then one line per mode that scripts parse
 * (scripts/bench-report.py):
 *
 *   rr-join-bucket: mode=<m> adds=<a>-<b> mean_ns=<t> max_ns=<t>
 *   rr-join-result: mode=<m> n=<N> total_ns=<t> first_bucket_ns=<a>
 *                   last_bucket_ns=<b> max_ns=<m>
 *
 *   gcc -O2 -Wall -Wextra -static -I<gen> -o rr_join bench/rr_join.c
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Generated per kernel base: EPOLLEXCLUSIVE and EPOLLROUNDROBIN. */
#include "epoll_uapi.h"

struct mode {
	const char *name;
	uint32_t events;
};

static const struct mode modes[] = {
	{ "roundrobin", EPOLLIN | (uint32_t)EPOLLEXCLUSIVE | (uint32_t)EPOLLROUNDROBIN },
	{ "exclusive", EPOLLIN | (uint32_t)EPOLLEXCLUSIVE },
	{ "all", EPOLLIN },
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const struct mode *find_mode(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(modes[i].name, name))
			return &modes[i];
	errx(2, "unknown mode '%s' (roundrobin, exclusive, all)", name);
}

static void raise_nofile(unsigned int n)
{
	struct rlimit rl = { .rlim_cur = n + 16, .rlim_max = n + 16 };
	struct rlimit old;

	if (getrlimit(RLIMIT_NOFILE, &old) == 0 && old.rlim_cur >= rl.rlim_cur)
		return;
	if (old.rlim_max > rl.rlim_max)
		rl.rlim_max = old.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		err(2, "RLIMIT_NOFILE to %u (run as root, or ulimit -n)", n + 16);
}

/*
 * Add the eventfd to n fresh instances in mode m; report per bucket of b.
 * Returns 0, or 1 if an ADD failed.
 */
static int run(const struct mode *m, unsigned int n, unsigned int b)
{
	int64_t *t = calloc(n, sizeof(*t));
	int *ep = calloc(n, sizeof(*ep));
	int64_t total = 0, max = 0, first = 0, last = 0;
	unsigned int i, j, nb = 0;
	int efd, rc = 0;

	if (!t || !ep)
		err(2, "calloc");
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		err(2, "eventfd");
	for (i = 0; i < n; i++) {
		ep[i] = epoll_create1(EPOLL_CLOEXEC);
		if (ep[i] < 0)
			err(2, "epoll_create1 #%u", i + 1);
	}
	for (i = 0; i < n; i++) {
		struct epoll_event ev = { .events = m->events, .data.u32 = i };
		int64_t t0 = now_ns();

		if (epoll_ctl(ep[i], EPOLL_CTL_ADD, efd, &ev)) {
			fprintf(stderr, "mode %s: ADD #%u: %s\n", m->name, i + 1,
				strerror(errno));
			rc = 1;
			n = i;
			break;
		}
		t[i] = now_ns() - t0;
	}
	printf("# mode=%s: ADD number, mean ns and max ns per ADD\n", m->name);
	for (i = 0; i < n; i += b) {
		int64_t sum = 0, bmax = 0;
		unsigned int end = i + b < n ? i + b : n;

		for (j = i; j < end; j++) {
			sum += t[j];
			if (t[j] > bmax)
				bmax = t[j];
		}
		total += sum;
		if (bmax > max)
			max = bmax;
		if (!nb++)
			first = sum / (end - i);
		last = sum / (end - i);
		printf("rr-join-bucket: mode=%s adds=%u-%u mean_ns=%lld max_ns=%lld\n", m->name,
		       i + 1, end, (long long)(sum / (end - i)), (long long)bmax);
	}
	printf("rr-join-result: mode=%s n=%u total_ns=%lld first_bucket_ns=%lld last_bucket_ns=%lld max_ns=%lld\n",
	       m->name, n, (long long)total, (long long)first, (long long)last,
	       (long long)max);
	for (i = 0; i < n; i++)
		close(ep[i]);
	close(efd);
	free(t);
	free(ep);
	return rc;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-n items] [-b bucket] [-m roundrobin|exclusive|all]...\n"
		"  -n N   items (epoll instances) on one eventfd (default 10000)\n"
		"  -b B   ADDs per reported bucket (default 1000)\n"
		"  -m M   mode, may be repeated (default: roundrobin)\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const struct mode *sel[8];
	unsigned int n = 10000, b = 1000, nsel = 0, i;
	int opt, rc = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "n:b:m:h")) != -1) {
		switch (opt) {
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 'b':
			b = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			if (nsel == sizeof(sel) / sizeof(sel[0]))
				usage(argv[0]);
			sel[nsel++] = find_mode(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (!n || !b)
		usage(argv[0]);
	if (!nsel)
		sel[nsel++] = &modes[0];
	raise_nofile(n);
	printf("# Run summary [PID %d]: items=%u bucket=%u modes=", getpid(), n, b);
	for (i = 0; i < nsel; i++)
		printf("%s%s", i ? "," : "", sel[i]->name);
	printf("\n\n");
	for (i = 0; i < nsel; i++)
		rc |= run(sel[i], n, b);
	return rc;
}
