// tools/gencorpus.c: writes the trainer's default corpus, data/default.txt.
//
// Every line is made by a small random process written here (no text is copied from anywhere),
// drawn from our own seeded PRNG with integer-only decisions, so the output is byte-identical
// across runs, compilers and platforms. Lines are short (at most MAX_LINE chars with the newline)
// so a 64-char context window always holds a whole line: every dependency a model must learn is
// inside that window.
//
// The line kinds are chosen so that a model which only learns character statistics (what a
// transformer without working attention reduces to) stays clearly above the loss of one that
// attends back along the line:
//   sentence  English-like text from a tiny grammar, with number agreement that reaches back
//             across a relative clause, an object or a conjoined subject.
//   copy      a random letter span, " | ", the same span again (an induction head solves it).
//   rev       a short span and its reversal.
//   find      8 distinct letters, a query letter, the query's index within the line (the answer
//             four characters after the query: learned slowly, docs/mistakes.md section 4).
//   kv        3-5 letter=digit pairs and a lookup of one key.
//   brackets  random nesting of ()[]{} whose closers must match the innermost open bracket.
//
// With --stats the generator also reports, on stderr, how much randomness went into each kind
// of line: it knows its own process, so the sum over all random decisions of -ln p(decision) is
// the information content of the text (each line's decisions can be read back from the line, so
// nothing is counted twice). Divided by the number of characters, that is the irreducible loss,
// in nats per character, that a perfect model seeing the whole line would approach.
//
// Build: cc -std=c11 -O2 -o tools/gencorpus tools/gencorpus.c   (libc only, no -lm)

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/repeat_line.h"  // the --repeat line, shared with the page

#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#endif

#define DEFAULT_SEED  20240601u
#define DEFAULT_BYTES 350000u
#define MAX_LINE      60  // longest line in bytes, newline included (window is 64)
#define WINDOW        64  // the trainer's default block_size, for the --stats window figure

// ---------------------------------------------------------------------------------------------
// PRNG: splitmix64. Tiny, well mixed, and fully specified here so the stream never depends on
// the C library. Bounded draws use rejection instead of a plain modulo so that every choice is
// exactly uniform (which the entropy accounting below relies on).

typedef struct {
    uint64_t state;
} Rng;

static uint64_t rng_next(Rng *r) {
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Uniform in [0, n), n >= 1.
static uint64_t rng_below(Rng *r, uint64_t n) {
    uint64_t threshold = (0 - n) % n;  // 2^64 mod n: reject the short last bucket
    for (;;) {
        uint64_t x = rng_next(r);
        if (x >= threshold) return x % n;
    }
}

// ---------------------------------------------------------------------------------------------
// Natural log for the statistics only (never for a decision), written here so the program needs
// no libm. ln(x) = k ln 2 + 2 atanh((m-1)/(m+1)) with x = m 2^k, m in [1, 2).

static double ln(double x) {
    const double LN2 = 0.69314718055994530942;
    int k = 0;
    if (x <= 0) return 0;
    while (x >= 2) {
        x /= 2;
        k++;
    }
    while (x < 1) {
        x *= 2;
        k--;
    }
    double y = (x - 1) / (x + 1), y2 = y * y, term = y, sum = 0;
    for (int i = 1; i < 200 && term != 0; i += 2) {  // |y| <= 1/3: ~20 terms reach 1e-17
        sum += term / i;
        term *= y2;
    }
    return k * LN2 + 2 * sum;
}

// ---------------------------------------------------------------------------------------------
// The line being built, and the bookkeeping for --stats.

// K_REPEAT (--repeat only) comes after the weighted kinds: the default corpus never draws it.
enum {
    K_SENTENCE,
    K_COPY,
    K_REV,
    K_FIND,
    K_KV,
    K_BRACKETS,
    N_KINDS,
    K_REPEAT = N_KINDS,
    N_ALL_KINDS
};
static const char *const kind_names[N_ALL_KINDS] = {"sentence", "copy",     "rev",   "find",
                                                    "kv",       "brackets", "repeat"};
// Line-kind weights (out of 100). Sentences make samples look like text; the other kinds supply
// characters that are fully determined by earlier parts of the line, which only attention gets.
static const int kind_weights[N_KINDS] = {45, 12, 8, 14, 11, 10};

typedef struct {
    Rng rng;
    char line[128];
    int len;
    double nats;  // information drawn for the current line
    int answers;  // chars of the current line that copy or look up earlier chars of it
} Gen;

// A uniform choice among n options: costs ln(n) nats.
static int pick(Gen *g, int n) {
    g->nats += ln((double)n);
    return (int)rng_below(&g->rng, (uint64_t)n);
}

// A choice with integer weights (zero weight = not allowed): costs -ln(w_i / sum w).
static int pick_weighted(Gen *g, const int *w, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) total += w[i];
    int x = (int)rng_below(&g->rng, (uint64_t)total);
    for (int i = 0; i < n; i++) {
        if (x < w[i]) {
            g->nats += ln((double)total) - ln((double)w[i]);
            return i;
        }
        x -= w[i];
    }
    return n - 1;  // unreachable
}

