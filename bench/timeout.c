// SPDX-License-Identifier: GPL-2.0
/*
 * timeout - how long a timed epoll wait really sleeps.
 *
 * epoll_wait(2) takes its timeout in milliseconds: a 50 us deadline has to
 * be asked for as 1 ms.  epoll_pwait2(2) (Linux 5.11) and epoll_mod_wait(2)
 * take a timespec; epoll_mod_wait() also lets the caller pick the clock.
 * This program asks each of them, on an idle epoll instance, for a set of
 * intervals and measures with CLOCK_MONOTONIC how long the call took:
 *
 *   call            clock       timeout passed for a request of R us
 *   epoll_wait      monotonic   ceil(R / 1000) ms, at least 1
 *   epoll_pwait2    monotonic   R us
 *   epoll_mod_wait  monotonic   R us, spec: maxevents 1, no commands
 *   epoll_mod_wait  realtime    R us
 *   epoll_mod_wait  boottime    R us
 *
 * For each (call, clock, request) it takes K samples one after the other
 * (after one discarded warm-up call) and reports the overshoot, actual
 * minus requested, in microseconds: median, 99th percentile (nearest
 * rank), minimum and maximum.  The request is always R as given, also for
 * epoll_wait: its overshoot includes the rounding up to whole
 * milliseconds, which is the point of the comparison.
 *
 * Every call must return 0 (timeout, nothing ready); anything else is
 * fatal (exit 1).  A sample shorter than its request is reported on a
 * '# warning' line: none of these calls may time out early.
 *
 * Caveats:
 *
 *  - The overshoot includes the slack that all three calls allow, as
 *    select() does: the larger of the thread's timer slack (50 us by
 *    default; see PR_SET_TIMERSLACK in prctl(2) and -S) and 0.1% of the
 *    timeout (for a task of nice 0; none for a real-time task), plus the
 *    clock's granularity, the wake-up and the return to user space.  The
 *    run summary shows the timer slack in effect.
 *  - The realtime case measures with CLOCK_MONOTONIC a wait armed on
 *    CLOCK_REALTIME; nothing here sets the clock, so the two agree unless
 *    something else (NTP) steps or slews it during the run.
 *  - Under QEMU TCG every wake-up is slow and noisy: compare the calls
 *    within one run on one kernel rather than absolute numbers.
 *  - epoll_pwait2() is called by number (441 on x86_64 and i386); it exists
 *    on the 6.12 base only, and on v3.19 (ENOSYS) it is skipped with a '#'
 *    line.  On a kernel without epoll_mod_wait(2) (the probe
 *    epoll_mod_wait(-1, 0, 0, NULL, NULL) does not fail with EBADF) its
 *    three cases are skipped with "# epoll_mod_wait not available".
 *  - A run sleeps for about K x (sum of the requests) per case: with the
 *    defaults, some 2.5 s per case, 13 s in all.  -k 20 is a quick run.
 *
 * Output: a run summary, one line per case as it completes, then one
 * stable line per case (skipped cases have none):
 *
 *   timeout-result: call=<epoll_wait|epoll_pwait2|epoll_mod_wait>
 *     clock=<monotonic|realtime|boottime> request_us=<R> samples=<K>
 *     median_over_us=<f.1> p99_over_us=<f.1> min_us=<f.1> max_us=<f.1>
 *
 * (on one line); min_us and max_us are the smallest and largest overshoot,
 * like the two before them.  -q prints only the '#' lines and the
 * timeout-result lines.
 *
 * Build (static, 64-bit or -m32; epoll_uapi.h is generated per kernel base
 * and defines __NR_epoll_mod_wait):
 *   gcc -O2 -Wall -Wextra -static -pthread -I<gen> -Iinclude \
 *       -o timeout bench/timeout.c
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

/* Generated per kernel base: __NR_epoll_mod_wait, before the wrapper. */
#include "bench_modwait.h"

/* Linux 5.11; the same number on x86_64 and i386. */
#ifndef __NR_epoll_pwait2
#define __NR_epoll_pwait2	441
#endif

#define MAX_REQUESTS		16
#define MAX_REQUEST_US		60000000UL	/* 60 s */
#define MAX_SAMPLES		1000000UL
#define NSEC_PER_SEC		1000000000LL
#define NSEC_PER_USEC		1000LL

