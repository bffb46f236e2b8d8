/*
 * check_file.c — harness/nm_file.c, nanmap's one atomic writer: a whole file
 * or nothing under the final name, no temporary left after a failure, no
 * write at all when the bytes are already there, and only a dead writer's
 * temporaries cleaned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib.h"
#include "nm_file.h"

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

Suite *suite_file(void)
{
	Suite *s = suite_create("file");
	TCase *tc = tcase_create("file");

	tcase_add_test(tc, test_write_whole);
	tcase_add_test(tc, test_update_skips_equal);
	tcase_add_test(tc, test_clean_dead_only);
	suite_add_tcase(s, tc);
	return s;
}
