// SPDX-License-Identifier: GPL-2.0
/*
 * modwait - what batching the interest-list updates of an event loop saves.
 *
 * An event loop that changes the events it waits for on every iteration
 * (a server arming EPOLLOUT only while it has output queued, say) pays one
 * epoll_ctl(2) per change plus one wait.  epoll_mod_wait(2) carries the
 * changes and the wait in one system call; io_uring can carry the changes
 * (IORING_OP_EPOLL_CTL) but not the epoll wait.  This program measures the
 * three, single threaded, on one epoll instance watching the read ends of
 * N pipes, level triggered (data = index of the fd).  One iteration
 * rewrites the interest of all N fds with EPOLL_CTL_MOD, alternating
 * between EPOLLIN and EPOLLIN|EPOLLOUT, then polls the set once without
 * blocking:
 *
 *   method    one iteration                                     syscalls
 *   ctl       N x epoll_ctl(MOD) + epoll_wait(timeout 0)           N + 1
 *   modwait   epoll_mod_wait(N x MOD, spec timeout {0, 0})             1
 *   uring     N x IORING_OP_EPOLL_CTL(MOD) submitted with one
 *             io_uring_submit_and_wait(N) + epoll_wait(timeout 0)      2
 *
 *            t0 (one thread; ctl / mw / uring+ew)
 *             |
 *            e0 (epoll instance)
 *          /  |  \
 *        r0  r1 ... rN-1   (pipe read ends, never readable)
 *
 * The syscall column of the report is counted as the calls are issued,
 * not assumed.  Every call is checked: a failed call, a command whose
 * error field is not 0 afterwards, a short io_uring completion or any
 * ready event is fatal (exit 1).
 *
 * Caveats; take the output as raw microbenchmark numbers:
 *
 *  - Nothing ever becomes ready (the read end of an idle pipe never
 *    reports EPOLLOUT), so every wait returns 0: this measures the
 *    interest-list updates and the cost of entering the kernel, not event
 *    delivery.  Each MOD still re-polls its file, as a real one does.
 *  - The clock read that ends a timed run (-r) is made every 16
 *    iterations and is not counted as a system call; with -i there is none
 *    inside the loop.  16 untimed warm-up iterations precede every case.
 *  - The method order is fixed (ctl, modwait, uring) for each N, on a
 *    fresh epoll instance and pipes per N.
 *  - The ratio depends on what a system call entry costs against the
 *    copies and the allocation of a batch.  Under QEMU TCG every
 *    instruction is emulated and the entry is relatively cheap, which
 *    favours the plain loop for small N (measured: results/); page-table
 *    isolation and other entry mitigations on real hardware make the
 *    entry dearer, which favours batching.  Compare methods within one
 *    run on one kernel, not absolute rates across machines.
 *  - io_uring runs the MODs inline during the submission in this
 *    uncontended case; under contention on the epoll mutex it would punt
 *    them to an io-wq worker.  It exists only on the 6.12 base: elsewhere
 *    the method is skipped with a '#' line.  Built without HAVE_LIBURING,
 *    -u only prints that line.
 *  - On a kernel without epoll_mod_wait(2) (the probe
 *    epoll_mod_wait(-1, 0, 0, NULL, NULL) does not fail with EBADF) the
 *    modwait method is skipped with "# epoll_mod_wait not available".
 *
 * Output: a run summary, one line per case as it completes, then one
 * stable line per case (skipped cases have none):
 *
 *   modwait-result: method=<ctl|modwait|uring> nfds=<N> iterations=<I>
 *     elapsed_s=<f.4> ops_per_s=<f.1> syscalls_per_iter=<f.2>
 *
 * (on one line), where ops_per_s is iterations per second.  -q prints only
 * the '#' lines and the modwait-result lines.
 *
 * Build (static, for the guests; epoll_uapi.h is generated per kernel base
 * and defines __NR_epoll_mod_wait):
 *   gcc -O2 -Wall -Wextra -static -pthread -I<gen> -Iinclude \
 *       -o modwait bench/modwait.c [-DHAVE_LIBURING ... -luring]
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

/* Generated per kernel base: __NR_epoll_mod_wait, before the wrapper. */
#include "bench_modwait.h"

#define MAX_NFDS_LIST		16
#define CLOCK_CHECK_EVERY	16
#define WARMUP_ITERS		16
#define NSEC_PER_SEC		1000000000LL

enum method {
	M_CTL,
	M_MODWAIT,
	M_URING,
	M_NR,
};

