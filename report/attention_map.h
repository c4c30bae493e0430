// report/attention_map.h: attention weights of a prompt as SVG heatmaps (./sample --attention-map).
#ifndef ATTENTION_MAP_H
#define ATTENTION_MAP_H

// The line every attention map carries (this SVG, report.html's maps, the lab pages that show P):
// the weights are not an explanation, and the command that measures what matters.
#define ATTENTION_NOT_EXPLANATION                                                                  \
    "Weights show where information can flow, not what decided the prediction: ./sample CKPT "     \
    "--explain "                                                                                   \
    "--prompt TEXT measures what each position actually contributes (docs/mistakes.md, section "   \
    "4)."

#include <stddef.h>
#include <stdint.h>

#include "base/data.h"
#include "model.h"

// Write the attention weights P of every layer and head from the last forward (batch 1, T
// tokens) as labelled heatmaps, characters on both axes, in one self-contained SVG file.
// The colour scale of the maps: rgb (0..255 each) of weight p, clamped to [0, 1] (NaN as 0);
// light at 0, dark at 1 (ColorBrewer's YlGnBu). The comparison's report.html draws with it too.
void attention_weight_colour(double p, int rgb[3]);
// The character a label shows for code point cp: itself, or a visible stand-in for whitespace
// (space U+2423, newline U+21B5, tab U+21E5), control characters and what XML text cannot hold.
uint32_t attention_visible_char(uint32_t cp);

// The map is written by the one writer (base/outfile.h): only a regular file, replaced whole;
// "-" is standard output. Returns 0 with one line in err when it cannot be written. scale_text is
// model.attn_scale as configured ("sqrt", "none" or the number), which the note names.
int write_attention_map(const char *path, const GPT *m, const char *scale_text, const Vocab *vocab,
                        const int *tokens, int T, char *err, size_t errlen);

#endif
