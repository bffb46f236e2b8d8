/*
 * nm_npy.h — NumPy .npy files in and out, strictly.
 *
 * Read: format versions 1.0, 2.0 and 3.0; dtypes '<f2' '<f4' '<f8' and
 * '|u1' '<u2' '<u4' (raw encodings), any byte order ('<', '>', '|' for
 * one-byte types, '=' as the machine's); C order only; 1-D or 2-D shapes.
 * Floats become exact doubles ('<f2' is decoded by the emulator's fp16);
 * integer dtypes give their values as doubles and as raw encodings.
 * Anything else is an error with a one-line reason that starts with the
 * file's name: the header must be exactly NumPy's dict with the keys
 * 'descr', 'fortran_order' and 'shape', and the data exactly as long as the
 * shape says (no trailing bytes).
 *
 * Write: '<f2' '<f4' '<f8' '|u1' '<u2' '<u4', version 1.0, the header padded
 * as NumPy pads it (total header length a multiple of 64), to a temporary
 * file in the same folder that is then renamed over the target.
 */
#ifndef NANMAP_NM_NPY_H
#define NANMAP_NM_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum nm_npy_status {
	NM_NPY_OK = 0,
	NM_NPY_ERR_IO,          /* open/read/write/rename failed */
	NM_NPY_ERR_FORMAT,      /* not a .npy file: magic, version, header syntax */
	NM_NPY_ERR_UNSUPPORTED, /* a valid .npy this reader does not take: dtype,
	                           fortran_order True, 0-D or > 2-D */
	NM_NPY_ERR_DATA,        /* data shorter or longer than the shape says */
	NM_NPY_ERR_RANGE,       /* shape product or byte count overflows; a value a
	                           written dtype cannot hold */
	NM_NPY_ERR_NOMEM
} nm_npy_status;

typedef enum nm_npy_dtype {
	NM_NPY_F2 = 0,
	NM_NPY_F4,
	NM_NPY_F8,
	NM_NPY_U1,
	NM_NPY_U2,
	NM_NPY_U4,
	NM_NPY_NDTYPES
} nm_npy_dtype;

/* NumPy's little-endian descr ("<f2", "|u1", ...) and the item size. */
const char *nm_npy_dtype_name(nm_npy_dtype t);
size_t nm_npy_dtype_size(nm_npy_dtype t);

/* The longest header the reader accepts, as NumPy's read_array_header
 * (max_header_size = 10000). */
#define NM_NPY_MAX_HEADER 10000
/* The most elements the reader accepts: the largest input nanmap takes
 * (2^31, as nanmap run's --n x --rows). nm_npy_read reads a file only as
 * far as its header says (and 64 KiB more to count trailing bytes), so a
 * stream that never ends is refused, not read into memory. */
#define NM_NPY_MAX_ELEMS ((uint64_t)1 << 31)

typedef struct nm_npy {
	nm_npy_dtype dtype;
	bool big_endian; /* the file's byte order ('>') */
	int version;     /* 1, 2 or 3 (major) */
	int ndim;        /* 1 or 2 */
	size_t shape[2]; /* shape[1] = 1 when ndim = 1 */
	size_t count;    /* shape[0]·shape[1] */
	double *values;  /* count values: exact (integers as doubles); malloc'ed */
	uint32_t *raw;   /* count encodings for every dtype but f8 (NULL there):
	                    fp16/fp32 bits, or the integers; malloc'ed */
} nm_npy;

/* Read a file; on error *out is empty (nothing to free) and err holds
 * "PATH: reason". */
nm_npy_status nm_npy_read(const char *path, nm_npy *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The same from len bytes in memory; name stands for the file in messages. */
nm_npy_status nm_npy_read_mem(const void *buf, size_t len, const char *name, nm_npy *out, char *err,
                              size_t errlen) __attribute__((warn_unused_result));

/* Free what a successful read allocated; leaves *a empty. */
void nm_npy_free(nm_npy *a);

/*
 * Encode ndim (1 or 2) by shape as dtype into a malloc'ed buffer (*buf,
 * *len). Give values or raw, not both:
 *  - values: floats are rounded to nearest, ties to even (through the
 *    emulator's fp16 and fp32 formats); integer dtypes need exact integers
 *    in range (NM_NPY_ERR_RANGE otherwise).
 *  - raw (not for f8): fp16/fp32 bits or integers, each must fit the width.
 * name stands for the output in messages.
 */
nm_npy_status nm_npy_encode(nm_npy_dtype dtype, int ndim, const size_t *shape, const double *values,
                            const uint32_t *raw, void **buf, size_t *len, const char *name,
                            char *err, size_t errlen) __attribute__((warn_unused_result));

/* nm_npy_encode, then write to "PATH.tmp.XXXXXX" (mode 0644), fsync, and
 * rename it to path. On error nothing is left behind. */
nm_npy_status nm_npy_write(const char *path, nm_npy_dtype dtype, int ndim, const size_t *shape,
                           const double *values, const uint32_t *raw, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