static const char * const method_name[M_NR] = {
	[M_CTL]		= "ctl",
	[M_MODWAIT]	= "modwait",
	[M_URING]	= "uring",
};

/* Options. */
static double runtime = 2.0;		/* seconds per case */
static uint64_t iterations;		/* fixed count instead, if nonzero */
static unsigned int nfds_list[MAX_NFDS_LIST] = { 1, 8, 64 };
static unsigned int nr_nfds = 3;
static bool use_uring, quiet;

/* What this kernel (and build) can run. */
static bool have_method[M_NR];

struct bench {
	int epfd;
	unsigned int nfds;
	int *rfd, *wfd;
	struct epoll_event *events;	/* wait buffer, nfds entries */
	struct epoll_event *evs;	/* per-fd MOD arguments (uring) */
	struct epoll_mod_cmd *cmds;	/* modwait */
	struct epoll_wait_spec spec;	/* modwait: timeout {0, 0} */
	uint64_t toggle;		/* so that every MOD changes the mask */
	uint64_t syscalls;		/* issued since the case started */
#ifdef HAVE_LIBURING
	struct io_uring *ring;
#endif
};

struct result {
	enum method method;
	unsigned int nfds;
	uint64_t iterations;
	double elapsed;
	uint64_t syscalls;
};

static struct result results[MAX_NFDS_LIST * M_NR];
static unsigned int nr_results;

#ifdef HAVE_LIBURING
static struct io_uring ring;
#endif

static const struct option long_options[] = {
	{ "runtime",	required_argument,	NULL, 'r' },
	{ "iterations",	required_argument,	NULL, 'i' },
	{ "nfds",	required_argument,	NULL, 'n' },
	{ "uring",	no_argument,		NULL, 'u' },
	{ "quiet",	no_argument,		NULL, 'q' },
	{ "help",	no_argument,		NULL, 'h' },
	{ NULL,		0,			NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: modwait [<options>]\n"
"\n"
"  -r, --runtime <s>      seconds per case (default 2; fractions allowed)\n"
"  -i, --iterations <n>   run <n> iterations per case instead of a runtime\n"
"  -n, --nfds <list>      comma-separated numbers of fds, 1..%d\n"
"                         (default 1,8,64)\n"
"  -u, --uring            also run the io_uring IORING_OP_EPOLL_CTL batch%s\n"
"  -q, --quiet            print only '#' lines and modwait-result lines\n"
"  -h, --help             this text\n"
"\n"
"Methods per iteration, for each N:\n"
"  ctl      N x epoll_ctl(EPOLL_CTL_MOD) + epoll_wait(timeout 0)\n"
"  modwait  one epoll_mod_wait() with N MOD commands, timeout {0, 0}\n"
"  uring    N x IORING_OP_EPOLL_CTL, io_uring_submit_and_wait(),\n"
"           then epoll_wait(timeout 0)\n"
"\n"
"Exit status: 0, also when a method is skipped; 1 on a failed call or a\n"
"bad option.\n",
		EPOLL_MOD_MAX_CMDS,
#ifdef HAVE_LIBURING
		""
#else
		"\n                         (not built in: -DHAVE_LIBURING -luring)"
#endif
		);
}

static double ts_to_s(const struct timespec *ts)
{
	return ts->tv_sec + ts->tv_nsec / (double)NSEC_PER_SEC;
}

static void parse_nfds(const char *arg)
{
	char *s = strdup(arg), *tok, *save = NULL, *end;
	unsigned long v;

	if (!s)
		err(EXIT_FAILURE, "strdup");
	nr_nfds = 0;
	for (tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		errno = 0;
		v = strtoul(tok, &end, 10);
		if (errno || end == tok || *end || v < 1 ||
		    v > EPOLL_MOD_MAX_CMDS)
			errx(EXIT_FAILURE, "-n: '%s' is not a number of fds in 1..%d",
			     tok, EPOLL_MOD_MAX_CMDS);
		if (nr_nfds == MAX_NFDS_LIST)
			errx(EXIT_FAILURE, "-n: at most %d values",
			     MAX_NFDS_LIST);
		nfds_list[nr_nfds++] = v;
	}
	if (!nr_nfds)
		errx(EXIT_FAILURE, "-n: empty list");
	free(s);
}