static void put_char(Gen *g, char c) {
    if (g->len >= (int)sizeof g->line - 1) {
        fprintf(stderr, "gencorpus: internal error: line too long\n");
        exit(1);
    }
    g->line[g->len++] = c;
}

static void put(Gen *g, const char *s) {
    while (*s) put_char(g, *s++);
}

// A char that repeats or looks up something earlier in the same line.
static void put_answer(Gen *g, char c) {
    put_char(g, c);
    g->answers++;
}

// ---------------------------------------------------------------------------------------------
// Sentences. Word classes are disjoint (no word is both a noun and a verb, no plural equals a
// singular), so each sentence can be parsed back into the choices that made it.

typedef struct {
    const char *sg, *pl;
} Pair;

static const char *const det_sg[] = {"a", "the", "one", "this", "every", "my", "your", "no"};
static const char *const det_pl[] = {"the",   "two", "three", "some", "many",
                                     "these", "all", "my",    "your"};
static const char *const adjectives[] = {"red",   "old",   "big",   "small",  "happy",  "green",
                                         "blue",  "tall",  "quiet", "little", "young",  "odd",
                                         "empty", "angry", "brave", "warm",   "orange", "shy"};
static const Pair nouns[] = {
    {"cat", "cats"},       {"dog", "dogs"},     {"bird", "birds"},   {"fox", "foxes"},
    {"box", "boxes"},      {"tree", "trees"},   {"girl", "girls"},   {"boy", "boys"},
    {"king", "kings"},     {"queen", "queens"}, {"man", "men"},      {"woman", "women"},
    {"child", "children"}, {"horse", "horses"}, {"mouse", "mice"},   {"wolf", "wolves"},
    {"leaf", "leaves"},    {"apple", "apples"}, {"egg", "eggs"},     {"owl", "owls"},
    {"ant", "ants"},       {"book", "books"},   {"ball", "balls"},   {"cup", "cups"},
    {"ship", "ships"},     {"house", "houses"}, {"stone", "stones"}, {"hat", "hats"},
    {"cake", "cakes"},     {"frog", "frogs"},   {"bear", "bears"},   {"key", "keys"}};
static const Pair verbs_t[] = {  // transitive
    {"sees", "see"},       {"likes", "like"},    {"finds", "find"},   {"holds", "hold"},
    {"wants", "want"},     {"watches", "watch"}, {"chases", "chase"}, {"helps", "help"},
    {"follows", "follow"}, {"carries", "carry"}, {"has", "have"},     {"meets", "meet"}};
static const Pair verbs_i[] = {  // intransitive
    {"runs", "run"},   {"sleeps", "sleep"}, {"sings", "sing"}, {"waits", "wait"},
    {"jumps", "jump"}, {"smiles", "smile"}, {"falls", "fall"}, {"laughs", "laugh"},
    {"hides", "hide"}, {"sits", "sit"}};
static const char *const preps[] = {"in", "on", "near", "under", "behind", "with"};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

