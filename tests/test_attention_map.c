// tests/test_attention_map.c: the SVG of ./sample --attention-map, read back as a person and an
// XML parser would: well-formed with escaped text, a colour bar whose gradient gives every cell's
// colour from its weight, the prompt's characters on both axes, the weights printed in the cells
// of short prompts only (in a colour readable on the cell), every text inside the canvas, one
// panel per (layer, head), and the whole T x T matrix with the mask and axis named for a model
// with an attention mistake.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/attention_map.h"
#include "base/data.h"
#include "model.h"
#include "base/rng.h"
#include "test.h"

// ---------------------------------------------------------------------------------------------
// a small model whose attention is far from uniform, and its map

// The vocabulary, sorted: newline, space, the XML specials, letters, and one non-ASCII letter.
static uint32_t g_chars[] = {'\n', ' ', '"', '&', '<', '>', 'a', 'b', 'c', 'x', 0xe9};
#define N_CHARS (int)(sizeof g_chars / sizeof g_chars[0])
#define N_LAYER 2
#define BLOCK   24

typedef struct {
    GPT m;
    Vocab vocab;
    int tokens[BLOCK];
    int T;
    char *svg;  // the map, read back
} Map;

// The map of `prompt` (code points of g_chars) for a model of NH heads with the given mask and
// softmax axis. Wq is scaled up so that the weights spread over [0, 1].
static int map_build(Map *mp, int NH, AttnMask mask, SoftmaxAxis axis, const uint32_t *prompt,
                     int T) {
    ModelDims d = {N_CHARS, BLOCK, N_LAYER, NH, 12, QK_NORM_NONE};
    gpt_build(&mp->m, &d,
              (AttnSetup){{(real)(1.0 / sqrt(12.0 / NH)), mask, axis, 0, NULL},
                          &attention_definition,
                          MODEL_ENGINE},
              1, BLOCK);
    Rng rng;
    rng_seed(&rng, 7);
    gpt_init(&mp->m, INIT_GPT2, &rng);
    for (int l = 0; l < N_LAYER; l++)
        for (int i = 0; i < 12 * 12; i++) mp->m.p.layers[l].wq[i] *= 300;
    mp->vocab.vocab_size = N_CHARS;
    mp->vocab.chars = g_chars;
    mp->T = T;
    for (int t = 0; t < T; t++) mp->tokens[t] = vocab_lookup(&mp->vocab, prompt[t]);
    gpt_forward(&mp->m, mp->tokens, NULL, 1, T);

    char dir[] = "/tmp/test_amap_XXXXXX", path[64], err[256];
    if (!mkdtemp(dir)) return 0;
    snprintf(path, sizeof path, "%s/map.svg", dir);
    int ok = write_attention_map(path, &mp->m, "sqrt", &mp->vocab, mp->tokens, T, err, sizeof err);
    if (!ok) fprintf(stderr, "  %s\n", err);
    mp->svg = NULL;
    FILE *f = fopen(path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        mp->svg = malloc((size_t)n + 1);
        if (mp->svg && fread(mp->svg, 1, (size_t)n, f) == (size_t)n) mp->svg[n] = 0;
        fclose(f);
    }
    unlink(path);
    rmdir(dir);
    return ok && mp->svg;
}

static void map_free(Map *mp) {
    gpt_free(&mp->m);
    free(mp->svg);
}

// P[t][u] of (layer l, head h) from the model's last forward
static double weight(const Map *mp, int l, int h, int t, int u) {
    int T = mp->T;
    return mp->m.acts.layers[l].att[(size_t)h * T * T + (size_t)t * T + u];
}

// A prompt from ASCII text (every byte one of g_chars)
static int ascii_prompt(uint32_t *out, const char *s) {
    int n = 0;
    for (; *s; s++) out[n++] = (unsigned char)*s;
    return n;
}

// ---------------------------------------------------------------------------------------------
// reading the SVG

