/*
 * nm_claims.h — docs/claims.md: statements commonly made about mixed
 * precision, each with the numbers that settle it and a verdict (true,
 * false, partly) computed from those numbers. The numbers come from the
 * sweep's results of the claim cases (the .case files of cases/claims/, each with a
 * [claim] section: id = 1..25, statement, part) and from the format
 * descriptors; docs/claims-method.md says how each verdict is computed.
 */
#ifndef NANMAP_NM_CLAIMS_H
#define NANMAP_NM_CLAIMS_H

#include <stddef.h>

#include "emu/sweep/nm_case.h"

#define NM_CLAIMS_N 25 /* ids 1..25 */

/* Check c's [claim] keys (id 1..25 required when the section exists, statement,
 * part): 0, or -1 with "FILE:LINE: key 'K': reason". */
int nm_claims_check(const nm_case *c, char *err, size_t errlen);

/* The verdict of claim id (1..25) from results_dir (<case>.csv of the claim
 * cases, thresholds.csv when present): "true", "false", "partly", or
 * "unsettled" when a needed case or result is missing. The explanation and
 * numbers are written to md (markdown) when md is not NULL. */
const char *nm_claim_verdict(int id, nm_case *const *cases, size_t n, const char *results_dir);

/* Write md_path (through a temporary file and rename()) from the cases that
 * have a [claim] section (the others are ignored). 0, or -1 with a reason. */
int nm_claims_write(nm_case *const *cases, size_t n, const char *results_dir, const char *md_path,
                    char *err, size_t errlen);

#endif