// Templates: space-separated slots; anything not listed below is emitted literally.
//   S  subject noun phrase (the sentence's number), adjective allowed   s  same, no adjective
//   O  object noun phrase (its own number), adjective allowed           o  same, no adjective
//   C  conjoined subject "NP and NP": the sentence is plural whatever the two nouns are
//   T  transitive verb agreeing with the subject    I  intransitive verb agreeing with it
//   B  bare transitive verb (after do/does)         D  "does"/"do" agreeing with the subject
//   P  preposition
// "." and "?" attach to the previous word. The lines listed show what the model must carry:
static const struct {
    const char *slots;
    int weight;
} templates[] = {
    {"S I .", 3},           // the old dog sleeps.
    {"S I P O .", 3},       // two cats sit under a red tree.
    {"S T O .", 5},         // the cat sees an orange box.
    {"s that T o I .", 3},  // the cat that sees the dogs runs.  (runs agrees with cat, not dogs)
    {"s T o and I .", 2},   // my dogs chase a cat and laugh.    (laugh agrees with dogs)
    {"C I .", 2},           // the cat and a dog run.            (plural from the "and")
    {"D s B O ?", 2},       // does the king like my apples?     (does -> singular noun, bare verb)
};

static int is_vowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

static void put_word(Gen *g, const char *w) {
    if (g->len > 0) put_char(g, ' ');
    put(g, w);
}

static void noun_phrase(Gen *g, int plural, int allow_adj) {
    int det = plural ? pick(g, COUNT(det_pl)) : pick(g, COUNT(det_sg));
    int adj = -1;
    if (allow_adj) {
        static const int w[2] = {2, 1};  // a third of the phrases get an adjective
        if (pick_weighted(g, w, 2) == 1) adj = pick(g, COUNT(adjectives));
    }
    int noun = pick(g, COUNT(nouns));
    const char *next = adj >= 0 ? adjectives[adj] : nouns[noun].sg;
    const char *d = plural ? det_pl[det] : det_sg[det];
    // "a" becomes "an" before a vowel: decided by the next word, so it costs nothing.
    if (strcmp(d, "a") == 0 && is_vowel(next[0])) d = "an";
    put_word(g, d);
    if (adj >= 0) put_word(g, adjectives[adj]);
    put_word(g, plural ? nouns[noun].pl : nouns[noun].sg);
}

static void sentence(Gen *g) {
    int tw[COUNT(templates)];
    for (int i = 0; i < COUNT(templates); i++) tw[i] = templates[i].weight;
    const char *slots = templates[pick_weighted(g, tw, COUNT(templates))].slots;
    // The subject's number; a conjoined subject is always plural, so no choice is made then.
    int plural = strchr(slots, 'C') ? 1 : pick(g, 2);
    for (const char *p = slots; *p;) {
        const char *end = strchr(p, ' ');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char tok[16];
        memcpy(tok, p, n);
        tok[n] = 0;
        p += n + (end ? 1 : 0);
        if (n == 1 && strchr("SsOoCTIBDP", tok[0])) {
            switch (tok[0]) {
            case 'S':
                noun_phrase(g, plural, 1);
                break;
            case 's':
                noun_phrase(g, plural, 0);
                break;
            case 'O':
                noun_phrase(g, pick(g, 2), 1);
                break;
            case 'o':
                noun_phrase(g, pick(g, 2), 0);
                break;
            case 'C':
                noun_phrase(g, pick(g, 2), 1);
                put_word(g, "and");
                noun_phrase(g, pick(g, 2), 1);
                break;
            case 'T': {
                int v = pick(g, COUNT(verbs_t));
                put_word(g, plural ? verbs_t[v].pl : verbs_t[v].sg);
                break;
            }
            case 'I': {
                int v = pick(g, COUNT(verbs_i));
                put_word(g, plural ? verbs_i[v].pl : verbs_i[v].sg);
                break;
            }
            case 'B': {
                int v = pick(g, COUNT(verbs_t));
                put_word(g, verbs_t[v].pl);
                break;
            }
            case 'D':
                put_word(g, plural ? "do" : "does");
                break;
            case 'P':
                put_word(g, preps[pick(g, COUNT(preps))]);
                break;
            }
        } else if (strcmp(tok, ".") == 0 || strcmp(tok, "?") == 0) {
            put(g, tok);
        } else {
            put_word(g, tok);
        }
    }
}

