// run/safetensors.h: a model's weights as a safetensors file under nanoGPT's tensor names, written
// from a model and read back as a checkpoint without optimizer state.
//
// The file (the format of Hugging Face's safetensors): an 8-byte little-endian header length N,
// N bytes of JSON, then the raw little-endian data. The JSON maps each tensor's name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data, which the tensors cover
// without holes or overlaps) and holds "__metadata__", a map of strings. docs/FORMAT.md lists the
// tensors and the metadata; the architecture is nanoGPT's GPT with bias=False.
#ifndef SAFETENSORS_H
#define SAFETENSORS_H

#include <stddef.h>

#include "base/data.h"
#include "model.h"
#include "run/checkpoint.h"

// Write m's parameters to path (replaced whole) with the resolved configuration and the
// vocabulary in the metadata. Returns the number of tensors written, or 0 with one line in err.
int safetensors_export(const char *path, const GPT *m, const char *config_json, const Vocab *vocab,
                       char *err, size_t errlen);

// Whether m computes attention as nanoGPT does (scale 1/sqrt(head_dim), the causal mask, the
// softmax over the keys, every earlier key): then PyTorch computes the same function.
int safetensors_attention_is_nanogpts(const GPT *m);

// Read and validate a safetensors file into ck, as checkpoint_open does for a checkpoint: the
// header (length, JSON, dtypes, shapes, offsets) before anything large is allocated, then every
// tensor converted to float32 under this project's names (ck->has_optimizer is 0). The
// vocabulary comes from the metadata, or, when the file has none, from vocab_text (a UTF-8 text
// whose distinct characters it was built from; NULL: such a file is refused). Returns 0 with one
// line naming the file on any problem.
int safetensors_open(Checkpoint *ck, const char *path, const char *vocab_text, char *err,
                     size_t errlen);

// Open a model file of either kind, by its content: a checkpoint (checkpoint_open) or a
// safetensors file (safetensors_open).
int model_file_open(Checkpoint *ck, const char *path, const char *vocab_text, char *err,
                    size_t errlen);

#endif
