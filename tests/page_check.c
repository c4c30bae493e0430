// tests/page_check.c: a small reader of the step-through pages (see page_check.h). It knows only
// the markup report/html.c writes (double-quoted attributes, cells of plain text), which Chromium's
// --dump-dom serialises back in the same form, with hidden="" and disabled="" where the script
// set them.
#define _POSIX_C_SOURCE 200809L
#include "page_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// ---------------------------------------------------------------------------------------------
// tags and attributes

typedef struct {
    const char *start, *end;  // '<' and the '>' that closes the tag
    char name[16];            // lower-case; "/td" for an end tag
} Tag;

// The next tag at or after p, or 0 at the end of the text. Comments and <script>/<style>
// contents are skipped whole.
static int next_tag(const char *p, Tag *t) {
    for (;;) {
        const char *lt = strchr(p, '<');
        if (!lt) return 0;
        if (strncmp(lt, "<!--", 4) == 0) {
            const char *e = strstr(lt, "-->");
            if (!e) return 0;
            p = e + 3;
            continue;
        }
        const char *gt = strchr(lt, '>');
        if (!gt) return 0;
        size_t n = 0;
        const char *c = lt + 1;
        while (*c && c < gt && *c != ' ' && *c != '\n' && *c != '\t' && *c != '/' &&
               n + 1 < sizeof t->name) {
            t->name[n++] = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
            c++;
        }
        if (*c == '/' && n == 0) {  // end tag
            t->name[n++] = '/';
            c++;
            while (*c && c < gt && *c != ' ' && *c != '>' && n + 1 < sizeof t->name) {
                t->name[n++] = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
                c++;
            }
        }
        t->name[n] = 0;
        t->start = lt;
        t->end = gt;
        if (strcmp(t->name, "script") == 0 || strcmp(t->name, "style") == 0) {
            char close[24];
            snprintf(close, sizeof close, "</%s", t->name);
            const char *e = strstr(gt, close);
            if (!e) return 0;
            // report the opening tag; the caller continues after its contents
            t->end = e - 1;
        }
        return 1;
    }
}

// Attribute `name` of the tag: 1 when present (value copied to out, "" for a bare attribute).
static int attr(const Tag *t, const char *name, char *out, size_t n) {
    size_t len = strlen(name);
    const char *p = t->start + 1;
    while (*p != ' ' && *p != '\n' && p < t->end) p++;  // past the tag name
    while (p < t->end) {
        while (p < t->end && (*p == ' ' || *p == '\n' || *p == '\t')) p++;
        const char *a = p;
        while (p < t->end && *p != '=' && *p != ' ' && *p != '\n' && *p != '>' && *p != '/') p++;
        size_t alen = (size_t)(p - a);
        const char *v = NULL;
        size_t vlen = 0;
        if (p < t->end && *p == '=') {
            p++;
            char q = *p;
            if (q == '"' || q == '\'') {
                v = ++p;
                while (p < t->end && *p != q) p++;
                vlen = (size_t)(p - v);
                p++;
            } else {
                v = p;
                while (p < t->end && *p != ' ' && *p != '>') p++;
                vlen = (size_t)(p - v);
            }
        } else if (alen == 0) {
            p++;
            continue;
        }
        if (alen == len && strncasecmp(a, name, len) == 0) {
            if (out && n) {
                size_t k = vlen < n - 1 ? vlen : n - 1;
                if (v) memcpy(out, v, k);
                out[v ? k : 0] = 0;
            }
            return 1;
        }
    }
    return 0;
}

// Whether the tag's class attribute holds the word w.
static int has_class(const Tag *t, const char *w);

// A cell's marks as letters: c(hanged), m(ax), k (masked), w(rong), in that order.
static void read_marks(const Tag *t, char *mk) {
    int k = 0;
    if (has_class(t, "c")) mk[k++] = 'c';
    if (has_class(t, "m")) mk[k++] = 'm';
    if (has_class(t, "k")) mk[k++] = 'k';
    if (has_class(t, "w")) mk[k++] = 'w';
    mk[k] = 0;
}