// Longest word of a list, for the line-length guarantee below.
static int max_len(const char *const *w, int n) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if ((int)strlen(w[i]) > m) m = (int)strlen(w[i]);
    return m;
}
static int max_len_pair(const Pair *w, int n) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if ((int)strlen(w[i].sg) > m) m = (int)strlen(w[i].sg);
        if ((int)strlen(w[i].pl) > m) m = (int)strlen(w[i].pl);
    }
    return m;
}

// The longest sentence a template can make (newline excluded). Checked at startup for every
// template, so editing a word list can never silently produce lines longer than the window.
static int template_max_len(const char *slots) {
    int det = max_len(det_sg, COUNT(det_sg));
    if (max_len(det_pl, COUNT(det_pl)) > det) det = max_len(det_pl, COUNT(det_pl));
    if (det < 2) det = 2;  // "an"
    int np = det + 1 + max_len_pair(nouns, COUNT(nouns));
    int np_adj = np + 1 + max_len(adjectives, COUNT(adjectives));
    int total = 0, words = 0;
    for (const char *p = slots; *p;) {
        const char *end = strchr(p, ' ');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int w = (int)n;
        if (n == 1) {
            switch (*p) {
            case 'S':
            case 'O':
                w = np_adj;
                break;
            case 's':
            case 'o':
                w = np;
                break;
            case 'C':
                w = 2 * np_adj + 5;
                break;
            case 'T':
            case 'B':
                w = max_len_pair(verbs_t, COUNT(verbs_t));
                break;
            case 'I':
                w = max_len_pair(verbs_i, COUNT(verbs_i));
                break;
            case 'D':
                w = 4;
                break;
            case 'P':
                w = max_len(preps, COUNT(preps));
                break;
            case '.':
            case '?':
                w = 1;
                words--;
                break;  // attached: no space before it
            }
        }
        total += w;
        words++;
        p += n + (end ? 1 : 0);
    }
    return total + (words - 1);
}

// ---------------------------------------------------------------------------------------------
// The algorithmic kinds. Letters are drawn from all 26 lowercase letters unless said otherwise.

static char letter(Gen *g) { return (char)('a' + pick(g, 26)); }

// copy: qzkmw | qzkmw
static void copy_line(Gen *g) {
    char span[16];
    int n = 3 + pick(g, 10);  // 3..12 letters
    put(g, "copy: ");
    for (int i = 0; i < n; i++) put_char(g, span[i] = letter(g));
    put(g, " | ");
    for (int i = 0; i < n; i++) put_answer(g, span[i]);
}

// repeat (--repeat): base/repeat_line.h's line, drawn with pick (its information counted).
static int repeat_pick(void *g, int n) { return pick((Gen *)g, n); }
static void repeat_line(Gen *g) {
    char line[REPEAT_LINE_MAX];
    int len = repeat_line_write(line, repeat_pick, g);
    for (int i = 0; i < len / 2; i++) put_char(g, line[i]);
    for (int i = len / 2; i < len; i++) put_answer(g, line[i]);
}

// rev: abcd > dcba
static void rev_line(Gen *g) {
    char span[16];
    int n = 3 + pick(g, 5);  // 3..7 letters: reversing needs relative positions, keep it short
    put(g, "rev: ");
    for (int i = 0; i < n; i++) put_char(g, span[i] = letter(g));
    put(g, " > ");
    for (int i = n - 1; i >= 0; i--) put_answer(g, span[i]);
}

// Choose k distinct letters (a partial Fisher-Yates shuffle of the alphabet).
static void distinct_letters(Gen *g, char *out, int k) {
    char abc[26];
    for (int i = 0; i < 26; i++) abc[i] = (char)('a' + i);
    for (int i = 0; i < k; i++) {
        int j = i + pick(g, 26 - i);
        char t = abc[i];
        abc[i] = abc[j];
        abc[j] = t;
        out[i] = abc[i];
    }
}

