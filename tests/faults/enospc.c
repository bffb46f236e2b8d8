/*
 * tests/faults/enospc.c — an LD_PRELOAD hook for tests/sweep/faults_sweep.sh where
 * no tmpfs can be mounted: writes to files whose path contains
 * $NANMAP_FAULT_PATH fail with ENOSPC once $NANMAP_FAULT_BYTES bytes have
 * gone to them, as on a full disk. It wraps write(2) (nm_file_write) and
 * fwrite(3) (the journal's appends; glibc's stdio flushes through an
 * internal write that a preload cannot reach).
 *   cc -shared -fPIC -o enospc.so tests/faults/enospc.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t budget_used;

/* May n more bytes go to fd? */
static int fault_allows(int fd, size_t n)
{
	const char *want = getenv("NANMAP_FAULT_PATH"), *lim = getenv("NANMAP_FAULT_BYTES");
	char link[64], path[4096];
	ssize_t len;

	if (!want || !lim || fd < 0)
		return 1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0)
		return 1;
	path[len] = '\0';
	if (!strstr(path, want))
		return 1;
	if (budget_used + n > strtoull(lim, NULL, 10))
		return 0;
	budget_used += n;
	return 1;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (!real)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (!fault_allows(fd, n)) {
		errno = ENOSPC;
		return -1;
	}
	return real(fd, buf, n);
}

size_t fwrite(const void *buf, size_t size, size_t n, FILE *f)
{
	static size_t (*real)(const void *, size_t, size_t, FILE *);

	if (!real)
		real = (size_t (*)(const void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fwrite");
	if (!fault_allows(fileno(f), size * n)) {
		errno = ENOSPC;
		return 0;
	}
	return real(buf, size, n, f);
}
