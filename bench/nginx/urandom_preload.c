// SPDX-License-Identifier: GPL-2.0
/*
 * urandom_preload.so: the nginx scenario's clients must not wait for the
 * guest's entropy pool.  ab links OpenSSL, which seeds itself at start-up
 * with getentropy(), a blocking getrandom(2); on v3.19 under QEMU (no RNG
 * device, little interrupt entropy, no jitter seeding) that blocks until
 * the pool is initialized, which can take many minutes.  A load
 * generator's randomness does not matter: this library answers
 * getentropy() and getrandom() without blocking, from getrandom with
 * GRND_NONBLOCK or, before the pool is ready, /dev/urandom (which never
 * blocks).  Only the client is run with it (scripts/guest/nginx-run).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/syscall.h>

static ssize_t fill(void *buf, size_t len, unsigned int flags)
{
	ssize_t n = syscall(SYS_getrandom, buf, len, flags | GRND_NONBLOCK);
	size_t got = 0;
	int fd;

	if (n >= 0 || (errno != EAGAIN && errno != ENOSYS))
		return n;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (got < len) {
		n = read(fd, (char *)buf + got, len - got);
		if (n <= 0) {
			close(fd);
			return got ? (ssize_t)got : -1;
		}
		got += n;
	}
	close(fd);
	return got;
}

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	return fill(buf, len, flags & ~GRND_RANDOM);
}

int getentropy(void *buf, size_t len)
{
	if (len > 256) {
		errno = EIO;
		return -1;
	}
	return fill(buf, len, 0) == (ssize_t)len ? 0 : -1;
}