// find: hcmqxwad q=x -> 5
static void find_line(Gen *g) {
    char keys[8];
    distinct_letters(g, keys, 8);
    int q = pick(g, 8);
    put(g, "find: ");
    for (int i = 0; i < 8; i++) put_char(g, keys[i]);
    put(g, " q=");
    put_char(g, keys[q]);
    put(g, " -> ");
    put_answer(g, (char)('0' + q));
}

// kv: a=3 f=7 m=1 ; f? 7
static void kv_line(Gen *g) {
    char keys[5], vals[5];
    int n = 3 + pick(g, 3);  // 3..5 pairs: longer recall was too hard for the small model
    distinct_letters(g, keys, n);
    put(g, "kv:");
    for (int i = 0; i < n; i++) {
        vals[i] = (char)('0' + pick(g, 10));
        put_char(g, ' ');
        put_char(g, keys[i]);
        put_char(g, '=');
        put_char(g, vals[i]);
    }
    int q = pick(g, n);
    put(g, " ; ");
    put_char(g, keys[q]);
    put(g, "? ");
    put_answer(g, vals[q]);
}

// [ ( a { b } ) c ]  One outer group; inside, a random walk of "open", "letter", "close" steps.
// Each group holds 1 to 3 items and nesting is at most 3 deep; the outer group leans towards
// sub-groups and inner ones towards letters, which spreads line lengths evenly over 3..25 tokens
// instead of piling them at "( a )" and at the budget. A token budget that always leaves room
// for the closers still owed keeps every line under MAX_LINE. Letters come from a..h only, to
// keep the line's randomness on the structure. Each closer is fixed by the innermost open
// bracket: that is what the model must attend to.
#define BR_MAX_TOKENS 28  // 28 tokens + 27 spaces = 55 chars
#define BR_MAX_DEPTH  3
#define BR_MAX_ITEMS  3
static void brackets_line(Gen *g) {
    static const char opens[] = "([{", closes[] = ")]}";
    // Step weights by the current depth (1-based): open a group, write a letter, close.
    static const int w_open[BR_MAX_DEPTH] = {3, 1, 0}, w_letter[BR_MAX_DEPTH] = {1, 2, 1},
                     w_close[BR_MAX_DEPTH] = {1, 2, 2};
    int stack[BR_MAX_DEPTH], items[BR_MAX_DEPTH];
    int depth = 0, tokens = 0;
    stack[depth] = pick(g, 3);
    items[depth++] = 0;
    put_char(g, opens[stack[0]]);
    tokens = 1;
    while (depth > 0) {
        int owed = depth;  // closers still needed
        int full = items[depth - 1] >= BR_MAX_ITEMS;
        enum { OPEN, LETTER, CLOSE };
        int w[3];
        w[OPEN] = (!full && depth < BR_MAX_DEPTH && tokens + 3 + owed <= BR_MAX_TOKENS)
                      ? w_open[depth - 1]
                      : 0;
        w[LETTER] = (!full && tokens + 1 + owed <= BR_MAX_TOKENS) ? w_letter[depth - 1] : 0;
        w[CLOSE] = items[depth - 1] > 0 ? w_close[depth - 1] : 0;  // no empty groups
        int step = pick_weighted(g, w, 3);
        put_char(g, ' ');
        tokens++;
        if (step == OPEN) {
            items[depth - 1]++;
            stack[depth] = pick(g, 3);
            items[depth] = 0;
            put_char(g, opens[stack[depth++]]);
        } else if (step == LETTER) {
            items[depth - 1]++;
            put_char(g, (char)('a' + pick(g, 8)));
        } else {
            put_answer(g, closes[stack[--depth]]);
        }
    }
}

// ---------------------------------------------------------------------------------------------

typedef struct {
    long lines[N_ALL_KINDS], chars[N_ALL_KINDS], answers[N_ALL_KINDS];
    double nats[N_ALL_KINDS];
    long long bigram[128][128], unigram[128];
    double cut_positions;  // sum over chars of window positions whose context lacks the line start
    int max_line;
    int prev;  // previous char, for the bigram counts
} Stats;

