// attention_map.c: one SVG with a heatmap per (layer, head): row t is the query character, column
// u the key character, colour the weight P[t][u] (white 0 ... dark blue 1).
#include "attention_map.h"

#include <stdio.h>
#include <string.h>

// Write c as SVG text, escaping XML and showing whitespace visibly.
static void put_char_label(FILE *f, uint32_t cp) {
    if (cp == '\n') { fputs("\xe2\x8f\x8e", f); return; }  // RETURN SYMBOL
    if (cp == ' ') { fputs("\xe2\x90\xa3", f); return; }   // OPEN BOX
    if (cp == '\t') { fputs("\xe2\x87\xa5", f); return; }
    if (cp < 0x20 || cp == 0x7f) { fputs("?", f); return; }
    if (cp == '<') { fputs("&lt;", f); return; }
    if (cp == '>') { fputs("&gt;", f); return; }
    if (cp == '&') { fputs("&amp;", f); return; }
    if (cp == '"') { fputs("&quot;", f); return; }
    char buf[5] = {0};
    utf8_encode(cp, buf);
    fputs(buf, f);
}

int write_attention_map(const char *path, const GPT *m, const Vocab *vocab, const int *tokens, int T,
                        char *err, size_t errlen) {
    int L = m->dims.n_layer, NH = m->dims.n_head;
    const double cell = T <= 32 ? 14 : T <= 64 ? 9 : 5, label = 14, pad = 40;
    const double panel = T * cell, pw = panel + label + pad, ph = panel + label + pad + 20;
    double width = NH * pw + pad, height = L * ph + pad + 30;
    const char *why;
    FILE *f = fopen_write_nonblocking(path, &why);  // a FIFO without a reader is refused, not waited on
    if (!f) { snprintf(err, errlen, "cannot write '%s': %s", path, why); return 0; }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"monospace\">\n", width, height, width, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.0f\" y=\"22\" font-family=\"sans-serif\" font-size=\"15\">Attention weights P "
               "(rows: query position, columns: key position; attn_scale %.4g)</text>\n", pad, (double)m->attn.scale);
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < NH; h++) {
            double x0 = pad + h * pw + label, y0 = 40 + l * ph + label + 16;
            fprintf(f, "<g>\n<text x=\"%.1f\" y=\"%.1f\" font-family=\"sans-serif\" font-size=\"12\">layer %d, head %d</text>\n",
                    x0, y0 - label - 4, l, h);
            const real *P = m->acts.layers[l].att + (size_t)h * T * T;  // batch 0
            for (int t = 0; t < T; t++)
                for (int u = 0; u <= t; u++) {
                    double p = P[(size_t)t * T + u];
                    int shade = (int)(255.0 * (1.0 - p) + 0.5);
                    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"rgb(%d,%d,255)\">"
                               "<title>P[%d][%d] = %.4f</title></rect>\n",
                            x0 + u * cell, y0 + t * cell, cell, cell, shade, shade, t, u, p);
                }
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888\"/>\n",
                    x0, y0, panel, panel);
            double fs = cell * 0.9 < 11 ? cell * 0.9 : 11;
            for (int t = 0; t < T; t++) {
                uint32_t cp = vocab->chars[tokens[t]];
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" text-anchor=\"end\">", x0 - 2, y0 + (t + 0.8) * cell, fs);
                put_char_label(f, cp);
                fprintf(f, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" text-anchor=\"middle\">",
                        x0 + (t + 0.5) * cell, y0 - 3, fs);
                put_char_label(f, cp);
                fprintf(f, "</text>\n");
            }
            fprintf(f, "</g>\n");
        }
    }
    fprintf(f, "</svg>\n");
    if (ferror(f) | (fclose(f) != 0)) { snprintf(err, errlen, "cannot write '%s'", path); return 0; }
    return 1;
}