static void parse_options(int argc, char **argv)
{
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "r:i:n:uqh",
				long_options, NULL)) != -1) {
		switch (c) {
		case 'r':
			errno = 0;
			runtime = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(runtime > 0 && runtime <= 3600))
				errx(EXIT_FAILURE, "-r: '%s' is not a runtime in (0, 3600] s",
				     optarg);
			iterations = 0;
			break;
		case 'i':
			errno = 0;
			iterations = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || !iterations ||
			    optarg[0] == '-')
				errx(EXIT_FAILURE, "-i: '%s' is not a positive count",
				     optarg);
			break;
		case 'n':
			parse_nfds(optarg);
			break;
		case 'u':
			use_uring = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			exit(EXIT_FAILURE);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(EXIT_FAILURE);
	}
}

static bool setup_uring(unsigned int entries)
{
#ifdef HAVE_LIBURING
	struct io_uring_probe *probe;
	bool ok;
	int ret;

	ret = io_uring_queue_init(entries, &ring, 0);
	if (ret < 0) {
		printf("# io_uring not available: io_uring_queue_init: %s; skipping method=uring\n",
		       strerror(-ret));
		return false;
	}
	probe = io_uring_get_probe_ring(&ring);
	ok = probe && io_uring_opcode_supported(probe, IORING_OP_EPOLL_CTL);
	if (probe)
		io_uring_free_probe(probe);
	if (!ok) {
		printf("# io_uring has no IORING_OP_EPOLL_CTL; skipping method=uring\n");
		io_uring_queue_exit(&ring);
		return false;
	}
	return true;
#else
	(void)entries;
	printf("# io_uring support not built in (-DHAVE_LIBURING -luring); skipping method=uring\n");
	return false;
#endif
}

/* 2 fds per pipe, plus stdio, the epoll fd and the ring. */
static void raise_nofile(unsigned int max_nfds)
{
	rlim_t need = 2 * (rlim_t)max_nfds + 16;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		err(EXIT_FAILURE, "getrlimit");
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		rl.rlim_cur = need;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
			rl.rlim_max = need;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			err(EXIT_FAILURE, "setrlimit(RLIMIT_NOFILE, %llu)",
			    (unsigned long long)need);
	}
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		err(EXIT_FAILURE, "calloc");
	return p;
}

static void bench_init(struct bench *b, unsigned int nfds)
{
	struct epoll_event ev;
	unsigned int j;
	int p[2];

	memset(b, 0, sizeof(*b));
	b->nfds = nfds;
	b->rfd = xcalloc(nfds, sizeof(*b->rfd));
	b->wfd = xcalloc(nfds, sizeof(*b->wfd));
	b->events = xcalloc(nfds, sizeof(*b->events));
	b->evs = xcalloc(nfds, sizeof(*b->evs));
	b->cmds = xcalloc(nfds, sizeof(*b->cmds));

	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (b->epfd < 0)
		err(EXIT_FAILURE, "epoll_create1");
	for (j = 0; j < nfds; j++) {
		if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
			err(EXIT_FAILURE, "pipe2");
		b->rfd[j] = p[0];
		b->wfd[j] = p[1];
		ev.events = EPOLLIN;
		ev.data.u64 = j;
		if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, p[0], &ev))
			err(EXIT_FAILURE, "epoll_ctl(ADD, fd %d)", p[0]);

		b->cmds[j].flags = 0;
		b->cmds[j].op = EPOLL_CTL_MOD;
		b->cmds[j].fd = p[0];
		b->cmds[j].events = EPOLLIN;
		b->cmds[j].data = j;
		b->cmds[j].error = 1;
	}
	memset(&b->spec, 0, sizeof(b->spec));	/* relative {0, 0}: poll */
	b->spec.maxevents = nfds;
	b->spec.events = EPOLL_MOD_PTR(b->events);
	b->spec.clockid = CLOCK_MONOTONIC;
#ifdef HAVE_LIBURING
	b->ring = &ring;
#endif
}

static void bench_fini(struct bench *b)
{
	unsigned int j;

	for (j = 0; j < b->nfds; j++) {
		close(b->rfd[j]);
		close(b->wfd[j]);
	}
	close(b->epfd);
	free(b->rfd);
	free(b->wfd);
	free(b->events);
	free(b->evs);
	free(b->cmds);
}

static uint32_t next_events(struct bench *b)
{
	return (b->toggle++ & 1) ? EPOLLIN : EPOLLIN | EPOLLOUT;
}

/* The set is idle: a wait that reports anything is as wrong as a failure. */
static void check_wait(int ret, const char *what)
{
	if (ret < 0)
		err(EXIT_FAILURE, "%s", what);
	if (ret > 0)
		errx(EXIT_FAILURE, "%s: %d fds ready on an idle set", what, ret);
}