static void usage(FILE *f) {
    fprintf(f,
            "usage: gencorpus [--seed N] [--bytes N] [--repeat P] [-o FILE] [--stats]\n"
            "  Writes the default training corpus (whole lines until at least N bytes).\n"
            "  --seed N   PRNG seed (default %u)\n"
            "  --bytes N  target size in bytes (default %u)\n"
            "  --repeat P make P%% of the lines (0..100, default 0) a random string of 6-16 "
            "letters twice\n"
            "             (docs/induction.md); 100: those lines only\n"
            "  -o FILE    write to FILE instead of stdout\n"
            "  --stats    print per-kind counts and the entropy floor to stderr\n",
            DEFAULT_SEED, DEFAULT_BYTES);
}

static int parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return 0;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 1;
}

static void print_stats(const Stats *st) {
    long tl = 0, tc = 0, ta = 0;
    double tn = 0;
    int n_kinds = st->lines[K_REPEAT] ? N_ALL_KINDS : N_KINDS;  // repeat: with --repeat only
    for (int k = 0; k < n_kinds; k++) {
        tl += st->lines[k];
        tc += st->chars[k];
        ta += st->answers[k];
        tn += st->nats[k];
    }
    fprintf(stderr, "%-9s %7s %6s %8s %6s %9s %8s\n", "kind", "lines", "lines%", "chars", "chars%",
            "nats/char", "answer%");
    for (int k = 0; k < n_kinds; k++)
        fprintf(stderr, "%-9s %7ld %5.1f%% %8ld %5.1f%% %9.3f %7.1f%%\n", kind_names[k],
                st->lines[k], 100.0 * st->lines[k] / tl, st->chars[k], 100.0 * st->chars[k] / tc,
                st->chars[k] ? st->nats[k] / st->chars[k] : 0.0,
                st->chars[k] ? 100.0 * st->answers[k] / st->chars[k] : 0.0);
    fprintf(stderr, "%-9s %7ld %5.1f%% %8ld %5.1f%% %9.3f %7.1f%%\n", "total", tl, 100.0, tc, 100.0,
            tn / tc, 100.0 * ta / tc);

    // What simpler models can reach, measured on this text (plug-in estimates).
    int vocab = 0;
    double h1 = 0, h2 = 0;
    long long n1 = 0, n2 = 0;
    for (int a = 0; a < 128; a++) n1 += st->unigram[a];
    for (int a = 0; a < 128; a++) {
        if (!st->unigram[a]) continue;
        vocab++;
        h1 -= (double)st->unigram[a] / n1 * ln((double)st->unigram[a] / n1);
    }
    for (int a = 0; a < 128; a++) {
        long long ctx = 0;
        for (int b = 0; b < 128; b++) ctx += st->bigram[a][b];
        n2 += ctx;
        for (int b = 0; b < 128; b++)
            if (st->bigram[a][b])
                h2 -= (double)st->bigram[a][b] * ln((double)st->bigram[a][b] / ctx);
    }
    h2 /= (double)n2;
    fprintf(stderr, "vocabulary: %d chars; uniform guess ln(V) = %.3f nats/char\n", vocab,
            ln(vocab));
    fprintf(stderr, "unigram entropy: %.3f nats/char (char frequencies only)\n", h1);
    fprintf(stderr,
            "bigram entropy:  %.3f nats/char (previous char only: a model without attention)\n",
            h2);
    fprintf(stderr, "entropy floor:   %.3f nats/char (true process, whole line visible)\n",
            tn / tc);
    fprintf(stderr,
            "answer chars:    %.1f%% of chars repeat or look up earlier chars of their line\n",
            100.0 * ta / tc);
    fprintf(stderr,
            "window cut-off:  %.1f%% of predictions in a %d-char window do not see their line's "
            "start\n",
            100.0 * st->cut_positions / ((double)tc * WINDOW), WINDOW);
    fprintf(stderr, "longest line:    %d bytes with the newline\n", st->max_line);
}

