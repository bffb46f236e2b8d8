/*
 * check_buf.c — emu/io/nm_buf.c, the one growable string: appends of every
 * kind give the bytes a single printf would, growth keeps them, a failed
 * allocation leaves the text intact and stops later appends, and CSV fields
 * are quoted exactly when RFC 4180 needs it. Also emu_bool_by_name, the one
 * vocabulary of yes and no that case files, model specs and plots share.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/lib.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_parse.h"

START_TEST(test_appends)
{
	nm_buf b = {0};

	ck_assert_str_eq(nm_buf_str(&b), "");
	ck_assert(b.s == NULL);
	ck_assert(nm_buf_put(&b, "ab"));
	ck_assert(nm_buf_putc(&b, 'c'));
	ck_assert(nm_buf_printf(&b, "%d-%s", 42, "x"));
	ck_assert(nm_buf_putn(&b, "yz!", 2));
	ck_assert_str_eq(b.s, "abc42-xyz");
	ck_assert_uint_eq(b.len, 9);
	/* an empty printf still makes a string */
	nm_buf_free(&b);
	ck_assert(nm_buf_printf(&b, "%s", ""));
	ck_assert(b.s != NULL);
	ck_assert_str_eq(b.s, "");
	/* bytes with a NUL among them keep their length */
	ck_assert(nm_buf_putn(&b, "a\0b", 3));
	ck_assert_uint_eq(b.len, 3);
	ck_assert_int_eq(memcmp(b.s, "a\0b", 4), 0);
	nm_buf_free(&b);
	ck_assert(b.s == NULL && b.len == 0 && b.cap == 0 && !b.oom);
}
END_TEST

/* Many appends of every length across the growth steps: the text is what
 * one buffer written by snprintf holds. */
START_TEST(test_growth)
{
	static char want[200000];
	nm_buf b = {0};
	size_t n = 0;

	for (int i = 0; n < sizeof(want) - 1000; i++) {
		int len = i % 700; /* also longer than any room left */
		n += (size_t)snprintf(want + n, sizeof(want) - n, "%d:%*s|", i, len, "");
		ck_assert(nm_buf_printf(&b, "%d:%*s|", i, len, ""));
		ck_assert_uint_eq(b.len, n);
		ck_assert_msg(b.cap > b.len, "row %d: cap %zu, len %zu", i, b.cap, b.len);
	}
	ck_assert_int_eq(memcmp(b.s, want, n + 1), 0);
	nm_buf_free(&b);
}
END_TEST

/* A size that cannot be had sets oom; the text stays; every later append
 * does nothing; reset makes the buffer usable again. */
START_TEST(test_oom)
{
	nm_buf b = {0};

	ck_assert(nm_buf_put(&b, "kept"));
	ck_assert(!nm_buf_reserve(&b, SIZE_MAX - 2));
	ck_assert(b.oom);
	ck_assert_str_eq(b.s, "kept");
	ck_assert(!nm_buf_put(&b, "more"));
	ck_assert(!nm_buf_putc(&b, 'x'));
	ck_assert(!nm_buf_printf(&b, "%d", 1));
	ck_assert(!nm_buf_csv(&b, "a,b"));
	ck_assert_str_eq(b.s, "kept");
	ck_assert_uint_eq(b.len, 4);
	nm_buf_reset(&b);
	ck_assert(!b.oom && b.len == 0);
	ck_assert_str_eq(b.s, "");
	ck_assert(nm_buf_put(&b, "again"));
	ck_assert_str_eq(b.s, "again");
	nm_buf_free(&b);
}
END_TEST

