/*
 * replay.c — a main for the libFuzzer harnesses (tests/fuzz/fuzz_*.c) that
 * gives the harness each file named on the command line, or each file of a
 * directory named there, once, in name order, and says how many it gave.
 * make test links every harness with it from the plain build's objects and
 * replays the seeds (tests/fuzz/replay.sh): each harness's source list in the
 * Makefile is linked and its REQUIREs checked on every seed, without the
 * instrumented build make fuzz makes. A failing REQUIRE aborts, as under
 * libFuzzer; an unreadable file is exit status 2.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Give the harness one file; 0, or 2 with a line on stderr. */
static int replay_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		fprintf(stderr, "replay: %s: cannot open\n", path);
		return 2;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + len, 1, cap - len, fp)) > 0) {
		len += got;
		if (len == cap) {
			uint8_t *grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
	}
	int bad = !buf || ferror(fp);
	fclose(fp);
	if (bad) {
		free(buf);
		fprintf(stderr, "replay: %s: cannot read\n", path);
		return 2;
	}
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Give the harness every regular file of a directory, in name order. */
static int replay_dir(const char *dir, unsigned long *count)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: %s: cannot open\n", dir);
		return 2;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		char *path = malloc(len);
		if (n == cap) {
			char **grown = realloc(names, (cap ? cap * 2 : 64) * sizeof *names);
			if (grown) {
				names = grown;
				cap = cap ? cap * 2 : 64;
			}
		}
		if (!path || n == cap) {
			free(path);
			fprintf(stderr, "replay: %s: out of memory\n", dir);
			rc = 2;
			break;
		}
		snprintf(path, len, "%s/%s", dir, e->d_name);
		names[n++] = path;
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof *names, by_name);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
			rc = replay_file(names[i]);
			*count += rc == 0;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned long count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
			return 2;
		}
		int rc = S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) : replay_file(argv[i]);
		if (rc != 0)
			return rc;
		count += !S_ISDIR(st.st_mode);
	}
	printf("replay: %lu inputs\n", count);
	return 0;
}
