/*
 * nm_train.h — `nanmap train` (emu/train/train.h, docs/train.md).
 */
#ifndef NANMAP_NM_TRAIN_H
#define NANMAP_NM_TRAIN_H

int nm_train_main(int argc, char **argv);

#endif