static void iter_ctl(struct bench *b)
{
	uint32_t events = next_events(b);
	struct epoll_event ev;
	unsigned int j;
	int ret;

	for (j = 0; j < b->nfds; j++) {
		ev.events = events;
		ev.data.u64 = j;
		ret = epoll_ctl(b->epfd, EPOLL_CTL_MOD, b->rfd[j], &ev);
		b->syscalls++;
		if (ret)
			err(EXIT_FAILURE, "epoll_ctl(MOD, fd %d)", b->rfd[j]);
	}
	ret = epoll_wait(b->epfd, b->events, b->nfds, 0);
	b->syscalls++;
	check_wait(ret, "epoll_wait");
}

static void iter_modwait(struct bench *b)
{
	uint32_t events = next_events(b);
	unsigned int j;
	int ret, e;

	/* 1: a sentinel the kernel overwrites in every command that runs. */
	for (j = 0; j < b->nfds; j++) {
		b->cmds[j].events = events;
		b->cmds[j].error = 1;
	}
	ret = epoll_mod_wait(b->epfd, 0, b->nfds, b->cmds, &b->spec);
	b->syscalls++;
	if (ret < 0) {
		e = errno;
		for (j = 0; j < b->nfds; j++)
			if (b->cmds[j].error < 0)
				break;
		errno = e;
		if (j < b->nfds)
			err(EXIT_FAILURE, "epoll_mod_wait: command %u (MOD, fd %d) error %d",
			    j, b->cmds[j].fd, b->cmds[j].error);
		err(EXIT_FAILURE, "epoll_mod_wait(%u commands)", b->nfds);
	}
	check_wait(ret, "epoll_mod_wait");
	for (j = 0; j < b->nfds; j++)
		if (b->cmds[j].error)
			errx(EXIT_FAILURE, "epoll_mod_wait returned 0 but command %u has error field %d",
			     j, b->cmds[j].error);
}

#ifdef HAVE_LIBURING
static void iter_uring(struct bench *b)
{
	uint32_t events = next_events(b);
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	unsigned int j, head, seen = 0;
	int ret;

	for (j = 0; j < b->nfds; j++) {
		sqe = io_uring_get_sqe(b->ring);
		if (!sqe)
			errx(EXIT_FAILURE, "io_uring_get_sqe: submission queue full");
		b->evs[j].events = events;
		b->evs[j].data.u64 = j;
		io_uring_prep_epoll_ctl(sqe, b->epfd, b->rfd[j], EPOLL_CTL_MOD,
					&b->evs[j]);
		sqe->user_data = j;
	}
	/* One io_uring_enter(): submit N, wait for N completions. */
	ret = io_uring_submit_and_wait(b->ring, b->nfds);
	b->syscalls++;
	if (ret < 0) {
		errno = -ret;
		err(EXIT_FAILURE, "io_uring_submit_and_wait(%u)", b->nfds);
	}
	if ((unsigned int)ret != b->nfds)
		errx(EXIT_FAILURE, "io_uring_submit_and_wait: %d of %u submitted",
		     ret, b->nfds);
	io_uring_for_each_cqe(b->ring, head, cqe) {
		if (cqe->res < 0) {
			errno = -cqe->res;
			err(EXIT_FAILURE, "IORING_OP_EPOLL_CTL(MOD, fd %d)",
			    cqe->user_data < b->nfds ?
			    b->rfd[cqe->user_data] : -1);
		}
		seen++;
	}
	io_uring_cq_advance(b->ring, seen);
	if (seen != b->nfds)
		errx(EXIT_FAILURE, "io_uring: %u of %u completions after the wait",
		     seen, b->nfds);

	ret = epoll_wait(b->epfd, b->events, b->nfds, 0);
	b->syscalls++;
	check_wait(ret, "epoll_wait");
}
#endif

typedef void (*iter_fn)(struct bench *b);

static const iter_fn method_iter[M_NR] = {
	[M_CTL]		= iter_ctl,
	[M_MODWAIT]	= iter_modwait,
#ifdef HAVE_LIBURING
	[M_URING]	= iter_uring,
#endif
};

