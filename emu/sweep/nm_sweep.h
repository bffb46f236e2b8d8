/*
 * nm_sweep.h — `nanmap sweep`: every point of every case file on the fast
 * backend (OpenMP across points, MPI ranks across machines when built with
 * NM_MPI), one CSV per case, the thresholds, plots and claims. Finished
 * points are journalled, so an interrupted sweep resumes where it stopped;
 * docs/sweep.md is the reference.
 */
#ifndef NANMAP_NM_SWEEP_H
#define NANMAP_NM_SWEEP_H

/*
 * nanmap sweep [--quick] [--fresh] [--quiet] [-j N] [--out DIR] [--plots DIR]
 *              [--docs DIR] [--only NAME] [--max-memory SIZE] PATH...
 * PATH is a .case file or a directory of them (and of one level of
 * subdirectories). argv[0] is "sweep". Every case file is read and checked,
 * and every case sized against --max-memory, before any point runs; the
 * --out folder is locked for the whole run. Returns the exit status: 0, or
 * 2 after exactly one line on stderr.
 */
int nm_sweep_main(int argc, char **argv);

#endif
