// SPDX-License-Identifier: GPL-2.0
/*
 * openloop: a tiny open-loop HTTP/1.1 client for the nginx scenario of
 * make bench (scripts/bench-nginx.sh).  Neither wrk nor ab can offer a
 * fixed rate (wrk2 is not in Debian): this starts request i at
 * start + i / RATE whatever became of the earlier ones, each on a new
 * connection ("Connection: close"), and measures its latency from that
 * scheduled time, so a stalled server shows as latency rather than as a
 * lower offered rate (no coordinated omission).
 *
 *   openloop -r RATE -d SECS [-a ADDR] [-p PORT] [-u PATH] [-t TIMEOUT_MS]
 *            [-m MAX_INFLIGHT] [-o LATENCY_FILE]
 *
 * Prints one line:
 *   openloop-result: rate=R secs=D sent=N ok=N non200=N connect_err=N
 *   reset=N timeout=N dropped=N achieved=X p50_us=N p90_us=N p99_us=N
 *   max_us=N
 * and exits 1 if any request did not get a 200.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

struct req {
	int fd;
	int sent;		/* bytes of the request written */
	int got;		/* bytes of the response kept (status line) */
	char head[16];
	uint64_t sched;		/* scheduled start, ns */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	double rate = 100, secs = 5;
	const char *addr = "127.0.0.1", *path = "/", *latfile = NULL;
	int port = 80, timeout_ms = 10000, maxinf = 1000, opt;
	long sent = 0, ok = 0, non200 = 0, cerr = 0, reset = 0, tmo = 0, dropped = 0;
	long total, nlat = 0, inflight = 0, i;
	struct sockaddr_in sa;
	struct req *reqs;
	uint64_t *lat, start, end, t;
	char request[512];
	int reqlen, ep;

	while ((opt = getopt(argc, argv, "r:d:a:p:u:t:m:o:")) != -1) {
		switch (opt) {
		case 'r': rate = atof(optarg); break;
		case 'd': secs = atof(optarg); break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'u': path = optarg; break;
		case 't': timeout_ms = atoi(optarg); break;
		case 'm': maxinf = atoi(optarg); break;
		case 'o': latfile = optarg; break;
		default:
			fprintf(stderr, "usage: %s -r RATE -d SECS [-a ADDR] [-p PORT] [-u PATH] [-t TIMEOUT_MS] [-m MAX_INFLIGHT] [-o FILE]\n", argv[0]);
			return 2;
		}
	}
	if (rate <= 0 || secs <= 0 || maxinf < 1)
		return 2;
	total = (long)(rate * secs);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "openloop: bad address %s\n", addr);
		return 2;
	}
	reqlen = snprintf(request, sizeof(request),
			  "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr);
	reqs = calloc(maxinf, sizeof(*reqs));
	lat = calloc(total + 1, sizeof(*lat));
	ep = epoll_create1(0);
	if (!reqs || !lat || ep < 0) {
		perror("openloop");
		return 2;
	}
	for (i = 0; i < maxinf; i++)
		reqs[i].fd = -1;

	start = now_ns();
	for (;;) {
		struct epoll_event evs[64];
		int n, k, wait_ms;

		t = now_ns();
		/* start every request whose time has come */
		while (sent + dropped < total &&
		       start + (uint64_t)((sent + dropped) * 1e9 / rate) <= t) {
			uint64_t sched = start + (uint64_t)((sent + dropped) * 1e9 / rate);
			struct epoll_event ev;
			struct req *r = NULL;
			int fd, one = 1;

			for (i = 0; i < maxinf; i++)
				if (reqs[i].fd < 0) {
					r = &reqs[i];
					break;
				}
			if (!r) {
				dropped++;
				continue;
			}
			sent++;
			fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0) {
				cerr++;
				continue;
			}
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
			    errno != EINPROGRESS) {
				cerr++;
				close(fd);
				continue;
			}
			r->fd = fd;
			r->sent = r->got = 0;
			r->sched = sched;
			ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
			ev.data.ptr = r;
			epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
			inflight++;
		}
		/* time out the stragglers */
		for (i = 0; i < maxinf; i++)
			if (reqs[i].fd >= 0 &&
			    t - reqs[i].sched > (uint64_t)timeout_ms * 1000000ull) {
				close(reqs[i].fd);
				reqs[i].fd = -1;
				inflight--;
				tmo++;
			}
		if (sent + dropped >= total && inflight == 0)
			break;
		wait_ms = 100;
		if (sent + dropped < total) {
			uint64_t next = start + (uint64_t)((sent + dropped) * 1e9 / rate);

			t = now_ns();
			wait_ms = next > t ? (int)((next - t + 999999) / 1000000) : 0;
		}
		n = epoll_wait(ep, evs, 64, wait_ms);
		for (k = 0; k < n; k++) {
			struct req *r = evs[k].data.ptr;
			char buf[4096];
			ssize_t m;
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			if (r->fd < 0)
				continue;
			if (r->sent < reqlen) {
				getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
				if (soerr) {
					cerr++;
					goto done;
				}
				m = write(r->fd, request + r->sent, reqlen - r->sent);
				if (m < 0 && errno != EAGAIN) {
					errno == ECONNRESET ? reset++ : cerr++;
					goto done;
				}
				if (m > 0)
					r->sent += m;
				if (r->sent == reqlen) {
					struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = r };

					epoll_ctl(ep, EPOLL_CTL_MOD, r->fd, &ev);
				}
				continue;
			}
			for (;;) {
				m = read(r->fd, buf, sizeof(buf));
				if (m > 0) {
					int c = m < (ssize_t)sizeof(r->head) - r->got ?
						(int)m : (int)sizeof(r->head) - r->got;

					memcpy(r->head + r->got, buf, c);
					r->got += c;
					continue;
				}
				break;
			}
			if (m < 0 && errno == EAGAIN)
				continue;
			if (m < 0) {
				errno == ECONNRESET ? reset++ : cerr++;
				goto done;
			}
			/* EOF: the whole response is in */
			if (r->got >= 12 && !memcmp(r->head, "HTTP/1.", 7) &&
			    !memcmp(r->head + 8, " 200", 4)) {
				ok++;
				lat[nlat++] = now_ns() - r->sched;
			} else {
				non200++;
			}
done:
			close(r->fd);
			r->fd = -1;
			inflight--;
		}
	}
	end = now_ns();
	qsort(lat, nlat, sizeof(*lat), cmp_u64);
#define PCT(p) (nlat ? lat[(long)((nlat - 1) * (p))] / 1000 : 0)
	printf("openloop-result: rate=%g secs=%g sent=%ld ok=%ld non200=%ld connect_err=%ld reset=%ld timeout=%ld dropped=%ld achieved=%.1f p50_us=%llu p90_us=%llu p99_us=%llu max_us=%llu\n",
	       rate, secs, sent, ok, non200, cerr, reset, tmo, dropped,
	       ok / ((end - start) / 1e9),
	       (unsigned long long)PCT(0.50), (unsigned long long)PCT(0.90),
	       (unsigned long long)PCT(0.99), (unsigned long long)PCT(1.0));
	if (latfile) {
		FILE *f = fopen(latfile, "w");

		for (i = 0; f && i < nlat; i++)
			fprintf(f, "%llu\n", (unsigned long long)(lat[i] / 1000));
		if (f)
			fclose(f);
	}
	return ok == total ? 0 : 1;
}