// Whether s is well-formed XML for what the map uses: elements with quoted attributes, comments,
// character data whose '&' start one of the five predefined entities or a character reference,
// no '<' in attribute values, every element closed in order, one root element, nothing but
// whitespace outside it, valid UTF-8 without control characters.
static int entity_ok(const char *p) {
    static const char *const names[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"};
    for (int i = 0; i < 5; i++)
        if (strncmp(p, names[i], strlen(names[i])) == 0) return 1;
    if (p[1] != '#') return 0;
    const char *q = p + 2;
    if (*q == 'x') q++;
    const char *digits = q;
    while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') || (*q >= 'A' && *q <= 'F')) q++;
    return q > digits && *q == ';';
}

static int is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == ':';
}

static int xml_well_formed(const char *s, char *why, size_t whylen) {
    uint32_t *cps;
    size_t n_cps, bad;
    if (!utf8_decode((const unsigned char *)s, strlen(s), &cps, &n_cps, &bad)) {
        snprintf(why, whylen, "invalid UTF-8 at byte %zu", bad);
        return 0;
    }
    for (size_t i = 0; i < n_cps; i++)
        if (cps[i] < 0x20 && cps[i] != '\n' && cps[i] != '\t' && cps[i] != '\r') {
            snprintf(why, whylen, "control character U+%04X", (unsigned)cps[i]);
            free(cps);
            return 0;
        }
    free(cps);
    char stack[64][32];
    int depth = 0, roots = 0;
    const char *p = s;
    while (*p) {
        if (*p == '<') {
            if (strncmp(p, "<!--", 4) == 0) {
                const char *e = strstr(p, "-->");
                if (!e) {
                    snprintf(why, whylen, "unterminated comment");
                    return 0;
                }
                p = e + 3;
                continue;
            }
            int closing = p[1] == '/';
            const char *q = p + 1 + closing, *name = q;
            while (is_name_char(*q)) q++;
            size_t len = (size_t)(q - name);
            if (len == 0 || len >= 32) {
                snprintf(why, whylen, "bad tag at byte %td", p - s);
                return 0;
            }
            if (closing) {
                if (*q != '>' || depth == 0 || strlen(stack[depth - 1]) != len ||
                    strncmp(stack[depth - 1], name, len)) {
                    snprintf(why, whylen, "unbalanced </%.*s> at byte %td", (int)len, name, p - s);
                    return 0;
                }
                depth--;
                p = q + 1;
                continue;
            }
            for (;;) {  // attributes
                while (*q == ' ' || *q == '\n') q++;
                if (*q == '>' || (q[0] == '/' && q[1] == '>')) break;
                const char *an = q;
                while (is_name_char(*q)) q++;
                if (q == an || *q != '=' || (q[1] != '"' && q[1] != '\'')) {
                    snprintf(why, whylen, "bad attribute at byte %td", q - s);
                    return 0;
                }
                char quote = q[1];
                for (q += 2; *q && *q != quote; q++)
                    if (*q == '<' || (*q == '&' && !entity_ok(q))) {
                        snprintf(why, whylen, "unescaped '%c' in an attribute at byte %td", *q,
                                 q - s);
                        return 0;
                    }
                if (!*q) {
                    snprintf(why, whylen, "unterminated attribute");
                    return 0;
                }
                q++;
            }
            if (depth == 0 && ++roots > 1) {
                snprintf(why, whylen, "a second root element");
                return 0;
            }
            if (*q == '>') {
                if (depth == 64) {
                    snprintf(why, whylen, "nested too deep");
                    return 0;
                }
                memcpy(stack[depth], name, len);
                stack[depth++][len] = 0;
                p = q + 1;
            } else {
                p = q + 2;
            }
            continue;
        }
        if (depth == 0 && *p != ' ' && *p != '\n') {
            snprintf(why, whylen, "text outside the root at byte %td", p - s);
            return 0;
        }
        if (*p == '&' && !entity_ok(p)) {
            snprintf(why, whylen, "unescaped '&' at byte %td", p - s);
            return 0;
        }
        p++;
    }
    if (depth != 0 || roots != 1) {
        snprintf(why, whylen, "%d elements left open, %d roots", depth, roots);
        return 0;
    }
    return 1;
}

// One <text> element: where it is drawn and what it says (its character data, escaped).
typedef struct {
    double x, y, font_size;
    char anchor[16], cls[32], fill[16], content[256];
    int rotated;  // has a transform: its x, y are before it
} TextEl;

