/*
 * nm_safetensors.h — Hugging Face .safetensors files in and out, strictly.
 *
 * The format: bytes 0..7 hold N, the header's length (uint64 LE); then N
 * bytes of UTF-8 JSON, an object mapping each tensor's name to
 * {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]}, with an
 * optional "__metadata__" object of string -> string; the header may end in
 * spaces. Then the data: offsets count from its first byte, elements are
 * little-endian, in C order.
 *
 * Read: the file is mapped read-only (nm_st_open) or copied (nm_st_open_mem)
 * and checked as the reference Rust library checks it, and more strictly:
 * N at most NM_ST_MAX_HEADER and at most the bytes after it; the header
 * starts with '{' and is exactly this schema in strict JSON (no duplicate
 * keys, no keys besides the three, no numbers but plain non-negative
 * integers that fit 64 bits, valid UTF-8, nothing after the object but
 * spaces); every dtype known; END - BEGIN exactly the bytes the shape and
 * dtype need; the tensors, sorted by BEGIN, cover the data exactly (the
 * first at 0, each where the previous ended, the last at the file's end).
 * Anything else is an error with a one-line reason that starts with the
 * file's name, and tensor names in messages are shown printable ('\xHH').
 *
 * A mapped file must not shrink while it is open: reading a page that is no
 * longer there raises SIGBUS (mmap's contract, not this reader's).
 *
 * Write: tensors in the order given, one after another, the header padded
 * with spaces to a multiple of 8 bytes, through nm_file_write (a temporary
 * in the same folder, fsync'ed and renamed over the target).
 */
#ifndef NANMAP_NM_SAFETENSORS_H
#define NANMAP_NM_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum nm_st_status {
	NM_ST_OK = 0,
	NM_ST_ERR_IO,          /* open/stat/mmap/write failed; not a regular file */
	NM_ST_ERR_FORMAT,      /* not a valid .safetensors file: lengths, JSON,
	                          schema, duplicate names, sizes, holes, overlaps */
	NM_ST_ERR_UNSUPPORTED, /* an unknown dtype; more than NM_ST_MAX_DIMS
	                          dimensions; decoding a dtype nm_st_decode does
	                          not decode */
	NM_ST_ERR_RANGE,       /* an integer, shape product or byte count that
	                          overflows 64 bits; elements outside a tensor */
	NM_ST_ERR_NOMEM
} nm_st_status;

/* The dtypes of safetensors 0.6 (its Dtype enum). The first six are
 * decoded by nm_st_decode; the rest are recognised and listed only. */
typedef enum nm_st_dtype {
	NM_ST_F64 = 0,
	NM_ST_F32,
	NM_ST_F16,
	NM_ST_BF16,
	NM_ST_F8_E4M3, /* OCP E4M3FN: no infinities, NaN = S.1111.111 */
	NM_ST_F8_E5M2,
	NM_ST_BOOL,
	NM_ST_U8,
	NM_ST_I8,
	NM_ST_U16,
	NM_ST_I16,
	NM_ST_U32,
	NM_ST_I32,
	NM_ST_U64,
	NM_ST_I64,
	NM_ST_F8_E8M0,
	NM_ST_F4,
	NM_ST_F6_E2M3,
	NM_ST_F6_E3M2,
	NM_ST_C64,
	NM_ST_NDTYPES
} nm_st_dtype;

/* The name in the header ("F32"), or "?" out of range. */
const char *nm_st_dtype_name(nm_st_dtype t);
/* Bits an element takes: 4 for F4, 6 for F6_*, else 8 x its bytes (0 out
 * of range). A tensor of a sub-byte dtype must fill whole bytes. */
size_t nm_st_dtype_bits(nm_st_dtype t);
/* true for F64 F32 F16 BF16 F8_E4M3 F8_E5M2. */
bool nm_st_dtype_decodable(nm_st_dtype t);

/* The longest header read or written (the reference's MAX_HEADER_SIZE). */
#define NM_ST_MAX_HEADER 100000000
#define NM_ST_MAX_DIMS 8

typedef struct nm_st_tensor {
	char *name; /* NUL-terminated UTF-8 (names with an embedded NUL are refused) */
	nm_st_dtype dtype;
	int ndim; /* 0 (a scalar) to NM_ST_MAX_DIMS */
	uint64_t shape[NM_ST_MAX_DIMS];
	uint64_t count;      /* product of shape: 1 for a scalar, 0 with a 0 dimension */
	const uint8_t *data; /* into the mapping */
	uint64_t nbytes;
	uint64_t begin; /* data_offsets[0], from the first byte after the header */
} nm_st_tensor;

typedef struct nm_st_file {
	void *map; /* the whole file: mmap'ed, or a malloc'ed copy for _mem */
	size_t maplen;
	bool mapped;
	size_t ntensors;
	nm_st_tensor *t; /* in the header's order */
	size_t nmeta;    /* "__metadata__", in the header's order */
	char **meta_keys;
	char **meta_values;
	char *name;          /* the path or the name given, for messages (malloc'ed) */
	uint64_t header_len; /* N: the data starts at byte 8 + N */
} nm_st_file;

/* Map path read-only and check it; on error *out is empty (nothing to
 * free) and err holds "PATH: reason". */
nm_st_status nm_st_open(const char *path, nm_st_file *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The same from a copy of len bytes at buf; name stands for the file in
 * messages. */
nm_st_status nm_st_open_mem(const void *buf, size_t len, const char *name, nm_st_file *out,
                            char *err, size_t errlen) __attribute__((warn_unused_result));

/* Unmap or free everything; leaves *f empty. NULL or an empty file is
 * nothing. */
void nm_st_close(nm_st_file *f);

/* The tensor called name, or NULL (a linear search). */
const nm_st_tensor *nm_st_find(const nm_st_file *f, const char *name);

/* Decode elements [first, first + n) of t, one of f's tensors, into exact
 * doubles: F16, BF16, F8_E4M3 and F8_E5M2 through the emulator's formats
 * fp16, bf16, e4m3 and e5m2; F32 and F64 bit for bit (NaNs stay NaNs,
 * payloads are not promised). A dtype that is not decodable is
 * NM_ST_ERR_UNSUPPORTED, a range outside the tensor NM_ST_ERR_RANGE, with
 * "NAME: tensor 'T': reason" in err. */
nm_st_status nm_st_decode(const nm_st_file *f, const nm_st_tensor *t, uint64_t first, size_t n,
                          double *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* A tensor to write: shape has ndim entries (may be NULL when ndim is 0),
 * data nbytes raw little-endian bytes, exactly what shape and dtype need. */
typedef struct nm_st_out {
	const char *name;
	nm_st_dtype dtype;
	int ndim;
	const uint64_t *shape;
	const void *data;
	uint64_t nbytes;
} nm_st_out;

/* Encode n tensors into a malloc'ed buffer (*buf, *len): names must be
 * distinct valid UTF-8 and not "__metadata__"; each nbytes must be what
 * its shape and dtype need. name stands for the output in messages. */
nm_st_status nm_st_encode(const nm_st_out *t, size_t n, void **buf, size_t *len, const char *name,
                          char *err, size_t errlen) __attribute__((warn_unused_result));

/* nm_st_encode, then nm_file_write to path. On error nothing is left. */
nm_st_status nm_st_write(const char *path, const nm_st_out *t, size_t n, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
