// run/checkpoint.h: the tensor file format (checkpoints and debug dumps) and crash-safe writing.
//
// A file is: 8-byte magic ("TGPTCKPT" or "TGPTDUMP"), u32 format version, then records until
// the last 4 bytes, which hold the CRC-32 (IEEE) of everything before them. A record is:
// u8 name length, name bytes, u8 dtype, u8 ndim, ndim x u32 shape, then the data, all little
// endian. docs/FORMAT.md documents the records each kind of file holds.
#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "base/data.h"
#include "model.h"
#include "base/rng.h"

#define TFILE_VERSION 1
enum { DT_F32 = 0, DT_I32 = 1, DT_U8 = 2, DT_F64 = 3, DT_U64 = 4, DT_I64 = 5 };

typedef struct {
    char name[256];
    int dtype;
    int ndim;
    uint32_t shape[8];
    size_t count;      // elements
    const void *data;  // points into the file buffer (little endian, possibly unaligned)
} TRecord;

typedef struct {
    unsigned char *buf;
    size_t len;
    int n_records;
    TRecord *records;
} TFile;

uint32_t crc32_update(uint32_t crc, const void *data, size_t n);

// Read and verify (magic, version, CRC, record bounds) a tensor file. Returns 0 with a one-line
// message naming the file on any problem: not a regular file (a FIFO or a device is refused
// before the first read), too large for this machine's memory, truncated, followed by trailing
// data, or corrupt.
int tfile_read(TFile *f, const char *path, const char *magic, char *err, size_t errlen);
const TRecord *tfile_find(const TFile *f, const char *name);
void tfile_free(TFile *f);

// Writing goes to a temporary file PATH.tmp.<pid>.<n> in the same directory, created with O_EXCL
// so that no two writers (processes or not) ever share one; tw_commit flushes, fsyncs, renames it
// over PATH and fsyncs the directory, so PATH is always either the old or the new complete file.
// The temporary file is removed on every other way out: a failed commit, tw_abort, and exit()
// (die) while the writer is open. Only a SIGKILL (or a crash) can leave one behind, which
// checkpoint_remove_stale_temps removes at the next start.
typedef struct TWriter TWriter;
TWriter *tw_open(const char *path, const char *magic, char *err, size_t errlen);
int tw_record(TWriter *w, const char *name, int dtype, int ndim, const uint32_t *shape,
              const void *data);
int tw_commit(TWriter *w, char *err, size_t errlen);
void tw_abort(TWriter *w);

// Remove the temporary files that killed writers left in dir: every NAME.tmp.<pid>.<n> whose
// process no longer runs (and this process's own that none of its writers has open: in a
// container the pid repeats from run to run), and the fixed NAME.bin.tmp of earlier versions.
// A trainer calls it at start, after it holds the output directory (so no other writer of the
// directory is live). Returns the number removed, or -1 with a message when dir cannot be read.
int checkpoint_remove_stale_temps(const char *dir, char *err, size_t errlen);

// ---- checkpoints ----
// Training state beyond the parameters.
typedef struct {
    long step;             // steps completed
    Rng rng;               // the batch sampler's state after `step` steps
    double best_val_loss;  // best evaluated validation loss so far (INFINITY if none)
    long skipped_steps;    // steps skipped as non-finite
    double elapsed_s;      // wall-clock seconds of training so far, over every segment of the run
} TrainState;

// Save the model (parameters and AdamW moments), the resolved config JSON, the vocabulary and
// the training state. Refuses (returns 0) to save what checkpoint_open would refuse to load:
// non-finite values, an all-zero random state, a NaN best_val_loss, an impossible step count.
int checkpoint_save(const char *path, const GPT *m, const char *config_json, const Vocab *vocab,
                    const TrainState *st, char *err, size_t errlen);

// A loaded checkpoint: the config JSON and vocabulary come first so the caller can build the
// model, then checkpoint_restore copies the tensors into it.
typedef struct {
    TFile file;
    char *config_json;  // malloc'd, NUL-terminated
    Vocab vocab;
    ModelDims dims;
    TrainState state;
    int has_optimizer;
} Checkpoint;

// Read and validate a whole checkpoint before anything is built from it: the file (tfile_read),
// the header records, the dimensions against the config record (a valid configuration, UTF-8
// JSON) and against the sizes of the tensor records (wte, wpe and the total count of parameters,
// first and second moments), every value finite and every second moment >= 0, the vocabulary
// (ascending Unicode scalar values, no U+0000), the step counts, a random state that is not
// all zero, and best_val_loss (>= 0 or +inf). An internally inconsistent file is reported as
// such ("... is inconsistent: ..."). Returns 0 with one line naming the file on any problem.
int checkpoint_open(Checkpoint *ck, const char *path, char *err, size_t errlen);
// The memory check ./train applies to a configuration (memory_fits), for building ck's model
// with activations for a batch (B,T): returns 0 with a message when it cannot fit.
int checkpoint_check_memory(const Checkpoint *ck, int B, int T, const char *path, char *err,
                            size_t errlen);
// Copy parameters (and AdamW moments when present) into m, whose dims must match. Checks every
// tensor's name and shape, that all values are finite, and that the forward pass is finite on
// one sequence of every token (finite values can still overflow in it: then the message names
// the parameter of largest magnitude, the first of them, and its value). The check leaves the
// parameters and the training state as they were; only the activations are written.
int checkpoint_restore(const Checkpoint *ck, GPT *m, const char *path, char *err, size_t errlen);
void checkpoint_close(Checkpoint *ck);

#endif