int main(int argc, char **argv) {
    uint64_t seed = DEFAULT_SEED, bytes = DEFAULT_BYTES;
    const char *out_path = NULL;
    int want_stats = 0, repeat = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--seed") == 0 || strcmp(a, "--bytes") == 0) {
            uint64_t v;
            if (i + 1 >= argc || !parse_u64(argv[i + 1], &v)) {
                fprintf(stderr, "gencorpus: error: %s needs a non-negative integer\n", a);
                return 2;
            }
            if (a[2] == 's')
                seed = v;
            else
                bytes = v;
            i++;
        } else if (strcmp(a, "--repeat") == 0) {
            uint64_t v = 0;
            if (i + 1 >= argc || !parse_u64(argv[i + 1], &v) || v > 100) {
                fprintf(stderr,
                        "gencorpus: error: --repeat needs a percentage, an integer from 0 to 100 "
                        "(got '%s')\n",
                        i + 1 < argc ? argv[i + 1] : "");
                return 2;
            }
            repeat = (int)v;
            i++;
        } else if (strcmp(a, "-o") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "gencorpus: error: -o needs a file name\n");
                return 2;
            }
            out_path = argv[++i];
        } else if (strcmp(a, "--stats") == 0) {
            want_stats = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "gencorpus: error: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (bytes < 1 || bytes > 1000000000u) {
        fprintf(stderr, "gencorpus: error: --bytes must be between 1 and 1000000000\n");
        return 2;
    }
    for (int t = 0; t < COUNT(templates); t++) {
        if (template_max_len(templates[t].slots) + 1 > MAX_LINE) {
            fprintf(stderr, "gencorpus: internal error: template '%s' can make a %d-char line\n",
                    templates[t].slots, template_max_len(templates[t].slots) + 1);
            return 1;
        }
    }

    FILE *out = stdout;
    if (out_path) {
        out = fopen(out_path, "wb");  // binary: '\n' stays one byte on every platform
        if (!out) {
            perror(out_path);
            return 1;
        }
    } else {
#ifdef _WIN32
        _setmode(_fileno(stdout), _O_BINARY);
#endif
    }

    static Stats st;
    st.prev = '\n';
    Gen g;
    memset(&g, 0, sizeof g);
    g.rng.state = seed;
    uint64_t written = 0;
    while (written < bytes) {
        g.len = 0;
        g.nats = 0;
        g.answers = 0;
        // with --repeat P, a repeat line with probability P/100 (no draw without it: the default
        // corpus's stream is unchanged)
        int repeat_w[2] = {100 - repeat, repeat};
        int kind = repeat > 0 && pick_weighted(&g, repeat_w, 2) == 1 ? K_REPEAT : -1;
        if (kind < 0) kind = pick_weighted(&g, kind_weights, N_KINDS);
        switch (kind) {
        case K_REPEAT:
            repeat_line(&g);
            break;
        case K_SENTENCE:
            sentence(&g);
            break;
        case K_COPY:
            copy_line(&g);
            break;
        case K_REV:
            rev_line(&g);
            break;
        case K_FIND:
            find_line(&g);
            break;
        case K_KV:
            kv_line(&g);
            break;
        case K_BRACKETS:
            brackets_line(&g);
            break;
        }
        put_char(&g, '\n');  // the newline is fixed by the line's structure: no choice
        if (g.len > MAX_LINE) {
            fprintf(stderr, "gencorpus: internal error: %d-char line\n", g.len);
            return 1;
        }
        if (fwrite(g.line, 1, (size_t)g.len, out) != (size_t)g.len) {
            perror("gencorpus: write");
            return 1;
        }
        written += (uint64_t)g.len;

        st.lines[kind]++;
        st.chars[kind] += g.len;
        st.answers[kind] += g.answers;
        st.nats[kind] += g.nats;
        if (g.len > st.max_line) st.max_line = g.len;
        for (int j = 0; j < g.len; j++) {
            int c = (unsigned char)g.line[j];
            st.unigram[c]++;
            st.bigram[st.prev][c]++;
            st.prev = c;
            // The char at offset j is predicted from a context of i+1 chars at window position i;
            // the line's first char is in it only when j <= i + 1.
            if (j > 1) st.cut_positions += (j - 1 < WINDOW) ? j - 1 : WINDOW;
        }
    }
    if (fflush(out) != 0 || ferror(out) || (out_path && fclose(out) != 0)) {
        perror("gencorpus: write");
        return 1;
    }
    if (want_stats) print_stats(&st);
    return 0;
}
