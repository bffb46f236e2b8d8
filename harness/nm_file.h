/*
 * nm_file.h — nanmap's one way to put a file in place: the bytes go to
 * "PATH.tmp.PID", every write, flush and close is checked, and only a whole
 * file is renamed over PATH, so a reader (or a rerun after a kill) sees the
 * old file or the new one, never half of one. What a killed process leaves
 * is "PATH.tmp.PID" of a dead PID, which nm_file_clean removes.
 */
#ifndef NANMAP_NM_FILE_H
#define NANMAP_NM_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Write len bytes to path through a temporary file and rename(). 0, or -1
 * with "cannot write PATH: REASON" in err (the temporary is removed). */
int nm_file_write(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* nm_file_write, unless path already holds exactly these bytes: then
 * nothing is written (a read-only folder with nothing new is no error).
 * *written (may be NULL) says which happened. */
int nm_file_update(const char *path, const void *data, size_t len, bool *written, char *err,
                   size_t errlen);

/* The whole file, NUL-terminated (malloc'd), its length in *len (may be
 * NULL); NULL when it cannot be read (errno says why). */
char *nm_file_read(const char *path, size_t *len);

/* Remove the temporaries nm_file_write left in dir ("NAME.tmp.PID" whose
 * PID is not a live process). The number removed, or -1 when dir cannot be
 * read (a missing dir is 0). */
int nm_file_clean(const char *dir);

#endif
