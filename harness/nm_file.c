/*
 * nm_file.c — whole files put in place atomically (nm_file.h).
 *
 * Why write(2) and not stdio: a short write or ENOSPC must be seen at the
 * call that caused it, with its errno, not later as a bare fclose failure.
 * Why fsync before rename: the rename must not reach the disk before the
 * bytes it names, or a crash leaves an empty file under the final name.
 */
#include "nm_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NF_TMP ".tmp."

int nm_file_write(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	size_t pl = strlen(path);
	char *tmp = malloc(pl + sizeof(NF_TMP) + 24);
	const char *p = data;
	int fd, e = 0;

	if (!tmp) {
		snprintf(err, errlen, "cannot write %s: out of memory", path);
		return -1;
	}
	snprintf(tmp, pl + sizeof(NF_TMP) + 24, "%s" NF_TMP "%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		free(tmp);
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
	if (!e && rename(tmp, path) != 0)
		e = errno;
	if (e) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
		unlink(tmp);
	}
	free(tmp);
	return e ? -1 : 0;
}

char *nm_file_read(const char *path, size_t *len)
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

/* Is name "SOMETHING.tmp.PID" with PID all digits? The PID, or 0. */
static long nf_tmp_pid(const char *name)
{
	const char *t = NULL, *s;
	char *end;
	long pid;

	for (s = strstr(name, NF_TMP); s; s = strstr(s + 1, NF_TMP))
		t = s; /* the last one */
	if (!t || t == name || !t[sizeof(NF_TMP) - 1])
		return 0;
	t += sizeof(NF_TMP) - 1;
	if (strspn(t, "0123456789") != strlen(t))
		return 0;
	errno = 0;
	pid = strtol(t, &end, 10);
	return errno || pid <= 0 ? 0 : pid;
}

int nm_file_clean(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d))) {
		long pid = nf_tmp_pid(e->d_name);
		char p[1200];
		struct stat st;

		if (!pid || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue; /* not ours, or its writer may still be running */
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p) ||
		    lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (unlink(p) == 0)
			n++;
	}
	closedir(d);
	return n;
}