// The value of attribute `name` in the tag starting at tag (up to its '>'), or "" if absent.
static void attr(const char *tag, const char *name, char *out, size_t n) {
    char key[40];
    snprintf(key, sizeof key, " %s=\"", name);
    size_t key_len = strlen(key);
    const char *p = tag;
    while (*p && *p != '>' && strncmp(p, key, key_len) != 0) p++;
    out[0] = 0;
    if (*p != ' ') return;
    p += key_len;
    size_t i = 0;
    while (p[i] && p[i] != '"' && i + 1 < n) {
        out[i] = p[i];
        i++;
    }
    out[i] = 0;
}

// The <g class=...> elements met in document order: enclosing_group(p) for elements p in
// increasing order reads the document once.
typedef struct {
    const char *last, *last_close, *next;  // the last group opened before p, its "</g>", the next
} GroupScan;

static void group_scan_start(GroupScan *s, const char *svg) {
    s->last = s->last_close = NULL;
    s->next = strstr(svg, "<g class=");
}

// The <g class=...> that directly holds the element at p (p not before the previous call's), or
// NULL.
static const char *enclosing_group(GroupScan *s, const char *p) {
    while (s->next && s->next < p) {
        s->last = s->next;
        s->last_close = strstr(s->last, "</g>");
        s->next = strstr(s->next + 1, "<g class=");
    }
    if (!s->last) return NULL;
    return s->last_close && s->last_close < p ? NULL : s->last;
}

// An attribute of the element at p, or else of its enclosing group g (may be NULL).
static void inherited_attr(const char *p, const char *g, const char *name, char *out, size_t n) {
    attr(p, name, out, n);
    if (!out[0] && g) attr(g, name, out, n);
}

// The <text> elements whose class list (theirs, or their group's) holds word `cls`, in document
// order; returns their count (up to max stored).
static int texts_of(const char *svg, const char *cls, TextEl *out, int max) {
    int n = 0;
    GroupScan groups;
    group_scan_start(&groups, svg);
    for (const char *p = strstr(svg, "<text "); p; p = strstr(p + 1, "<text ")) {
        TextEl e;
        char buf[64];
        attr(p, "class", e.cls, sizeof e.cls);
        const char *g = enclosing_group(&groups, p);
        if (g && !e.cls[0]) attr(g, "class", e.cls, sizeof e.cls);
        int match = 0;
        for (char *w = strtok(strcpy(buf, e.cls), " "); w; w = strtok(NULL, " "))
            match |= strcmp(w, cls) == 0;
        if (!match) continue;
        attr(p, "x", buf, sizeof buf);
        e.x = atof(buf);
        attr(p, "y", buf, sizeof buf);
        e.y = atof(buf);
        inherited_attr(p, g, "font-size", buf, sizeof buf);
        e.font_size = atof(buf);
        inherited_attr(p, g, "text-anchor", e.anchor, sizeof e.anchor);
        attr(p, "fill", e.fill, sizeof e.fill);
        attr(p, "transform", buf, sizeof buf);
        e.rotated = buf[0] != 0;
        const char *c = strchr(p, '>') + 1;
        size_t i = 0;
        while (c[i] && c[i] != '<' && i + 1 < sizeof e.content) {
            e.content[i] = c[i];
            i++;
        }
        e.content[i] = 0;
        if (n < max) out[n] = e;
        n++;
    }
    return n;
}

// The character data of all <text> elements of class cls, joined by spaces: a wrapped paragraph
// read as one line (malloc'd).
static char *joined_text(const char *svg, const char *cls) {
    int n = texts_of(svg, cls, NULL, 0);
    TextEl *e = malloc(sizeof(TextEl) * (size_t)(n + 1));
    char *s = calloc((size_t)n + 1, sizeof e->content + 1);
    texts_of(svg, cls, e, n);
    for (int i = 0; i < n; i++) {
        if (i) strcat(s, " ");
        strcat(s, e[i].content);
    }
    free(e);
    return s;
}