static int has_class(const Tag *t, const char *w) {
    char cls[256];
    if (!attr(t, "class", cls, sizeof cls)) return 0;
    size_t n = strlen(w);
    for (const char *p = cls; (p = strstr(p, w)) != NULL; p += n)
        if ((p == cls || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return 1;
    return 0;
}

// Append text [a, b) to out (capacity n) with the entities report/html.c writes decoded and runs of
// white space collapsed to one space.
static void add_text(char *out, size_t n, const char *a, const char *b) {
    size_t len = strlen(out);
    static const struct {
        const char *ent, *ch;
    } ents[] = {{"&amp;", "&"},
                {"&lt;", "<"},
                {"&gt;", ">"},
                {"&quot;", "\""},
                {"&#39;", "'"},
                {"&nbsp;", " "},
                {"&larr;", "\xe2\x86\x90"},
                {"&rarr;", "\xe2\x86\x92"},
                {"&ndash;", "\xe2\x80\x93"}};
    for (const char *p = a; p < b && len + 4 < n;) {
        if (*p == '&') {
            int hit = 0;
            for (size_t e = 0; e < sizeof ents / sizeof ents[0]; e++) {
                size_t el = strlen(ents[e].ent);
                if ((size_t)(b - p) >= el && strncmp(p, ents[e].ent, el) == 0) {
                    size_t cl = strlen(ents[e].ch);
                    memcpy(out + len, ents[e].ch, cl);
                    len += cl;
                    p += el;
                    hit = 1;
                    break;
                }
            }
            if (hit) continue;
        }
        char c = *p++;
        if (c == '\n' || c == '\t' || c == '\r') c = ' ';
        if (c == ' ' && (len == 0 || out[len - 1] == ' ')) continue;
        out[len++] = c;
    }
    out[len] = 0;
}

// The text of an element from after its start tag t to its matching end tag `/name` (nested
// tags dropped); returns where the end tag ends.
static const char *element_text(const Tag *t, const char *end_name, char *out, size_t n) {
    out[0] = 0;
    const char *p = t->end + 1;
    Tag u;
    while (next_tag(p, &u)) {
        add_text(out, n, p, u.start);
        p = u.end + 1;
        if (strcmp(u.name, end_name) == 0) break;
    }
    size_t len = strlen(out);
    while (len && out[len - 1] == ' ') out[--len] = 0;
    return p;
}

// ---------------------------------------------------------------------------------------------
// parsing a page

static void *grow(void *arr, int n, size_t elem) {
    void *a = realloc(arr, (size_t)(n + 1) * elem);
    if (!a) {
        fprintf(stderr, "page_check: out of memory\n");
        exit(1);
    }
    memset((char *)a + (size_t)n * elem, 0, elem);
    return a;
}

int pc_parse(PcPage *page, const char *html, char *err, size_t errlen) {
    memset(page, 0, sizeof *page);
    page->controls_hidden = -1;
    Tag t;
    const char *p = html;
    PcStep *step = NULL;
    PcTable *table = NULL;
    int seq_hidden = 0, in_seq = 0;
    int depth = 0, panel_depth = -1, panel_where = 0, panel_hidden = 0;
    int in_thead = 0;
    char buf[2048];
    while (next_tag(p, &t)) {
        p = t.end + 1;
        const char *n = t.name;
        if (strcmp(n, "div") == 0) {
            depth++;
            if (has_class(&t, "panel")) {
                panel_depth = depth;
                panel_where = has_class(&t, "alt") ? 2 : 1;
                panel_hidden = attr(&t, "hidden", NULL, 0);
            }
        } else if (strcmp(n, "/div") == 0) {
            if (depth == panel_depth) panel_depth = -1;
            depth--;
        } else if (strcmp(n, "meta") == 0) {
            char he[64];
            if (attr(&t, "http-equiv", he, sizeof he) &&
                strcasecmp(he, "Content-Security-Policy") == 0)
                attr(&t, "content", page->csp, sizeof page->csp);
        } else if (strcmp(n, "nav") == 0 && has_class(&t, "controls")) {
            page->controls_hidden = attr(&t, "hidden", NULL, 0);
        } else if (strcmp(n, "button") == 0) {
            char id[32] = "";
            attr(&t, "id", id, sizeof id);
            if (strcmp(id, "prev") == 0) page->prev_disabled = attr(&t, "disabled", NULL, 0);
            if (strcmp(id, "next") == 0) page->next_disabled = attr(&t, "disabled", NULL, 0);
            if (strcmp(id, "alt") == 0) {
                char pressed[16] = "";
                page->has_switch = 1;
                page->switch_hidden = attr(&t, "hidden", NULL, 0);
                attr(&t, "aria-pressed", pressed, sizeof pressed);
                page->switch_pressed = strcmp(pressed, "true") == 0;
            }
        } else if (strcmp(n, "span") == 0 && attr(&t, "id", buf, sizeof buf) &&
                   strcmp(buf, "status") == 0) {
            p = element_text(&t, "/span", page->status, sizeof page->status);
        } else if (strcmp(n, "code") == 0 && has_class(&t, "cmd")) {
            p = element_text(&t, "/code", page->command, sizeof page->command);
        } else if (strcmp(n, "section") == 0 && has_class(&t, "seq")) {
            in_seq = 1;
            seq_hidden = attr(&t, "hidden", NULL, 0);
        } else if (strcmp(n, "section") == 0 && has_class(&t, "step")) {
            page->steps = grow(page->steps, page->n_steps, sizeof(PcStep));
            step = &page->steps[page->n_steps++];
            char num[16] = "0";
            attr(&t, "data-step", num, sizeof num);
            step->number = atoi(num);
            step->hidden = attr(&t, "hidden", NULL, 0) || (in_seq && seq_hidden);
        } else if (strcmp(n, "/section") == 0) {
            if (step)
                step = NULL;
            else
                in_seq = seq_hidden = 0;
        } else if (!step) {
            continue;
        } else if (strcmp(n, "span") == 0 && has_class(&t, "title") && !step->title[0]) {
            p = element_text(&t, "/span", step->title, sizeof step->title);
        } else if (strcmp(n, "p") == 0 && has_class(&t, "caption")) {
            p = element_text(&t, "/p", step->caption, sizeof step->caption);
        } else if (strcmp(n, "table") == 0) {
            step->tables = grow(step->tables, step->n_tables, sizeof(PcTable));
            table = &step->tables[step->n_tables++];
            attr(&t, "data-key", table->key, sizeof table->key);
            char v[16] = "0";
            attr(&t, "data-rows", v, sizeof v);
            table->rows = atoi(v);
            snprintf(v, sizeof v, "0");
            attr(&t, "data-cols", v, sizeof v);
            table->cols = atoi(v);
            table->where = panel_depth >= 0 ? panel_where : 0;
            table->hidden = panel_depth >= 0 && panel_hidden;
            if (table->rows < 0 || table->cols < 0 || table->rows > 4096 || table->cols > 4096) {
                snprintf(err, errlen, "step %d: table %s has a bad shape", step->number,
                         table->key);
                return 0;
            }
            size_t cells = (size_t)table->rows * table->cols;
            table->cells = calloc(cells ? cells : 1, sizeof *table->cells);
            table->marks = calloc(cells ? cells : 1, sizeof *table->marks);
            table->extra_cells = calloc((size_t)(table->rows ? table->rows : 1) * PC_MAX_EXTRA,
                                        sizeof *table->extra_cells);
            table->extra_marks = calloc((size_t)(table->rows ? table->rows : 1) * PC_MAX_EXTRA,
                                        sizeof *table->extra_marks);
        } else if (strcmp(n, "/table") == 0) {
            table = NULL;
        } else if (!table) {
            continue;
        } else if (strcmp(n, "thead") == 0) {
            in_thead = 1;
        } else if (strcmp(n, "/thead") == 0) {
            in_thead = 0;
        } else if (strcmp(n, "th") == 0 && in_thead && has_class(&t, "x")) {
            if (table->n_extra < PC_MAX_EXTRA)
                attr(&t, "data-key", table->extra_key[table->n_extra++], 64);
        } else if (strcmp(n, "td") == 0) {
            char text[32];
            p = element_text(&t, "/td", text, sizeof text);
            if (has_class(&t, "v")) {
                if ((size_t)table->n_cells >= (size_t)table->rows * table->cols) {
                    snprintf(err, errlen, "step %d: table %s has more cells than %d x %d",
                             step->number, table->key, table->rows, table->cols);
                    return 0;
                }
                snprintf(table->cells[table->n_cells], 32, "%s", text);
                char *mk = table->marks[table->n_cells++];
                read_marks(&t, mk);
            } else if (has_class(&t, "x")) {
                if (table->n_extra_cells >= table->rows * PC_MAX_EXTRA) {
                    snprintf(err, errlen, "step %d: table %s has too many extra cells",
                             step->number, table->key);
                    return 0;
                }
                char *mk = table->extra_marks[table->n_extra_cells];
                read_marks(&t, mk);
                snprintf(table->extra_cells[table->n_extra_cells++], 32, "%s", text);
            }
        }
    }
    if (page->n_steps == 0) {
        snprintf(err, errlen, "no <section class=\"step\"> in the page");
        return 0;
    }
    return 1;
}

void pc_free(PcPage *page) {
    for (int i = 0; i < page->n_steps; i++) {
        PcStep *s = &page->steps[i];
        for (int j = 0; j < s->n_tables; j++) {
            free(s->tables[j].cells);
            free(s->tables[j].marks);
            free(s->tables[j].extra_cells);
            free(s->tables[j].extra_marks);
        }
        free(s->tables);
    }
    free(page->steps);
    memset(page, 0, sizeof *page);
}

// ---------------------------------------------------------------------------------------------
// the JSON side

const cJSON *pc_json_get(const cJSON *root, const char *key) {
    const cJSON *node = root;
    for (const char *p = key; node;) {
        const char *dot = strchr(p, '.');
        char part[64];
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n == 0 || n >= sizeof part) return NULL;
        memcpy(part, p, n);
        part[n] = 0;
        if (cJSON_IsArray(node) && strspn(part, "0123456789") == n)
            node = cJSON_GetArrayItem(node, atoi(part));
        else
            node = cJSON_GetObjectItemCaseSensitive(node, part);
        if (!dot) break;
        p = dot + 1;
    }
    return node;
}

void pc_format(char *buf, size_t n, const cJSON *num) {
    if (cJSON_IsNumber(num))
        snprintf(buf, n, "%.6f", num->valuedouble);
    else if (cJSON_IsNull(num))
        snprintf(buf, n, "-inf");
    else
        snprintf(buf, n, "(not a number)");
}

// The entry (r, c) of a JSON matrix, or entry r of a JSON vector (c must be 0).
static const cJSON *json_at(const cJSON *a, int r, int c) {
    const cJSON *row = cJSON_GetArrayItem(a, r);
    if (!row) return NULL;
    if (cJSON_IsArray(row)) return cJSON_GetArrayItem(row, c);
    return c == 0 ? row : NULL;
}

static int json_shape(const cJSON *a, int *rows, int *cols) {
    if (!cJSON_IsArray(a)) return 0;
    *rows = cJSON_GetArraySize(a);
    const cJSON *first = cJSON_GetArrayItem(a, 0);
    *cols = first && cJSON_IsArray(first) ? cJSON_GetArraySize(first) : 1;
    return 1;
}

// ---------------------------------------------------------------------------------------------
// what each step shows

static const PcExpect EXAMPLES[] = {
    {"Scores", "S[t][u] = Q[t] . K[u]", "S:t3.Q S:t3.K S:t3.scores"},
    {"Scale", "1/sqrt(d_k)", "M:t3.scores_scaled A:t3.scores"},
    {"Softmax", "Row 0 is 0.401112 0.197776 0.401112",
     "M:t3.weights_nomask_scaled+t3.rowsum_nomask_scaled "
     "A:t3.weights_nomask_unscaled+t3.rowsum_nomask_unscaled"},
    {"Mix", "Row 0 gives 6.016681 3.983319",
     "S:t3.V M:t3.weights_nomask_scaled M:t3.out_nomask_scaled A:t3.weights_nomask_unscaled "
     "A:t3.out_nomask_unscaled"},
    {"Mask", "above the diagonal to -inf", "M:t3.masked_scaled A:t3.masked_unscaled"},
    {"Softmax", "on the masked scores",
     "M:t3.weights_scaled+t3.rowsum_scaled A:t3.weights_unscaled+t3.rowsum_unscaled"},
    {"Mix", "O[t] = sum_u P[t][u] V[u]",
     "S:t3.V M:t3.weights_scaled M:t3.out_scaled A:t3.weights_unscaled A:t3.out_unscaled"},
    {"dV = P^T dO", "dV[u] = sum_t P[t][u] dO[t]",
     "S:t3.dO M:t3.weights_scaled M:t3.dV_scaled A:t3.weights_unscaled A:t3.dV_unscaled"},
    {"dP = dO V^T", "dP[t][u] = dO[t] . V[u]", "S:t3.dO S:t3.V S:t3.dP"},
    {"dS = P * (dP - rowsum(dP * P))", "r[t] = sum_u dP[t][u] P[t][u]",
     "S:t3.dP M:t3.weights_scaled M:t3.dS_scaled+t3.dS_r_scaled+t3.dS_sum_scaled+t3.dS_gain_scaled "
     "A:t3.weights_unscaled "
     "A:t3.dS_unscaled+t3.dS_r_unscaled+t3.dS_sum_unscaled+t3.dS_gain_unscaled"},
    {"dQ = scale * dS K", "dQ[t] = scale * sum_u dS[t][u] K[u]",
     "S:t3.K M:t3.dQ_scaled A:t3.dQ_unscaled"},
    {"dK = scale * dS^T Q", "dK[u] = scale * sum_t dS[t][u] Q[t]",
     "S:t3.Q M:t3.dK_scaled A:t3.dK_unscaled"},
    {"Scores", "dot product", "S:one_query.q S:one_query.K S:one_query.scores"},
    {"Scale", "1/sqrt(d_k)", "M:one_query.scores_scaled A:one_query.scores"},
    {"Softmax", "exp(s) / sum(exp(s))",
     "M:one_query.weights_scaled+one_query.rowsum_scaled "
     "A:one_query.weights_unscaled+one_query.rowsum_unscaled"},
    {"Mix", "O = P V",
     "S:one_query.V M:one_query.weights_scaled M:one_query.out_scaled A:one_query.weights_unscaled "
     "A:one_query.out_unscaled"},
};

static const PcExpect EXERCISE_FORWARD[] = {
    {"Scores", "S[t][u] = Q[t] . K[u]", "S:Q S:K S:scores"},
    {"Scale", "Multiplying by 1/sqrt(", "M:scores_scaled A:scores"},
    {"Mask", "above the diagonal to -inf", "M:masked_scaled A:masked_unscaled"},
    {"Softmax", "largest weight of each row",
     "M:weights_scaled+rowmax_scaled+rowsum_scaled "
     "A:weights_unscaled+rowmax_unscaled+rowsum_unscaled"},
    {"Mix", "O = P V", "S:V M:out_scaled A:out_unscaled"},
    {"Row maxima", "verdict: over", "S:row_stats"},
    {"dV = P^T dO", "dV[u] = sum_t P[t][u] dO[t]", "S:dO M:dV_scaled A:dV_unscaled"},
    {"dP = dO V^T", "dP[t][u] = dO[t] . V[u]", "S:dO S:V S:dP"},
    {"dS = P * (dP - rowsum(dP * P))", "r[t] = sum_u dP[t][u] P[t][u]",
     "S:dP M:weights_scaled M:dS_scaled+dS_r_scaled+dS_sum_scaled+dS_gain_scaled "
     "A:weights_unscaled "
     "A:dS_unscaled+dS_r_unscaled+dS_sum_unscaled+dS_gain_unscaled"},
    {"dQ = scale * dS K", "dQ[t] = scale * sum_u dS[t][u] K[u]", "S:K M:dQ_scaled A:dQ_unscaled"},
    {"dK = scale * dS^T Q", "dK[u] = scale * sum_t dS[t][u] Q[t]", "S:Q M:dK_scaled A:dK_unscaled"},
};

static const PcExpect MISTAKES[] = {
    {"Correct", "every row sums to 1",
     "M:cases.0.scores_unmasked M:cases.0.scores M:cases.0.weights+cases.0.row_sums "
     "M:cases.0.column_sums "
     "M:cases.0.outputs"},
    {"No scale", "but peakier",
     "M:cases.1.scores_unmasked M:cases.1.scores M:cases.1.weights+cases.1.row_sums "
     "M:cases.1.column_sums "
     "M:cases.1.outputs A:cases.0.weights+cases.0.row_sums A:cases.0.outputs"},
    {"Mask with 0", "S[0][1] was 0 already",
     "M:cases.2.scores_unmasked M:cases.2.scores M:cases.2.weights+cases.2.row_sums "
     "M:cases.2.column_sums "
     "M:cases.2.outputs A:cases.0.weights+cases.0.row_sums A:cases.0.outputs"},
    {"Softmax over queries", "rows no longer sum to 1",
     "M:cases.3.scores_unmasked M:cases.3.scores M:cases.3.weights+cases.3.row_sums "
     "M:cases.3.column_sums "
     "M:cases.3.outputs A:cases.0.weights+cases.0.row_sums A:cases.0.outputs"},
    {"No mask", "the lesson's first example, before its causal mask",
     "M:cases.4.scores_unmasked M:cases.4.scores M:cases.4.weights+cases.4.row_sums "
     "M:cases.4.column_sums "
     "M:cases.4.outputs A:cases.0.weights+cases.0.row_sums A:cases.0.outputs"},
};

// `./lab online-softmax --html` with the default blocks of 2 keys: per problem the scores, one step
// per block, the normalisation.
#define ONLINE_BLOCK(g, j, title)                                                                  \
    {                                                                                              \
        title, "m_new = max(m_old, block max)",                                                    \
            "S:" g ".scores S:" g ".V M:" g ".block" #j " M:" g ".o" #j " A:" g ".plain" #j        \
            " A:" g ".o_plain" #j                                                                  \
    }
#define ONLINE_ENDS(g)                                                                             \
    {                                                                                              \
        "Normalise", "L = m + ln l",                                                               \
            "S:" g ".P S:" g ".O M:" g ".P_online+" g ".L+" g ".P_diff M:" g ".O_online+" g        \
            ".O_diff "                                                                             \
            "A:" g ".P_plain+" g ".plain_rowsum A:" g ".O_plain+" g ".O_plain_diff"                \
    }
static const PcExpect ONLINE[] = {
    {"Scores", "one block of 2 columns at a time", "S:t3.Q S:t3.K S:t3.scores"},
    ONLINE_BLOCK("t3", 1, "Block 1: keys 0..1"),
    ONLINE_BLOCK("t3", 2, "Block 2: key 2"),
    ONLINE_ENDS("t3"),
    {"Scores", "one block of 2 columns at a time", "S:exercise.Q S:exercise.K S:exercise.scores"},
    ONLINE_BLOCK("exercise", 1, "Block 1: keys 0..1"),
    ONLINE_BLOCK("exercise", 2, "Block 2: keys 2..3"),
    ONLINE_BLOCK("exercise", 3, "Block 3: key 4"),
    ONLINE_ENDS("exercise"),
};

int pc_online_expect(const PcExpect **out) {
    *out = ONLINE;
    return (int)(sizeof ONLINE / sizeof ONLINE[0]);
}

int pc_mistakes_expect(const PcExpect **out) {
    *out = MISTAKES;
    return (int)(sizeof MISTAKES / sizeof MISTAKES[0]);
}

int pc_examples_expect(const PcExpect **out) {
    *out = EXAMPLES;
    return (int)(sizeof EXAMPLES / sizeof EXAMPLES[0]);
}

int pc_exercise_expect(const PcExpect **out, int causal) {
    static PcExpect no_mask[sizeof EXERCISE_FORWARD / sizeof EXERCISE_FORWARD[0]];
    int n = (int)(sizeof EXERCISE_FORWARD / sizeof EXERCISE_FORWARD[0]);
    if (causal) {
        *out = EXERCISE_FORWARD;
        return n;
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(EXERCISE_FORWARD[i].title, "Mask") != 0) no_mask[k++] = EXERCISE_FORWARD[i];
    *out = no_mask;
    return k;
}

#define PROBLEM(...)                                                                               \
    do {                                                                                           \
        if (problems++ == 0) snprintf(err, errlen, __VA_ARGS__);                                   \
    } while (0)

int pc_check_step(const PcStep *step, const PcExpect *want, const cJSON *json, char *err,
                  size_t errlen) {
    int problems = 0;
    err[0] = 0;
    if (strcmp(step->title, want->title) != 0)
        PROBLEM("step %d: title '%s', expected '%s'", step->number, step->title, want->title);
    if (!strstr(step->caption, want->phrase))
        PROBLEM("step %d (%s): the caption lacks '%s': \"%s\"", step->number, want->title,
                want->phrase, step->caption);
    // the expected tables, in order
    char list[1024];
    snprintf(list, sizeof list, "%s", want->tables);
    int ti = 0;
    for (char *save = NULL, *item = strtok_r(list, " ", &save); item;
         item = strtok_r(NULL, " ", &save), ti++) {
        int where = item[0] == 'S' ? 0 : item[0] == 'M' ? 1 : 2;
        char *key = item + 2, *plus = strchr(key, '+');
        if (plus) *plus++ = 0;
        if (ti >= step->n_tables) {
            PROBLEM("step %d (%s): table %d (%s) is missing", step->number, want->title, ti + 1,
                    key);
            continue;
        }
        const PcTable *t = &step->tables[ti];
        if (strcmp(t->key, key) != 0 || t->where != where) {
            PROBLEM("step %d (%s): table %d is %s in place %d, expected %s in place %d",
                    step->number, want->title, ti + 1, t->key, t->where, key, where);
            continue;
        }
        // extra columns
        int ne = 0;
        for (char *e = plus; e && *e; ne++) {
            char *next = strchr(e, '+');
            if (next) *next++ = 0;
            if (ne >= t->n_extra || strcmp(t->extra_key[ne], e) != 0)
                PROBLEM("step %d: table %s: extra column %d is '%s', expected '%s'", step->number,
                        key, ne + 1, ne < t->n_extra ? t->extra_key[ne] : "(none)", e);
            e = next;
        }
        if (ne != t->n_extra)
            PROBLEM("step %d: table %s has %d extra columns, expected %d", step->number, key,
                    t->n_extra, ne);
        // every cell against the JSON
        const cJSON *a = pc_json_get(json, t->key);
        int jr, jc;
        if (!a || !json_shape(a, &jr, &jc)) {
            PROBLEM("step %d: no numbers named '%s' in the JSON", step->number, t->key);
            continue;
        }
        int row_vector =
            t->rows == 1 && jc == 1 && jr == t->cols && jr > 1;  // a vector drawn as one row
        if (row_vector) {
            jc = jr;
            jr = 1;
        }
        if (jr != t->rows || jc != t->cols || t->n_cells != t->rows * t->cols)
            PROBLEM("step %d: table %s is %d x %d with %d cells; the JSON's is %d x %d",
                    step->number, t->key, t->rows, t->cols, t->n_cells, jr, jc);
        for (int i = 0; i < t->n_cells && i < jr * jc; i++) {
            char want_text[64];
            pc_format(want_text, sizeof want_text,
                      row_vector ? json_at(a, i, 0) : json_at(a, i / jc, i % jc));
            if (strcmp(t->cells[i], want_text) != 0)
                PROBLEM("step %d: %s[%d][%d] shows '%s', the JSON says '%s'", step->number, t->key,
                        i / jc, i % jc, t->cells[i], want_text);
        }
        if (t->n_extra_cells != t->n_extra * t->rows)
            PROBLEM("step %d: table %s has %d extra cells, expected %d", step->number, t->key,
                    t->n_extra_cells, t->n_extra * t->rows);
        for (int e = 0; e < t->n_extra; e++) {
            const cJSON *x = pc_json_get(json, t->extra_key[e]);
            int xr, xc;
            if (!x || !json_shape(x, &xr, &xc) || xr != t->rows || xc != 1) {
                PROBLEM("step %d: no vector of %d numbers named '%s' in the JSON", step->number,
                        t->rows, t->extra_key[e]);
                continue;
            }
            for (int r = 0; r < t->rows && r * t->n_extra + e < t->n_extra_cells; r++) {
                char want_text[64];
                pc_format(want_text, sizeof want_text, json_at(x, r, 0));
                if (strcmp(t->extra_cells[r * t->n_extra + e], want_text) != 0)
                    PROBLEM("step %d: %s[%d] shows '%s', the JSON says '%s'", step->number,
                            t->extra_key[e], r, t->extra_cells[r * t->n_extra + e], want_text);
            }
        }
    }
    if (ti != step->n_tables)
        PROBLEM("step %d (%s): %d tables, expected %d", step->number, want->title, step->n_tables,
                ti);
    return problems;
}

int pc_check_mistake_marks(const PcStep *step, const cJSON *json, char *err, size_t errlen) {
    int problems = 0;
    err[0] = 0;
    for (int i = 0; i < step->n_tables; i++) {
        const PcTable *t = &step->tables[i];
        const char *field = strrchr(t->key, '.');
        int scores = field && strcmp(field, ".scores") == 0,
            weights = field && strcmp(field, ".weights") == 0;
        if (!scores && !weights) continue;
        const cJSON *a = pc_json_get(json, t->key);
        if (!a || t->n_cells != t->rows * t->cols) {
            PROBLEM("step %d: %s is missing or malformed", step->number, t->key);
            continue;
        }
        for (int r = 0; r < t->rows; r++) {
            int best = 0;
            for (int c = 0; c < t->cols; c++) {
                const cJSON *x = json_at(a, r, c), *b = json_at(a, r, best);
                if (weights && cJSON_IsNumber(x) && cJSON_IsNumber(b) &&
                    x->valuedouble > b->valuedouble)
                    best = c;
                if (c <= r) continue;
                char want = scores ? (cJSON_IsNull(x) ? 'm' : 'w')
                                   : (cJSON_IsNumber(x) && x->valuedouble > 0 ? 'w' : 'm');
                if (!strchr(t->marks[r * t->cols + c], want))
                    PROBLEM("step %d: %s[%d][%d] is marked '%s', expected '%c' (%s)", step->number,
                            t->key, r, c, t->marks[r * t->cols + c], want,
                            want == 'w' ? "wrong" : "masked");
            }
            if (weights && !strchr(t->marks[r * t->cols + best], 'k'))
                PROBLEM("step %d: %s[%d][%d], the row's largest, is not boxed", step->number,
                        t->key, r, best);
        }
        for (int e = 0; weights && e < t->n_extra; e++) {
            const cJSON *x = pc_json_get(json, t->extra_key[e]);
            for (int r = 0; r < t->rows && r * t->n_extra + e < t->n_extra_cells; r++) {
                const cJSON *v = json_at(x, r, 0);
                double d = cJSON_IsNumber(v) ? v->valuedouble : 0;
                int wrong = strstr(t->extra_key[e], ".row_sums") ? fabs(d - 1.0) > 1e-5 : d > 0;
                int marked = strchr(t->extra_marks[r * t->n_extra + e], 'w') != NULL;
                if (wrong != marked)
                    PROBLEM("step %d: %s[%d] = %.6f is %smarked wrong", step->number,
                            t->extra_key[e], r, d, marked ? "" : "not ");
            }
        }
    }
    return problems;
}

// strstr, ignoring ASCII case
static const char *find_nocase(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, n) == 0) return p;
    return NULL;
}

int pc_check_offline(const PcPage *page, const char *html, char *err, size_t errlen) {
    int problems = 0;
    err[0] = 0;
    if (!strstr(page->csp, "default-src 'none'"))
        PROBLEM("the Content-Security-Policy '%s' does not forbid every fetch (default-src 'none')",
                page->csp);
    static const char *const banned[] = {"http://", "https://", " src=",          "<link",
                                         "@import", "<iframe",  "<object",        "<embed",
                                         "<img",    "fetch(",   "XMLHttpRequest", "WebSocket"};
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++) {
        const char *hit = find_nocase(html, banned[i]);
        if (hit)
            PROBLEM("the page contains '%s' (at \"%.40s\"): it must need no other file", banned[i],
                    hit);
    }
    // url(...) only of a part of the page itself: url(#id), as an inline SVG's clip path
    for (const char *hit = find_nocase(html, "url("); hit; hit = find_nocase(hit + 4, "url(")) {
        const char *a = hit + 4;
        if (*a == '\'' || *a == '"') a++;
        if (*a != '#') {
            PROBLEM("the page contains 'url(' of another file (at \"%.40s\"): it must need no "
                    "other file",
                    hit);
            break;
        }
    }
    return problems;
}
