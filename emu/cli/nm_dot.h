/*
 * nm_dot.h — `nanmap dot`: Tensor Core dot products of vectors read from
 * files in the layout of the published hardware test vectors.
 */
#ifndef NANMAP_NM_DOT_H
#define NANMAP_NM_DOT_H

#include <stddef.h>

#include "emu/core/emu.h"

/*
 * nanmap dot --model MODEL --in FMT --out FMT [--bits] A_FILE B_FILE [C_FILE]
 * argv[0] is the command's name ("dot"), as for main(). Prints one result
 * per case; returns the exit status (0, or 2 after one line on stderr).
 */
int nm_dot_main(int argc, char **argv);

/*
 * Vectors as the hardware test vectors store them: `count` cases of `K`
 * binary32 encodings each, row-major. The readers below fill one; every
 * error is one line in err naming the file and line ("a.txt:12: ...").
 */
typedef struct nm_vecs {
	size_t count, K;
	emu_bits *v;
} nm_vecs;

/* A file of lines of K binary32 bit patterns in hex (8 digits, optional 0x),
 * blank-separated; every line must have the same K. */
int nm_read_hex_vectors(const char *path, nm_vecs *out, char *err, size_t errlen);
/* A file of one binary32 per line as 32 characters '0'/'1' (K = 1). */
int nm_read_bin_scalars(const char *path, nm_vecs *out, char *err, size_t errlen);
void nm_vecs_free(nm_vecs *v);

/* Longest line the readers accept, in bytes. */
#define NM_DOT_MAX_LINE (1u << 20)

#endif