// Characters a text shows: code points, an entity counting as one.
static int shown_chars(const char *s) {
    int n = 0;
    for (; *s; s++) {
        if (*s == '&') s = strchr(s, ';');
        n += ((unsigned char)*s & 0xc0) != 0x80;
    }
    return n;
}

// Estimated extent [left, right] of a text in a monospace font of 0.6 em advance (DejaVu Sans
// Mono, Liberation Mono, Courier).
static void text_extent(const TextEl *e, double *left, double *right) {
    double w = shown_chars(e->content) * 0.6 * e->font_size;
    *left = strcmp(e->anchor, "middle") == 0 ? e->x - w / 2
            : strcmp(e->anchor, "end") == 0  ? e->x - w
                                             : e->x;
    *right = *left + w;
}

static double svg_number(const char *svg, const char *name) {
    char buf[32];
    attr(svg, name, buf, sizeof buf);
    return atof(buf);
}

static int count(const char *s, const char *sub) {
    int n = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub)) n++;
    return n;
}

// The label a map must show for character c: itself escaped, or the stand-in of whitespace.
static const char *expected_label(uint32_t c) {
    switch (c) {
    case ' ':
        return "\xe2\x90\xa3";  // U+2423
    case '\n':
        return "\xe2\x86\xb5";  // U+21B5
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '&':
        return "&amp;";
    case '"':
        return "&quot;";
    case 0xe9:
        return "\xc3\xa9";
    default: {
        static char one[2];
        one[0] = (char)c;
        one[1] = 0;
        return one;
    }
    }
}

// ---------------------------------------------------------------------------------------------
// the tests

// The checker itself catches what it must: a real test of well-formedness, not a formality.
static void test_amap_xml_checker_rejects_broken_svg(void) {
    char why[128];
    CHECK(xml_well_formed("<svg><g><text x=\"1\">a &lt; b</text></g></svg>\n", why, sizeof why));
    CHECK(!xml_well_formed("<svg><text>a < b</text></svg>", why, sizeof why));
    CHECK(!xml_well_formed("<svg><text>a & b</text></svg>", why, sizeof why));
    CHECK(!xml_well_formed("<svg><g></svg>", why, sizeof why));
    CHECK(!xml_well_formed("<svg><text x=\"<\">a</text></svg>", why, sizeof why));
    CHECK(!xml_well_formed("<svg></svg><svg></svg>", why, sizeof why));
    CHECK(!xml_well_formed("<svg><text>\x01</text></svg>", why, sizeof why));
}

// Well-formed, with the prompt's characters (XML specials, a space, a newline, a non-ASCII letter)
// escaped and shown on both axes of every panel, keys across and queries down, in prompt order.
static void test_amap_well_formed_with_prompt_labels(void) {
    uint32_t prompt[BLOCK];
    int T = ascii_prompt(prompt, "a<b & \"c\">\n");
    prompt[T++] = 0xe9;
    Map mp;
    CHECK(map_build(&mp, 2, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, prompt, T));
    if (!mp.svg) return;
    char why[128] = "";
    CHECK_MSG(xml_well_formed(mp.svg, why, sizeof why), "%s", why);
    CHECK(strncmp(mp.svg, "<svg", 4) == 0);
    static TextEl keys[N_LAYER * 2 * BLOCK], queries[N_LAYER * 2 * BLOCK];
    int nk = texts_of(mp.svg, "keys", keys, N_LAYER * 2 * BLOCK),
        nq = texts_of(mp.svg, "queries", queries, N_LAYER * 2 * BLOCK);
    CHECK(nk == N_LAYER * 2 * T && nq == N_LAYER * 2 * T);
    for (int i = 0; i < nk && i < N_LAYER * 2 * T; i++) {
        int t = i % T;
        CHECK_MSG(strcmp(keys[i].content, expected_label(prompt[t])) == 0, "key label %d is '%s'",
                  i, keys[i].content);
        CHECK_MSG(strcmp(queries[i].content, expected_label(prompt[t])) == 0,
                  "query label %d is '%s'", i, queries[i].content);
        // keys spread across (same baseline, x growing), queries down (same x, y growing)
        if (t > 0) {
            CHECK(keys[i].y == keys[i - 1].y && keys[i].x > keys[i - 1].x);
            CHECK(queries[i].x == queries[i - 1].x && queries[i].y > queries[i - 1].y);
        }
    }
    // the whitespace stand-ins are explained
    CHECK(strstr(mp.svg, "\xe2\x90\xa3=space") && strstr(mp.svg, "\xe2\x86\xb5=newline"));
    map_free(&mp);
}