enum call {
	C_EPOLL_WAIT,
	C_EPOLL_PWAIT2,
	C_EPOLL_MOD_WAIT,
};

struct tcase {
	enum call call;
	clockid_t clock;
	const char *call_name;
	const char *clock_name;
};

static const struct tcase cases[] = {
	{ C_EPOLL_WAIT,     CLOCK_MONOTONIC, "epoll_wait",     "monotonic" },
	{ C_EPOLL_PWAIT2,   CLOCK_MONOTONIC, "epoll_pwait2",   "monotonic" },
	{ C_EPOLL_MOD_WAIT, CLOCK_MONOTONIC, "epoll_mod_wait", "monotonic" },
	{ C_EPOLL_MOD_WAIT, CLOCK_REALTIME,  "epoll_mod_wait", "realtime" },
	{ C_EPOLL_MOD_WAIT, CLOCK_BOOTTIME,  "epoll_mod_wait", "boottime" },
};
#define NR_CASES	(sizeof(cases) / sizeof(cases[0]))

/* The kernel's struct __kernel_timespec, 64-bit on every ABI. */
struct kernel_timespec64 {
	int64_t tv_sec;
	int64_t tv_nsec;
};

/* Options. */
static unsigned long requests[MAX_REQUESTS] = { 50, 100, 1000, 10000 };
static unsigned int nr_requests = 4;
static unsigned long nsamples = 200;
static unsigned long slack_ns;		/* 0: leave the timer slack alone */
static bool quiet;

static bool have_pwait2, have_modwait;

struct result {
	const struct tcase *c;
	unsigned long request_us;
	unsigned long samples;
	unsigned long early;
	double median_us, p99_us, min_us, max_us;
};

static struct result results[NR_CASES * MAX_REQUESTS];
static unsigned int nr_results;

static const struct option long_options[] = {
	{ "requests",	required_argument,	NULL, 'r' },
	{ "samples",	required_argument,	NULL, 'k' },
	{ "slack",	required_argument,	NULL, 'S' },
	{ "quiet",	no_argument,		NULL, 'q' },
	{ "help",	no_argument,		NULL, 'h' },
	{ NULL,		0,			NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: timeout [<options>]\n"
"\n"
"  -r, --requests <list>  comma-separated requested timeouts in us,\n"
"                         1..%lu (default 50,100,1000,10000)\n"
"  -k, --samples <k>      samples per call, clock and request (default 200)\n"
"  -S, --slack <ns>       set the timer slack first (PR_SET_TIMERSLACK, >= 1)\n"
"  -q, --quiet            print only '#' lines and timeout-result lines\n"
"  -h, --help             this text\n"
"\n"
"Calls: epoll_wait (timeout rounded up to whole ms), epoll_pwait2, and\n"
"epoll_mod_wait on CLOCK_MONOTONIC, CLOCK_REALTIME and CLOCK_BOOTTIME, all\n"
"on an idle epoll instance.  Overshoot = actual - requested, measured with\n"
"CLOCK_MONOTONIC.\n"
"\n"
"Exit status: 0, also when a call is skipped; 1 on a failed call or a bad\n"
"option.\n",
		MAX_REQUEST_US);
}

static unsigned long parse_ulong(const char *s, const char *opt,
				 unsigned long min, unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		errx(EXIT_FAILURE, "%s: '%s' is not a number in %lu..%lu",
		     opt, s, min, max);
	return v;
}

static void parse_requests(const char *arg)
{
	char *s = strdup(arg), *tok, *save = NULL;

	if (!s)
		err(EXIT_FAILURE, "strdup");
	nr_requests = 0;
	for (tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (nr_requests == MAX_REQUESTS)
			errx(EXIT_FAILURE, "-r: at most %d values", MAX_REQUESTS);
		requests[nr_requests++] = parse_ulong(tok, "-r", 1,
						      MAX_REQUEST_US);
	}
	if (!nr_requests)
		errx(EXIT_FAILURE, "-r: empty list");
	free(s);
}