static void run_case(struct bench *b, enum method m, struct result *r)
{
	const iter_fn iter = method_iter[m];
	struct timespec t0, t1, deadline;
	uint64_t i, k;

	for (i = 0; i < WARMUP_ITERS; i++)
		iter(b);
	b->syscalls = 0;

	if (clock_gettime(CLOCK_MONOTONIC, &t0))
		err(EXIT_FAILURE, "clock_gettime");
	if (iterations) {
		for (i = 0; i < iterations; i++)
			iter(b);
	} else {
		int64_t ns = (int64_t)(runtime * NSEC_PER_SEC);

		deadline.tv_sec = t0.tv_sec + ns / NSEC_PER_SEC;
		deadline.tv_nsec = t0.tv_nsec + ns % NSEC_PER_SEC;
		if (deadline.tv_nsec >= NSEC_PER_SEC) {
			deadline.tv_sec++;
			deadline.tv_nsec -= NSEC_PER_SEC;
		}
		for (i = 0;;) {
			for (k = 0; k < CLOCK_CHECK_EVERY; k++, i++)
				iter(b);
			if (clock_gettime(CLOCK_MONOTONIC, &t1))
				err(EXIT_FAILURE, "clock_gettime");
			if (t1.tv_sec > deadline.tv_sec ||
			    (t1.tv_sec == deadline.tv_sec &&
			     t1.tv_nsec >= deadline.tv_nsec))
				break;
		}
	}
	if (clock_gettime(CLOCK_MONOTONIC, &t1))
		err(EXIT_FAILURE, "clock_gettime");

	r->method = m;
	r->nfds = b->nfds;
	r->iterations = i;
	r->elapsed = ts_to_s(&t1) - ts_to_s(&t0);
	r->syscalls = b->syscalls;
}

static double ops_per_s(const struct result *r)
{
	return r->elapsed > 0 ? r->iterations / r->elapsed : 0;
}

static double syscalls_per_iter(const struct result *r)
{
	return r->iterations ? (double)r->syscalls / r->iterations : 0;
}

static void print_case(const struct result *r, const struct result *ctl)
{
	printf("[nfds %4u] %-7s: %10" PRIu64 " iterations in %.4f s, %12.1f ops/s, %7.2f syscalls/iter",
	       r->nfds, method_name[r->method], r->iterations, r->elapsed,
	       ops_per_s(r), syscalls_per_iter(r));
	if (ctl && ctl != r && ops_per_s(ctl) > 0)
		printf(" (%.2fx ctl)", ops_per_s(r) / ops_per_s(ctl));
	printf("\n");
}

static void print_summary(void)
{
	struct utsname u;
	unsigned int n;
	int m;

	if (uname(&u))
		err(EXIT_FAILURE, "uname");
	printf("Run summary [PID %d]: 1 thread, one epoll instance, EPOLL_CTL_MOD of N pipe read ends\n"
	       "  (EPOLLIN <-> EPOLLIN|EPOLLOUT) then a non-blocking wait, on %s %s %s\n"
	       "  nfds:",
	       getpid(), u.sysname, u.release, u.machine);
	for (n = 0; n < nr_nfds; n++)
		printf("%s%u", n ? "," : " ", nfds_list[n]);
	if (iterations)
		printf("; %" PRIu64 " iterations per case", iterations);
	else
		printf("; %.2f s per case", runtime);
	printf("; methods:");
	for (m = 0; m < M_NR; m++)
		if (have_method[m])
			printf(" %s", method_name[m]);
	printf("\n\n");
}

int main(int argc, char **argv)
{
	unsigned int n, max_nfds = 0, i;
	struct bench b;
	int m;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(argc, argv);

	for (n = 0; n < nr_nfds; n++)
		if (nfds_list[n] > max_nfds)
			max_nfds = nfds_list[n];
	raise_nofile(max_nfds);

	have_method[M_CTL] = true;
	have_method[M_MODWAIT] = probe_modwait("method=modwait");
	if (use_uring)
		have_method[M_URING] = setup_uring(max_nfds);

	if (!quiet)
		print_summary();

	for (n = 0; n < nr_nfds; n++) {
		const struct result *ctl = NULL;

		bench_init(&b, nfds_list[n]);
		for (m = 0; m < M_NR; m++) {
			struct result *r = &results[nr_results];

			if (!have_method[m])
				continue;
			run_case(&b, m, r);
			nr_results++;
			if (m == M_CTL)
				ctl = r;
			if (!quiet)
				print_case(r, ctl);
		}
		bench_fini(&b);
	}

#ifdef HAVE_LIBURING
	if (have_method[M_URING])
		io_uring_queue_exit(&ring);
#endif

	if (!quiet)
		printf("\n");
	for (i = 0; i < nr_results; i++) {
		const struct result *r = &results[i];

		printf("modwait-result: method=%s nfds=%u iterations=%" PRIu64
		       " elapsed_s=%.4f ops_per_s=%.1f syscalls_per_iter=%.2f\n",
		       method_name[r->method], r->nfds, r->iterations,
		       r->elapsed, ops_per_s(r), syscalls_per_iter(r));
	}
	return EXIT_SUCCESS;
}
