/*
 * nm_file.c — whole files put in place atomically (nm_file.h).
 *
 * Why write(2) and not stdio: a short write or ENOSPC must be seen at the
 * call that caused it, with its errno, not later as a bare fclose failure.
 * Why fsync before rename: the rename must not reach the disk before the
 * bytes it names, or a crash leaves an empty file under the final name.
 */
#include "emu/io/nm_file.h"

#include <dirent.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

double nm_memory_available(void)
{
	const char *env = getenv("NANMAP_MEMORY");
	FILE *f;
	char line[128], *end;
	double kb = -1;

	if (env && *env) {
		unsigned long long b;
		errno = 0;
		b = strtoull(env, &end, 10);
		if (!*end && !errno && env[0] != '-')
			return (double)b;
	}
	f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (kb >= 0)
		return kb * 1024;
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? (double)pages * (double)size : -1;
}

const char *nm_fmt_bytes(double b, char *buf, size_t len)
{
	if (b >= 10e9)
		snprintf(buf, len, "%.0f GB", b / 1e9);
	else if (b >= 1e9)
		snprintf(buf, len, "%.1f GB", b / 1e9);
	else if (b >= 1e6)
		snprintf(buf, len, "%.0f MB", b / 1e6);
	else
		snprintf(buf, len, "%.0f bytes", b);
	return buf;
}

#define NF_TMP ".tmp."

int nm_file_stage(const char *path, const void *data, size_t len, char **tmp, char *err,
                  size_t errlen)
{
	size_t pl = strlen(path);
	char *t = malloc(pl + sizeof(NF_TMP) + 24);
	const char *p = data;
	int fd, e = 0;

	*tmp = NULL;
	if (!t) {
		snprintf(err, errlen, "cannot write %s: out of memory", path);
		errno = ENOMEM;
		return -1;
	}
	snprintf(t, pl + sizeof(NF_TMP) + 24, "%s" NF_TMP "%ld", path, (long)getpid());
	fd = open(t, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
		free(t);
		errno = e;
		return -1;
	}
	while (len > 0 && !e) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			e = w < 0 ? errno : EIO;
		else
			p += w, len -= (size_t)w;
	}
	if (!e && fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
		e = errno;
	if (close(fd) != 0 && !e)
		e = errno;
	if (e) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
		unlink(t);
		free(t);
		errno = e;
		return -1;
	}
	*tmp = t;
	return 0;
}

int nm_file_commit(const char *tmp, const char *path, char *err, size_t errlen)
{
	int e;

	if (rename(tmp, path) == 0)
		return 0;
	e = errno;
	snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
	unlink(tmp);
	errno = e;
	return -1;
}

void nm_file_discard(const char *tmp)
{
	if (tmp && *tmp) {
		int e = errno;

		unlink(tmp);
		errno = e; /* the cause of the failure that discards it stays */
	}
}

int nm_file_write(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	char *tmp;
	int rc = nm_file_stage(path, data, len, &tmp, err, errlen);

	if (rc == 0) {
		rc = nm_file_commit(tmp, path, err, errlen);
		free(tmp);
	}
	return rc;
}

char *nm_file_read(const char *path, size_t *len)
{
	return nm_file_read_max(path, SIZE_MAX - 1, len);
}

char *nm_file_read_max(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (cap - n < 4096) {
			char *nb = realloc(b, cap ? cap * 2 : 8192);
			if (!nb) {
				free(b);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			b = nb;
			cap = cap ? cap * 2 : 8192;
		}
		size_t got = fread(b + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
		if (n > max) {
			fclose(f);
			free(b);
			errno = EFBIG;
			return NULL;
		}
	}
	if (ferror(f)) {
		int e = errno;

		fclose(f);
		free(b);
		errno = e ? e : EIO;
		return NULL;
	}
	fclose(f);
	b[n] = '\0';
	if (len)
		*len = n;
	return b;
}

int nm_file_update(const char *path, const void *data, size_t len, bool *written, char *err,
                   size_t errlen)
{
	size_t have;
	char *old = nm_file_read(path, &have);
	bool same = old && have == len && !memcmp(old, data, len);

	free(old);
	if (written)
		*written = !same;
	return same ? 0 : nm_file_write(path, data, len, err, errlen);
}

/* Does name match pattern (nm_file_clean_match's language)? Then *pid is
 * its "%p" (0 when the pattern has none). */
static bool nf_match(const char *pat, const char *name, long *pid)
{
	for (;;) {
		if (!*pat)
			return !*name;
		if (*pat == '*') {
			/* one or more bytes: try every length, longest last */
			for (const char *s = name + 1; s <= name + strlen(name); s++)
				if (*name && nf_match(pat + 1, s, pid))
					return true;
			return false;
		}
		if (pat[0] == '%' && pat[1] == 'p') {
			size_t d = strspn(name, "0123456789");
			long v = 0;

			if (d == 0 || d > 9)
				return false;
			for (size_t i = 0; i < d; i++)
				v = v * 10 + (name[i] - '0');
			if (v <= 0)
				return false;
			*pid = v;
			pat += 2, name += d;
			continue;
		}
		if (pat[0] == '%' && pat[1] == 'x') {
			for (int i = 0; i < 6; i++)
				if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'z') ||
				      (name[i] >= 'A' && name[i] <= 'Z')))
					return false;
			pat += 2, name += 6;
			continue;
		}
		if (pat[0] == '%' && pat[1])
			pat++;
		if (*pat != *name)
			return false;
		pat++, name++;
	}
}

int nm_file_clean_match(const char *dir, const char *pattern, const char *report)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d))) {
		long pid = 0;
		char p[1200];
		struct stat st;

		if (!nf_match(pattern, e->d_name, &pid) || !pid || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue; /* not ours, or its writer may still be running */
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p) ||
		    lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (unlink(p) == 0) {
			n++;
			if (report)
				fprintf(stderr, "nanmap: removed %s, %s\n", p, report);
		}
	}
	closedir(d);
	return n;
}

int nm_file_clean(const char *dir)
{
	return nm_file_clean_match(dir, NM_FILE_TMP_PATTERN, NULL);
}

void nm_heap_keep(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
}