// The colour bar: a gradient from the scale's stops over [0, 1], ticks labelled 0 ... 1 at its
// ends; and each cell's colour is the bar's colour at the cell's weight, so a value can be read
// off a colour.
static void test_amap_colour_bar_gives_cell_colours(void) {
    uint32_t prompt[BLOCK];
    int T = ascii_prompt(prompt, "abcab xab");
    Map mp;
    CHECK(map_build(&mp, 3, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, prompt, T));
    if (!mp.svg) return;
    // the gradient's stops
    double stop_at[32];
    int stop_rgb[32][3], n_stops = 0;
    const char *g = strstr(mp.svg, "<linearGradient id=\"weight-scale\"");
    CHECK(g != NULL);
    if (!g) {
        map_free(&mp);
        return;
    }
    const char *g_end = strstr(g, "</linearGradient>");
    for (const char *p = strstr(g, "<stop "); p && p < g_end && n_stops < 32;
         p = strstr(p + 1, "<stop ")) {
        char buf[32];
        attr(p, "offset", buf, sizeof buf);
        stop_at[n_stops] = atof(buf);
        attr(p, "stop-color", buf, sizeof buf);
        CHECK(sscanf(buf, "#%2x%2x%2x", (unsigned *)&stop_rgb[n_stops][0],
                     (unsigned *)&stop_rgb[n_stops][1], (unsigned *)&stop_rgb[n_stops][2]) == 3);
        n_stops++;
    }
    CHECK(n_stops >= 2 && stop_at[0] == 0 && stop_at[n_stops - 1] == 1);
    // the bar drawn with it, and its range labelled at its two ends
    const char *bar = strstr(mp.svg, "fill=\"url(#weight-scale)\"");
    CHECK(bar != NULL);
    if (!bar) {
        map_free(&mp);
        return;
    }
    while (strncmp(bar, "<rect", 5) != 0) bar--;
    double bar_x = svg_number(bar, "x"), bar_w = svg_number(bar, "width");
    TextEl ticks[16];
    int n_ticks = texts_of(mp.svg, "tick", ticks, 16);
    CHECK(n_ticks >= 2 && n_ticks <= 16);
    if (n_ticks >= 2 && n_ticks <= 16) {
        CHECK(strcmp(ticks[0].content, "0") == 0 && fabs(ticks[0].x - bar_x) < 0.5);
        CHECK(strcmp(ticks[n_ticks - 1].content, "1") == 0 &&
              fabs(ticks[n_ticks - 1].x - (bar_x + bar_w)) < 0.5);
        for (int i = 0; i < n_ticks; i++)  // each tick where its value is on the bar
            CHECK_NEAR(ticks[i].x, bar_x + atof(ticks[i].content) * bar_w, 0.5);
    }
    CHECK(strstr(mp.svg, "Colour: the weight P[t][u]") != NULL);
    // every cell: its colour is the gradient at its weight (the tooltip's, and the model's)
    int cells = 0, checked_low = 0, checked_high = 0;
    for (const char *p = strstr(mp.svg, "<title>P["); p; p = strstr(p + 1, "<title>P[")) {
        int t, u;
        double v;
        CHECK(sscanf(p, "<title>P[%d][%d] = %lf", &t, &u, &v) == 3);
        int l = cells / (3 * (T * (T + 1) / 2)), h = cells / (T * (T + 1) / 2) % 3;
        CHECK_NEAR(v, weight(&mp, l, h, t, u), 1e-4);
        const char *r = p;
        while (strncmp(r, "<rect", 5) != 0) r--;
        char fill[16];
        attr(r, "fill", fill, sizeof fill);
        unsigned rgb[3];
        CHECK(sscanf(fill, "#%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]) == 3);
        int i = 0;
        while (i < n_stops - 2 && v > stop_at[i + 1]) i++;
        double f = (v - stop_at[i]) / (stop_at[i + 1] - stop_at[i]);
        for (int c = 0; c < 3; c++)
            CHECK_NEAR(rgb[c], stop_rgb[i][c] + f * (stop_rgb[i + 1][c] - stop_rgb[i][c]), 1.01);
        checked_low += v < 0.1;
        checked_high += v > 0.9;
        cells++;
    }
    CHECK(cells == N_LAYER * 3 * T * (T + 1) / 2);
    CHECK_MSG(checked_low > 0 && checked_high > 0,
              "weights span the scale: %d below 0.1, %d above 0.9", checked_low, checked_high);
    map_free(&mp);
}

// Short prompts (T <= 16) get every visible weight printed in its cell to 2 decimals, in black
// on light cells and white on dark ones, within the cell; longer prompts get none.
static void test_amap_values_in_cells_for_short_prompts(void) {
    uint32_t prompt[BLOCK];
    int T = ascii_prompt(prompt, "abcabxcab ab c");  // 14 characters
    Map mp;
    CHECK(map_build(&mp, 2, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, prompt, T));
    if (!mp.svg) return;
    int n_expected = N_LAYER * 2 * T * (T + 1) / 2;
    TextEl *values = malloc(sizeof(TextEl) * (size_t)n_expected);
    int n = texts_of(mp.svg, "values", values, n_expected);
    CHECK(n == n_expected);
    const char *r = strstr(mp.svg, "<title>P[");
    while (r && strncmp(r, "<rect", 5) != 0) r--;
    double cell = r ? svg_number(r, "width") : 0;
    int i = 0, dark = 0, light = 0;
    for (int l = 0; l < N_LAYER; l++)
        for (int h = 0; h < 2; h++)
            for (int t = 0; t < T; t++)
                for (int u = 0; u <= t && i < n; u++, i++) {
                    char want[16];
                    double p = weight(&mp, l, h, t, u);
                    snprintf(want, sizeof want, "%.2f", p);
                    CHECK_MSG(strcmp(values[i].content, want) == 0, "value %d: '%s', want '%s'", i,
                              values[i].content, want);
                    if (p > 0.9) {
                        CHECK(strcmp(values[i].fill, "#fff") == 0);
                        dark++;
                    }
                    if (p < 0.3) {
                        CHECK(strcmp(values[i].fill, "#000") == 0);
                        light++;
                    }
                    double left, right;
                    text_extent(&values[i], &left, &right);
                    CHECK(right - left < cell);
                }
    CHECK(dark > 0 && light > 0);
    free(values);
    map_free(&mp);

    T = ascii_prompt(prompt, "abcabxcab ab cab ab");  // 19 characters: no values
    CHECK(map_build(&mp, 2, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, prompt, T));
    if (!mp.svg) return;
    CHECK(texts_of(mp.svg, "values", NULL, 0) == 0);
    CHECK(count(mp.svg, "<title>P[") == N_LAYER * 2 * T * (T + 1) / 2);  // the cells are all there
    char *notes = joined_text(mp.svg, "note");
    CHECK_MSG(strstr(notes, "Hover over a cell for its weight") &&
                  !strstr(notes, "numbers in the cells"),
              "%s", notes);
    free(notes);
    map_free(&mp);
}

// Every text of the figure lies inside the canvas (title and notes wrapped, nothing cut), the
// title read in full, and panel headers never overlap, for 1 to 6 heads and 1 to 20 characters.
static void test_amap_text_fits_the_canvas(void) {
    static const int heads[] = {1, 2, 3, 6}, lengths[] = {1, 2, 9, 20};
    static const char *const classes[] = {"title",   "note", "tick",    "header",
                                          "caption", "keys", "queries", "sums"};
    for (size_t a = 0; a < sizeof heads / sizeof heads[0]; a++)
        for (size_t b = 0; b < sizeof lengths / sizeof lengths[0]; b++) {
            uint32_t prompt[BLOCK];
            int T = ascii_prompt(prompt, "ab cax&<b>\nabcabxcab ab");
            T = lengths[b];
            Map mp;
            CHECK(map_build(&mp, heads[a], b % 2 ? ATTN_MASK_NONE : ATTN_MASK_CAUSAL,
                            b % 2 ? SOFTMAX_OVER_QUERIES : SOFTMAX_OVER_KEYS, prompt, T));
            if (!mp.svg) continue;
            double W = svg_number(mp.svg, "width"), H = svg_number(mp.svg, "height");
            for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
                int n = texts_of(mp.svg, classes[c], NULL, 0);
                TextEl *e = malloc(sizeof(TextEl) * (size_t)(n + 1));
                texts_of(mp.svg, classes[c], e, n);
                for (int i = 0; i < n; i++) {
                    if (e[i].rotated) continue;
                    double left, right;
                    text_extent(&e[i], &left, &right);
                    CHECK_MSG(left >= 0 && right <= W && e[i].y > 0 && e[i].y <= H,
                              "%d heads, T %d: %s text '%s' spans [%.0f, %.0f] at y %.0f, canvas "
                              "%.0f x %.0f",
                              heads[a], T, classes[c], e[i].content, left, right, e[i].y, W, H);
                }
                if (strcmp(classes[c], "header") == 0)  // headers of one row of panels stay apart
                    for (int i = 1; i < n; i++)
                        if (e[i].y == e[i - 1].y) {
                            double l0, r0, l1, r1;
                            text_extent(&e[i - 1], &l0, &r0);
                            text_extent(&e[i], &l1, &r1);
                            CHECK(r0 < l1);
                        }
                if (strcmp(classes[c], "title") == 0) {  // the whole title, over its lines
                    char title[512] = "", want[256];
                    for (int i = 0; i < n; i++) {
                        strcat(title, i ? " " : "");
                        strncat(title, e[i].content, sizeof title - strlen(title) - 1);
                    }
                    snprintf(want, sizeof want,
                             "Attention weights P: %d layers x %d head%s, prompt of %d character%s",
                             N_LAYER, heads[a], heads[a] == 1 ? "" : "s", T, T == 1 ? "" : "s");
                    CHECK_MSG(strcmp(title, want) == 0, "title '%s'", title);
                }
                free(e);
            }
            map_free(&mp);
        }
}

// One panel per (layer, head), each headed "layer l, head h", laid out layers down, heads across.
static void test_amap_one_panel_per_layer_and_head(void) {
    uint32_t prompt[BLOCK];
    int T = ascii_prompt(prompt, "abc abc");
    Map mp;
    CHECK(map_build(&mp, 4, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, prompt, T));
    if (!mp.svg) return;
    CHECK(count(mp.svg, "<g class=\"panel\">") == N_LAYER * 4);
    TextEl headers[N_LAYER * 4];
    CHECK(texts_of(mp.svg, "header", headers, N_LAYER * 4) == N_LAYER * 4);
    for (int l = 0; l < N_LAYER; l++)
        for (int h = 0; h < 4; h++) {
            char want[48];
            const TextEl *e = &headers[l * 4 + h];
            snprintf(want, sizeof want, "layer %d, head %d", l, h);
            CHECK_MSG(strcmp(e->content, want) == 0, "panel %d is '%s'", l * 4 + h, e->content);
            if (h > 0) CHECK(e->y == e[-1].y && e->x > e[-1].x);
            if (l > 0) CHECK(e->x == e[-4].x && e->y > e[-4].y);
        }
    map_free(&mp);
}

// The mask and the softmax axis: the correct model draws the causal triangle over a hatched
// future; a model that sees the future has all T x T cells drawn, the causal boundary marked, and
// its mistake named; softmax over queries prints each row's sum, which is not 1.
static void test_amap_names_the_attention_mistakes(void) {
    uint32_t prompt[BLOCK];
    int T = ascii_prompt(prompt, "abcab xabc");
    Map mp;
    CHECK(map_build(&mp, 2, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, prompt, T));
    if (!mp.svg) return;
    CHECK(count(mp.svg, "<title>P[") == N_LAYER * 2 * T * (T + 1) / 2);
    CHECK(count(mp.svg, "fill=\"url(#masked)\"") ==
          N_LAYER * 2 + 1);  // each matrix, and its legend
    char *notes = joined_text(mp.svg, "note");
    CHECK_MSG(strstr(notes, "This model: causal mask") &&
                  strstr(notes, "softmax over keys: each row sums to 1"),
              "%s", notes);
    CHECK_MSG(strstr(notes, "attn_scale 0.4082 = 1/sqrt(6)"), "%s",
              notes);  // as configured: "sqrt", head_dim 12 / 2
    free(notes);
    CHECK(!strstr(mp.svg, "MISTAKE") && !strstr(mp.svg, "class=\"boundary\"") &&
          texts_of(mp.svg, "sums", NULL, 0) == 0);
    map_free(&mp);

    static const char *const masks[] = {"none", "zero"};
    static const AttnMask mask_of[] = {ATTN_MASK_NONE, ATTN_MASK_ZERO};
    for (int k = 0; k < 2; k++) {
        CHECK(map_build(&mp, 2, mask_of[k], SOFTMAX_OVER_KEYS, prompt, T));
        if (!mp.svg) return;
        CHECK(count(mp.svg, "<title>P[") == N_LAYER * 2 * T * T);
        CHECK(count(mp.svg, "class=\"boundary\"") == N_LAYER * 2);
        CHECK(count(mp.svg, "url(#masked)\"") == 0);
        char want[64];
        snprintf(want, sizeof want, "mask &quot;%s&quot;, A MISTAKE", masks[k]);
        notes = joined_text(mp.svg, "mistake");
        CHECK_MSG(strstr(notes, want) && strstr(notes, "softmax over keys"), "%s", notes);
        free(notes);
        // weight above the diagonal is drawn and printed
        double future = 0;
        for (int t = 0; t < T; t++)
            for (int u = t + 1; u < T; u++) future += weight(&mp, 0, 0, t, u);
        CHECK(future > 0.1);
        CHECK(texts_of(mp.svg, "values", NULL, 0) == N_LAYER * 2 * T * T);
        map_free(&mp);
    }

    CHECK(map_build(&mp, 2, ATTN_MASK_CAUSAL, SOFTMAX_OVER_QUERIES, prompt, T));
    if (!mp.svg) return;
    notes = joined_text(mp.svg, "mistake");
    CHECK_MSG(strstr(notes, "This model: causal mask") &&
                  strstr(notes, "softmax over queries, A MISTAKE"),
              "%s", notes);
    free(notes);
    TextEl sums[N_LAYER * 2 * BLOCK];
    int n = texts_of(mp.svg, "sums", sums, N_LAYER * 2 * BLOCK);
    CHECK(n == N_LAYER * 2 * T);
    int not_one = 0;
    for (int i = 0; i < n && i < N_LAYER * 2 * T; i++) {
        int l = i / (2 * T), h = i / T % 2, t = i % T;
        double row = 0;
        for (int u = 0; u < T; u++) row += weight(&mp, l, h, t, u);
        char want[16];
        snprintf(want, sizeof want, "%.2f", row);
        CHECK_MSG(strcmp(sums[i].content, want) == 0, "row sum %d: '%s', want '%s'", i,
                  sums[i].content, want);
        not_one += strcmp(want, "1.00") != 0;
    }
    CHECK(not_one > 0);
    map_free(&mp);
}

const TestCase tests_attention_map[] = {
    {"attention_map_xml_checker_rejects_broken_svg", test_amap_xml_checker_rejects_broken_svg},
    {"attention_map_well_formed_with_prompt_labels", test_amap_well_formed_with_prompt_labels},
    {"attention_map_colour_bar_gives_cell_colours", test_amap_colour_bar_gives_cell_colours},
    {"attention_map_values_in_cells_for_short_prompts",
     test_amap_values_in_cells_for_short_prompts},
    {"attention_map_text_fits_the_canvas", test_amap_text_fits_the_canvas},
    {"attention_map_one_panel_per_layer_and_head", test_amap_one_panel_per_layer_and_head},
    {"attention_map_names_the_attention_mistakes", test_amap_names_the_attention_mistakes},
    {NULL, NULL},
};