START_TEST(test_csv)
{
	static const struct {
		const char *in, *out;
	} rows[] = {
	    {"", ""},
	    {"fp16", "fp16"},
	    {"a b;c", "a b;c"},
	    {"p=4,emax=8", "\"p=4,emax=8\""},
	    {"say \"hi\"", "\"say \"\"hi\"\"\""},
	    {"\"", "\"\"\"\""},
	    /* control bytes shown, never written: a tensor named "w\e[2J" cleared
	     * the screen of whoever read the CSV; a record stays one line */
	    {"two\nlines", "two\\x0alines"},
	    {"cr\r", "cr\\x0d"},
	    {"w\x1b[2J", "w\\x1b[2J"},
	    {"a,\x7f", "\"a,\\x7f\""},
	    {"caf\xc3\xa9", "caf\xc3\xa9"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		nm_buf b = {0};

		ck_assert(nm_buf_put(&b, "<"));
		ck_assert(nm_buf_csv(&b, rows[i].in));
		ck_assert_msg(strcmp(b.s + 1, rows[i].out) == 0,
		              "row %zu: '%s' gave '%s', want '%s'", i, rows[i].in, b.s + 1,
		              rows[i].out);
		nm_buf_free(&b);
	}
}
END_TEST

static size_t t_fail_line(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static size_t t_fail_line(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = nm_fail_format(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

/* nm_shown and the error line: control bytes as \xNN, cut whole */
START_TEST(test_shown)
{
	char buf[16], line[64];

	ck_assert_str_eq(nm_shown("a\x1b[2Jb\n", buf, sizeof buf), "a\\x1b[2Jb\\x0a");
	ck_assert_str_eq(nm_shown("\t\t\t\t", buf, 10), "\\x09\\x09"); /* no half escape */
	ck_assert_str_eq(nm_shown("caf\xc3\xa9", buf, sizeof buf), "caf\xc3\xa9");
	ck_assert_uint_eq(t_fail_line(line, sizeof line, "bad value '%s'", "x\x1b[2J\ny"), 34);
	ck_assert_str_eq(line, "nanmap: bad value 'x\\x1b[2J\\x0ay'\n");
	t_count("buf: control bytes shown as \\xNN", 4);
}
END_TEST

/* Every word any input took before the vocabulary was shared, and some it
 * does not take (case, blanks, prefixes). */
START_TEST(test_bool_words)
{
	static const struct {
		const char *word;
		int want;
	} rows[] = {
	    {"yes", 1}, {"true", 1},  {"on", 1},      {"1", 1},    {"no", 0},    {"false", 0},
	    {"off", 0}, {"0", 0},     {"", -1},       {"Yes", -1}, {"TRUE", -1}, {" yes", -1},
	    {"y", -1},  {"n", -1},    {"2", -1},      {"01", -1},  {"auto", -1}, {"yes ", -1},
	    {"of", -1}, {"none", -1}, {"enable", -1},
	};

	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		ck_assert_msg(emu_bool_by_name(rows[i].word) == rows[i].want,
		              "row %zu: '%s' gave %d, want %d", i, rows[i].word,
		              emu_bool_by_name(rows[i].word), rows[i].want);
}
END_TEST

/* JSON strings and numbers: the one writer the commands' --json share */
START_TEST(test_json)
{
	nm_buf b = {0};
	ck_assert(nm_buf_json_str(&b, "a\"b\\c\n\x01\x7f\xc3\xa9"));
	ck_assert_str_eq(nm_buf_str(&b), "\"a\\\"b\\\\c\\u000a\\u0001\\u007f\xc3\xa9\"");
	nm_buf_reset(&b);
	/* a .safetensors header's names: DEL as it is, as the reference writes it */
	ck_assert(nm_buf_json_str_min(&b, "a\"b\\c\n\x01\x7f\xc3\xa9"));
	ck_assert_str_eq(nm_buf_str(&b), "\"a\\\"b\\\\c\\u000a\\u0001\x7f\xc3\xa9\"");
	nm_buf_reset(&b);
	ck_assert(nm_buf_json_num(&b, 0.1));
	nm_buf_putc(&b, ' ');
	ck_assert(nm_buf_json_num(&b, -INFINITY));
	nm_buf_putc(&b, ' ');
	ck_assert(nm_buf_json_num(&b, NAN));
	ck_assert_str_eq(nm_buf_str(&b), "0.10000000000000001 \"-inf\" \"nan\"");
	nm_buf_free(&b);
}
END_TEST

Suite *suite_buf(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("buf");

	tcase_add_test(tc, test_appends);
	tcase_add_test(tc, test_growth);
	tcase_add_test(tc, test_oom);
	tcase_add_test(tc, test_csv);
	tcase_add_test(tc, test_shown);
	tcase_add_test(tc, test_bool_words);
	tcase_add_test(tc, test_json);
	suite_add_tcase(s, tc);
	return s;
}
