/*
 * check_file.c — emu/io/nm_file.c, nanmap's one atomic writer: a whole file
 * or nothing under the final name, no temporary left after a failure, no
 * write at all when the bytes are already there, and only a dead writer's
 * temporaries cleaned.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib.h"
#include "emu/io/nm_file.h"

/* A fresh directory under /tmp (removed by the caller with fl_rmdir). */
static void fl_mkdir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/nm_check_file.XXXXXX");
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
}

static void fl_rmdir(const char *dir)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static int fl_count(const char *dir)
{
	char cmd[300];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	p = popen(cmd, "r");
	ck_assert(p != NULL);
	ck_assert_int_eq(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

START_TEST(test_write_whole)
{
	char dir[64], path[128], err[256] = "";
	size_t len = 0;
	char *back;

	fl_mkdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/a.csv", dir);
	ck_assert_int_eq(nm_file_write(path, "x,y\n1,2\n", 8, err, sizeof(err)), 0);
	back = nm_file_read(path, &len);
	ck_assert(back != NULL);
	ck_assert_uint_eq(len, 8);
	ck_assert_int_eq(memcmp(back, "x,y\n1,2\n", 8), 0);
	free(back);
	ck_assert_int_eq(fl_count(dir), 1); /* no temporary left */
	/* into a directory that is not there: an error naming the file */
	snprintf(path, sizeof(path), "%s/no/a.csv", dir);
	ck_assert_int_eq(nm_file_write(path, "x", 1, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "cannot write ") && strstr(err, "/no/a.csv: "), "err: %s", err);
	ck_assert_int_eq(fl_count(dir), 1);
	fl_rmdir(dir);
}
END_TEST

/* A read with a limit: a file at the limit is read, one byte more is EFBIG,
 * and so is an endless stream (/dev/zero) once past the limit. */
START_TEST(test_read_max)
{
	char dir[64], path[128], err[256] = "", data[100];
	size_t len = 0;
	char *back;

	fl_mkdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/b.bin", dir);
	memset(data, 'a', sizeof(data));
	ck_assert_int_eq(nm_file_write(path, data, sizeof(data), err, sizeof(err)), 0);
	back = nm_file_read_max(path, 100, &len);
	ck_assert(back != NULL && len == 100 && back[100] == '\0');
	free(back);
	errno = 0;
	ck_assert(nm_file_read_max(path, 99, &len) == NULL && errno == EFBIG);
	errno = 0;
	ck_assert(nm_file_read_max("/dev/zero", 1 << 20, &len) == NULL && errno == EFBIG);
	unlink(path);
	fl_rmdir(dir);
}
END_TEST

START_TEST(test_update_skips_equal)
{
	char dir[64], path[128], err[256] = "";
	struct stat a, b;
	bool written = true;

	fl_mkdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.csv", dir);
	ck_assert_int_eq(nm_file_update(path, "abc\n", 4, &written, err, sizeof(err)), 0);
	ck_assert(written);
	ck_assert_int_eq(stat(path, &a), 0);
	/* the same bytes: not written (the rename would give a new inode) */
	ck_assert_int_eq(nm_file_update(path, "abc\n", 4, &written, err, sizeof(err)), 0);
	ck_assert(!written);
	ck_assert_int_eq(stat(path, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	/* other bytes (one more, then one changed): written */
	ck_assert_int_eq(nm_file_update(path, "abc\n\n", 5, &written, err, sizeof(err)), 0);
	ck_assert(written);
	ck_assert_int_eq(nm_file_update(path, "abd\n\n", 5, &written, err, sizeof(err)), 0);
	ck_assert(written);
	ck_assert_int_eq(stat(path, &b), 0);
	ck_assert_int_eq((int)b.st_size, 5);
	fl_rmdir(dir);
}
END_TEST

START_TEST(test_clean_dead_only)
{
	char dir[64], p[160];
	static const char *const names[] = {
	    "a.csv.tmp.4194999",  /* a dead pid (pid_max is at most 2^22): removed */
	    "a.csv.tmp.1",        /* init, alive: kept */
	    "a.csv.tmp.12ab",     /* not a pid: kept */
	    "a.tmp.csv",          /* not the pattern: kept */
	    "a.csv",              /* kept */
	};
	int removed;

	fl_mkdir(dir, sizeof(dir));
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		FILE *f;

		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		f = fopen(p, "w");
		ck_assert(f != NULL);
		fclose(f);
	}
	snprintf(p, sizeof(p), "%s/b.tmp.%ld", dir, (long)getpid()); /* ours: kept */
	{
		FILE *f = fopen(p, "w");

		ck_assert(f != NULL);
		fclose(f);
	}
	removed = nm_file_clean(dir);
	ck_assert_int_eq(removed, 1);
	snprintf(p, sizeof(p), "%s/%s", dir, names[0]);
	ck_assert_int_eq(access(p, F_OK), -1);
	for (size_t i = 1; i < ARRAY_SIZE(names); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		ck_assert_msg(access(p, F_OK) == 0, "%s was removed", names[i]);
	}
	snprintf(p, sizeof(p), "%s/missing", dir);
	ck_assert_int_eq(nm_file_clean(p), 0);
	fl_rmdir(dir);
}
END_TEST

/* The two halves: nothing under the final name until the commit, the
 * temporary gone after a commit, a failed commit or a discard. */
START_TEST(test_stage_commit_discard)
{
	char dir[64], path[128], err[256], *tmp;
	size_t n;
	char *got;

	fl_mkdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/a.golden", dir);
	ck_assert_int_eq(nm_file_stage(path, "abc", 3, &tmp, err, sizeof err), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(fl_count(dir), 1);
	ck_assert_int_eq(nm_file_commit(tmp, path, err, sizeof err), 0);
	free(tmp);
	got = nm_file_read(path, &n);
	ck_assert(got && n == 3 && !memcmp(got, "abc", 3));
	free(got);
	ck_assert_int_eq(fl_count(dir), 1);
	/* a target rename() refuses: the temporary is removed, the error names it */
	snprintf(path, sizeof(path), "%s/d", dir);
	ck_assert_int_eq(mkdir(path, 0777), 0);
	snprintf(err, sizeof err, "%s/x", path);
	ck_assert_int_eq(mkdir(err, 0777), 0);
	ck_assert_int_eq(nm_file_stage(path, "x", 1, &tmp, err, sizeof err), 0);
	ck_assert_int_eq(nm_file_commit(tmp, path, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "cannot write ") && strstr(err, "/d: "), "err: %s", err);
	ck_assert_int_eq(access(tmp, F_OK), -1);
	free(tmp);
	ck_assert_int_eq(nm_file_stage(path, "x", 1, &tmp, err, sizeof err), 0);
	nm_file_discard(tmp);
	nm_file_discard(NULL);
	nm_file_discard("");
	ck_assert_int_eq(access(tmp, F_OK), -1);
	free(tmp);
	ck_assert_int_eq(fl_count(dir), 2);
	/* a folder that is not there: nothing staged */
	snprintf(path, sizeof(path), "%s/no/a", dir);
	ck_assert_int_eq(nm_file_stage(path, "x", 1, &tmp, err, sizeof err), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(tmp);
	fl_rmdir(dir);
}
END_TEST

/* The pattern language: %p, %x, * and % escapes, the whole name. */
START_TEST(test_clean_match_pattern)
{
	char dir[64], p[160];
	static const struct {
		const char *pat, *name;
		bool removed;
	} rows[] = {
	    {".p%*1.dat.%p.%x", ".p*1.dat.4194999.aB3xYz", true},
	    {".p%*1.dat.%p.%x", ".pz1.dat.4194998.aB3xYz", false},  /* * taken to the letter */
	    {".p1.dat.%p.%x", ".p1.dat.4194997.aB3xY", false},      /* five letters */
	    {".p1.dat.%p.%x", ".p1.dat.4194996.aB3x-z", false},     /* not a letter */
	    {".p1.dat.%p.%x", ".p1.dat.4194995.aB3xYz.x", false},   /* more after */
	    {".p1.dat.%p.%x", ".p1.dat.4194999999.aB3xYz", false},  /* ten digits */
	    {"*.golden.tmp.%p", "a.b.golden.tmp.4194994", true},
	    {"*.golden.tmp.%p", ".golden.tmp.4194993", false},       /* * is one or more */
	    {"*.golden.tmp.%p", "a.golden.tmp.0", false},            /* no pid 0 */
	    {"100%%.tmp.%p", "100%.tmp.4194992", true},
	};

	fl_mkdir(dir, sizeof(dir));
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		FILE *f;

		snprintf(p, sizeof(p), "%s/%s", dir, rows[i].name);
		f = fopen(p, "w");
		ck_assert(f != NULL);
		fclose(f);
		ck_assert_int_eq(nm_file_clean_match(dir, rows[i].pat, NULL), rows[i].removed);
		ck_assert_msg((access(p, F_OK) != 0) == rows[i].removed, "%s ~ %s: %s", rows[i].name,
		              rows[i].pat, rows[i].removed ? "kept" : "removed");
		unlink(p);
	}
	fl_rmdir(dir);
}
END_TEST

Suite *suite_file(void)
{
	Suite *s = suite_create("file");
	TCase *tc = tcase_create("file");

	tcase_add_test(tc, test_write_whole);
	tcase_add_test(tc, test_read_max);
	tcase_add_test(tc, test_update_skips_equal);
	tcase_add_test(tc, test_clean_dead_only);
	tcase_add_test(tc, test_stage_commit_discard);
	tcase_add_test(tc, test_clean_match_pattern);
	suite_add_tcase(s, tc);
	return s;
}
