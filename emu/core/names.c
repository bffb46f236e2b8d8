/* names.c — the words the CLI and the reports use for modes, classes, flags. */
#include <stdio.h>
#include <string.h>

#include "emu/core/emu.h"

static const char *const mode_names[EMU_NMODES] = {"rne", "rtz", "up", "down", "rna", "sr"};
static const char *const class_names[] = {"zero", "subnormal", "normal", "inf", "nan"};
static const char *const flag_names[] = {"invalid", "divbyzero", "overflow", "underflow",
                                         "inexact"};
/* Every word any of nanmap's inputs took before they shared this table:
 * case files took all four pairs, model specs three, plots yes and no. */
static const char *const bool_words[][2] = {
    {"no", "yes"}, {"false", "true"}, {"off", "on"}, {"0", "1"}};

const char *emu_mode_name(emu_mode m)
{
	return m < EMU_NMODES ? mode_names[m] : "?";
}

emu_mode emu_mode_by_name(const char *name)
{
	for (int i = 0; i < EMU_NMODES; i++)
		if (strcmp(mode_names[i], name) == 0)
			return (emu_mode)i;
	return EMU_NMODES;
}

int emu_bool_by_name(const char *word)
{
	for (size_t i = 0; i < sizeof(bool_words) / sizeof(bool_words[0]); i++)
		for (int v = 0; v < 2; v++)
			if (strcmp(bool_words[i][v], word) == 0)
				return v;
	return -1;
}

const char *emu_class_name(emu_class c)
{
	return c <= EMU_CLASS_NAN ? class_names[c] : "?";
}

/* In the order the issue text gives: overflow, underflow, inexact, invalid, divbyzero. */
const char *emu_flags_str(unsigned flags, char *buf, size_t len)
{
	static const int order[] = {2, 3, 4, 0, 1};
	size_t n = 0;
	if (len == 0)
		return buf;
	buf[0] = 0;
	for (size_t i = 0; i < 5; i++) {
		if (!(flags & (1u << order[i])))
			continue;
		int w = snprintf(buf + n, len - n, "%s%s", n ? "|" : "", flag_names[order[i]]);
		if (w < 0 || (size_t)w >= len - n)
			break;
		n += (size_t)w;
	}
	if (n == 0)
		snprintf(buf, len, "-");
	return buf;
}
