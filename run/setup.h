// run/setup.h: ./train's set-up before any run is built (run/setup.c): the configuration, the
// checks before training, the threads and the data. What they cannot use is refused with a
// message and exit 2 (a usage error) or 1.
#ifndef RUN_SETUP_H
#define RUN_SETUP_H

#include <stddef.h>

#include "base/config.h"     // Config
#include "base/data.h"       // Dataset
#include "model.h"           // ModelDims
#include "run/args.h"        // Args, Comparison: the command line
#include "run/checkpoint.h"  // Checkpoint: the one resumed from, or the model file started from

// The directory a path's file is in, into dir (n bytes; a usage error when it does not fit).
void dir_of(const char *path, char *dir, size_t n);

// The configuration: the defaults, then the file (or the checkpoint ck's, when resuming, in the
// checkpoint's directory), then the command line's overrides, finalized; a resumed run keeps its
// checkpoint's shape and QK-norm.
void load_config(Config *cfg, const Args *a, const Checkpoint *ck);

// A run started from a model file (--init-from) takes the model's shape and attention from it;
// the command line's model.* overrides apply on top, and may not change the shape.
void take_model_from(Config *cfg, const Args *a, const Checkpoint *init);

// Every variant of a comparison (cmp; NULL for one run) applies to the configuration, and no two
// parse to the same one.
void check_variants(const Config *cfg, const Comparison *cmp);

// The OpenMP threads: train.threads when above 0; else, when ranks share this machine and
// OMP_NUM_THREADS is unset, its cores divided between them.
void set_threads(const Config *cfg);

// The errors every rank of a data-parallel run sees alike (the batch does not divide over the
// ranks; --dump-state under mpirun): rank 0 says it once, and all ranks exit.
void check_ranks(const Config *cfg, const Args *args);

// Refuse before allocating when n_models models of dims d with batch B x T cannot fit in this
// machine's memory.
void check_memory(const ModelDims *d, int B, int T, int n_models);

// The text (the vocabulary of the checkpoint ck or of the model file init, when given), or for
// --bench no text at all.
void load_data(Dataset *ds, const Config *cfg, const Args *args, const Checkpoint *ck,
               const Checkpoint *init);

#endif
