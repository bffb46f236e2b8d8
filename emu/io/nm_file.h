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
 * with "cannot write PATH: REASON" in err and errno set to the cause (the
 * temporary is removed). nm_file_stage then nm_file_commit. */
int nm_file_write(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* The first half of nm_file_write, for files that are put in place as a
 * set (all written and checked before any is renamed): the bytes written,
 * synced and closed as "PATH.tmp.PID", its name (malloc'd) in *tmp. 0, or
 * -1 with err and errno as nm_file_write's and *tmp NULL (nothing left). */
int nm_file_stage(const char *path, const void *data, size_t len, char **tmp, char *err,
                  size_t errlen);

/* rename(tmp, path): 0, or -1 with "cannot write PATH: REASON" in err and
 * errno set, and tmp removed. tmp may be any whole file (one gnuplot wrote
 * too); it is not freed. */
int nm_file_commit(const char *tmp, const char *path, char *err, size_t errlen);

/* Remove a temporary that is not to be committed; NULL or "" is nothing. */
void nm_file_discard(const char *tmp);

/* nm_file_write, unless path already holds exactly these bytes: then
 * nothing is written (a read-only folder with nothing new is no error).
 * *written (may be NULL) says which happened. */
int nm_file_update(const char *path, const void *data, size_t len, bool *written, char *err,
                   size_t errlen);

/* The whole file, NUL-terminated (malloc'd), its length in *len (may be
 * NULL); NULL when it cannot be read (errno says why). */
char *nm_file_read(const char *path, size_t *len);
/* The same, reading at most max bytes: a longer file (or an endless stream,
 * /dev/zero) is NULL with errno EFBIG once max + 1 bytes have been read. */
char *nm_file_read_max(const char *path, size_t max, size_t *len);

/* The names nm_file_stage gives its temporaries, as an nm_file_clean_match
 * pattern. */
#define NM_FILE_TMP_PATTERN "*.tmp.%p"

/* Remove the regular files in dir whose names match pattern and whose PID
 * is not a live process: what a killed writer left. In pattern "%p" is the
 * PID (1 to 9 digits), "%x" six letters or digits (mkstemp's), "*" one or
 * more of any byte, "%" before any other byte that byte; the rest stands
 * for itself and the whole name must match. With report, each removal is
 * said on stderr as "nanmap: removed PATH, REPORT". The number removed, or
 * -1 when dir cannot be read (a missing dir is 0). */
int nm_file_clean_match(const char *dir, const char *pattern, const char *report);

/* nm_file_clean_match(dir, NM_FILE_TMP_PATTERN, NULL). */
int nm_file_clean(const char *dir);

/* The memory this process may take, in bytes: MemAvailable, else the
 * physical memory; NANMAP_MEMORY (bytes) overrides both, so the checks
 * that refuse what cannot fit (run, sweep, quant, .npy reading) are tested
 * the same on every machine. -1 when none is known. */
double nm_memory_available(void);
/* b bytes as "1.5 GB", "12 MB", "512 bytes" (powers of 1000). */
const char *nm_fmt_bytes(double b, char *buf, size_t len);

/* The process's heap, set once at start (the CLI's main, the bench): a
 * kernel's vectors (megabytes; TRUTH's 64 bytes a value) are made and freed
 * at every point and every search step, and glibc would map each from the
 * kernel and unmap it again, paying a page fault on every page each time
 * (about 6% of a sweep, in system time). Kept in the heap up to 32 MiB, and
 * freed memory returned past 128 MiB. Nothing elsewhere than glibc. */
void nm_heap_keep(void);

#endif
