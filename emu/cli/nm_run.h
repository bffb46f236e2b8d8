/*
 * nm_run.h — `nanmap run`: one training kernel (emu/engine/kernels.h) on the fast,
 * exact-format and truth backends, with its status, outputs, errors against
 * truth, flags per operation kind and the first failing operation, as text,
 * CSV or JSON. docs/run.md is the reference.
 */
#ifndef NANMAP_NM_RUN_H
#define NANMAP_NM_RUN_H

/*
 * nanmap run KERNEL --policy SPEC [--variant V] [--param NAME=VALUE]...
 *            (--input FILE | --values LIST | --gen DIST --n N) [--rows R]
 *            [--seed S] [--scale X] [--range LO,HI]
 *            [--backend fast|exact|truth|all] [--no-truth] [--csv|--json]
 * argv[0] is the command's name ("run"), as for main(). The whole output is
 * built in memory and printed only when every input was good. Returns the
 * exit status: 0, or 2 after exactly one line on stderr.
 */
int nm_run_main(int argc, char **argv);

#endif