static void parse_options(int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "r:k:S:qh",
				long_options, NULL)) != -1) {
		switch (c) {
		case 'r':
			parse_requests(optarg);
			break;
		case 'k':
			nsamples = parse_ulong(optarg, "-k", 1, MAX_SAMPLES);
			break;
		case 'S':
			slack_ns = parse_ulong(optarg, "-S", 1, NSEC_PER_SEC);
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

static long sys_epoll_pwait2(int epfd, struct epoll_event *events,
			     int maxevents,
			     const struct kernel_timespec64 *timeout)
{
	return syscall(__NR_epoll_pwait2, epfd, events, maxevents, timeout,
		       NULL, 0);
}

/* A zero timeout on the idle set: 0 if the call exists. */
static bool probe_pwait2(int epfd)
{
	struct kernel_timespec64 ts = { 0, 0 };
	struct epoll_event ev;
	long ret;

	ret = sys_epoll_pwait2(epfd, &ev, 1, &ts);
	if (ret == 0)
		return true;
	if (ret < 0 && errno == ENOSYS) {
		printf("# epoll_pwait2 not available (syscall %d: %s); skipping call=epoll_pwait2\n",
		       (int)__NR_epoll_pwait2, strerror(errno));
		return false;
	}
	if (ret < 0)
		err(EXIT_FAILURE, "epoll_pwait2 probe");
	errx(EXIT_FAILURE, "epoll_pwait2 probe: %ld fds ready on an idle set",
	     ret);
}

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * NSEC_PER_SEC + ts->tv_nsec;
}

/* Everything a call needs, prepared before the clock starts. */
struct waiter {
	const struct tcase *c;
	int epfd;
	struct epoll_event ev;
	int timeout_ms;				/* epoll_wait */
	struct kernel_timespec64 ts;		/* epoll_pwait2 */
	struct epoll_wait_spec spec;		/* epoll_mod_wait */
};

static void waiter_init(struct waiter *w, const struct tcase *c, int epfd,
			unsigned long req_us)
{
	memset(w, 0, sizeof(*w));
	w->c = c;
	w->epfd = epfd;
	w->timeout_ms = (req_us + 999) / 1000;
	if (w->timeout_ms < 1)
		w->timeout_ms = 1;
	w->ts.tv_sec = req_us / 1000000;
	w->ts.tv_nsec = (req_us % 1000000) * NSEC_PER_USEC;
	w->spec.maxevents = 1;
	w->spec.events = EPOLL_MOD_PTR(&w->ev);
	w->spec.clockid = c->clock;
	w->spec.timeout.tv_sec = w->ts.tv_sec;
	w->spec.timeout.tv_nsec = w->ts.tv_nsec;
}

/* One timed call; returns how long it took, in ns. */
static int64_t one_wait(struct waiter *w)
{
	struct timespec t0, t1;
	long ret = -1;

	if (clock_gettime(CLOCK_MONOTONIC, &t0))
		err(EXIT_FAILURE, "clock_gettime");
	switch (w->c->call) {
	case C_EPOLL_WAIT:
		ret = epoll_wait(w->epfd, &w->ev, 1, w->timeout_ms);
		break;
	case C_EPOLL_PWAIT2:
		ret = sys_epoll_pwait2(w->epfd, &w->ev, 1, &w->ts);
		break;
	case C_EPOLL_MOD_WAIT:
		ret = epoll_mod_wait(w->epfd, 0, 0, NULL, &w->spec);
		break;
	}
	if (clock_gettime(CLOCK_MONOTONIC, &t1))
		err(EXIT_FAILURE, "clock_gettime");

	if (ret < 0)
		err(EXIT_FAILURE, "%s(clock %s)", w->c->call_name,
		    w->c->clock_name);
	if (ret > 0)
		errx(EXIT_FAILURE, "%s(clock %s): %ld fds ready on an idle set",
		     w->c->call_name, w->c->clock_name, ret);
	return ts_ns(&t1) - ts_ns(&t0);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void run_case(const struct tcase *c, int epfd, unsigned long req_us,
		     int64_t *over, struct result *r)
{
	int64_t req_ns = (int64_t)req_us * NSEC_PER_USEC, med;
	unsigned long i, early = 0, k = nsamples, p99;
	struct waiter w;

	waiter_init(&w, c, epfd, req_us);
	one_wait(&w);		/* warm-up, discarded */
	for (i = 0; i < k; i++) {
		over[i] = one_wait(&w) - req_ns;
		if (over[i] < 0)
			early++;
	}
	qsort(over, k, sizeof(*over), cmp_i64);

	/* Median: the middle sample, or the mean of the middle two. */
	if (k & 1)
		med = over[k / 2];
	else
		med = (over[k / 2 - 1] + over[k / 2]) / 2;
	/* 99th percentile, nearest rank: the ceil(0.99 k)-th sample. */
	p99 = (99 * k + 99) / 100;

	r->c = c;
	r->request_us = req_us;
	r->samples = k;
	r->early = early;
	r->median_us = med / 1000.0;
	r->p99_us = over[p99 - 1] / 1000.0;
	r->min_us = over[0] / 1000.0;
	r->max_us = over[k - 1] / 1000.0;
}

static bool case_available(const struct tcase *c)
{
	switch (c->call) {
	case C_EPOLL_PWAIT2:
		return have_pwait2;
	case C_EPOLL_MOD_WAIT:
		return have_modwait;
	default:
		return true;
	}
}

static void print_summary(void)
{
	unsigned int i, n = 0;
	double total_s = 0;
	struct utsname u;
	int slack;

	if (uname(&u))
		err(EXIT_FAILURE, "uname");
	slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);

	for (i = 0; i < NR_CASES; i++) {
		unsigned int j;

		if (!case_available(&cases[i]))
			continue;
		n++;
		for (j = 0; j < nr_requests; j++) {
			unsigned long us = requests[j];

			if (cases[i].call == C_EPOLL_WAIT)
				us = (us + 999) / 1000 * 1000;
			total_s += (nsamples + 1) * us / 1e6;
		}
	}

	printf("Run summary [PID %d]: idle epoll instance, %lu samples per case, on %s %s %s\n"
	       "  requests (us):",
	       getpid(), nsamples, u.sysname, u.release, u.machine);
	for (i = 0; i < nr_requests; i++)
		printf("%s%lu", i ? "," : " ", requests[i]);
	printf("; timer slack: ");
	if (slack < 0)
		printf("unknown (%s)", strerror(errno));
	else
		printf("%d ns", slack);
	printf("; %u calls/clocks, at least %.1f s of waiting\n\n",
	       n, total_s);
}

static void print_case(const struct result *r)
{
	printf("[%-14s %-9s] request %8lu us: overshoot median %+10.1f us, p99 %+10.1f us, min %+10.1f us, max %+10.1f us\n",
	       r->c->call_name, r->c->clock_name, r->request_us,
	       r->median_us, r->p99_us, r->min_us, r->max_us);
}

int main(int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int i, j;
	int64_t *over;
	int epfd, p[2];

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(argc, argv);

	if (slack_ns && prctl(PR_SET_TIMERSLACK, slack_ns, 0, 0, 0))
		err(EXIT_FAILURE, "prctl(PR_SET_TIMERSLACK, %lu)", slack_ns);

	/* Idle: the read end of a pipe nobody writes to. */
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		err(EXIT_FAILURE, "epoll_create1");
	if (pipe2(p, O_CLOEXEC))
		err(EXIT_FAILURE, "pipe2");
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, p[0], &ev))
		err(EXIT_FAILURE, "epoll_ctl(ADD)");

	have_pwait2 = probe_pwait2(epfd);
	have_modwait = probe_modwait("call=epoll_mod_wait");

	over = calloc(nsamples, sizeof(*over));
	if (!over)
		err(EXIT_FAILURE, "calloc");

	if (!quiet)
		print_summary();

	for (i = 0; i < NR_CASES; i++) {
		if (!case_available(&cases[i]))
			continue;
		for (j = 0; j < nr_requests; j++) {
			struct result *r = &results[nr_results++];

			run_case(&cases[i], epfd, requests[j], over, r);
			if (!quiet)
				print_case(r);
			if (r->early)
				printf("# warning: call=%s clock=%s request_us=%lu: %lu of %lu samples returned before the request\n",
				       r->c->call_name, r->c->clock_name,
				       r->request_us, r->early, r->samples);
		}
	}

	if (!quiet)
		printf("\n");
	for (i = 0; i < nr_results; i++) {
		const struct result *r = &results[i];

		printf("timeout-result: call=%s clock=%s request_us=%lu samples=%lu median_over_us=%.1f p99_over_us=%.1f min_us=%.1f max_us=%.1f\n",
		       r->c->call_name, r->c->clock_name, r->request_us,
		       r->samples, r->median_us, r->p99_us, r->min_us,
		       r->max_us);
	}

	free(over);
	close(p[0]);
	close(p[1]);
	close(epfd);
	return EXIT_SUCCESS;
}
