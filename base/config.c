// base/config.c: defaults, strict JSON loading, overrides and validation, all read from the key
// table (base/config_keys.c): adding a key is adding a row there.
#include "base/config.h"
#include "base/common.h"
#include "base/config_format.h"  // RANGE_CHARS; the helpers base/config_text.c uses
#include "base/config_keys.h"    // the key table: KeySpec, CONFIG_KEYS, config_find_key
#include "base/data.h"

#include "base/json.h"  // cJSON, or base/json_own.c where there is none
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CONFIG_BYTES                                                                           \
    (16u * 1024u * 1024u)  // a config is a few hundred bytes; refuse to slurp a huge file
#define MAX_KEY_CHARS 256  // longer JSON keys cannot be ours; cut in messages

static int *int_field(Config *c, const KeySpec *k) {
    return (int *)(void *)((char *)c + k->offset);
}
static double *num_field(Config *c, const KeySpec *k) {
    return (double *)(void *)((char *)c + k->offset);
}
static char *str_field(Config *c, const KeySpec *k) { return (char *)c + k->offset; }
const char *cstr_field(const Config *c, const KeySpec *k) { return (const char *)c + k->offset; }

// ----------------------------------------------------------------------------
// small formatting helpers

// Errors carry their origin (a file path, "command line") as a prefix; NULL = no prefix.
typedef struct {
    char *err;
    size_t errlen;
    const char *origin;
} ErrCtx;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int
fail(const ErrCtx *e, const char *fmt, ...) {
    if (!e->err || e->errlen == 0) return 0;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (e->origin)
        snprintf(e->err, e->errlen, "%s: %s", e->origin, msg);
    else
        snprintf(e->err, e->errlen, "%s", msg);
    return 0;
}

// Copy user text (a JSON key or string value) for a message: control bytes become \xNN so the
// message stays one line, and long text is cut with "..." so the message stays readable.
static const char *printable(const char *s, char *buf, size_t n) {
    size_t j = 0;
    for (size_t i = 0; s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (j + 8 >= n) {  // room for one escape plus "..." and the terminator
            memcpy(buf + j, "...", 3);
            j += 3;
            break;
        }
        if (ch < 0x20 || ch == 0x7f)
            j += (size_t)snprintf(buf + j, n - j, "\\x%02x", ch);
        else
            buf[j++] = (char)ch;
    }
    buf[j] = '\0';
    return buf;
}
#define PRINTABLE(s) printable((s), (char[96]){0}, 96)

// Shortest decimal text that reads back as exactly v (integral values without an exponent), so
// the resolved JSON round-trips bit for bit and messages show "0.1" rather than
// "0.10000000000000001".
void fmt_double(char *buf, size_t n, double v) {
    if (isfinite(v) && v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, n, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

static const char *json_type_name(const cJSON *v) {
    if (cJSON_IsBool(v)) return "boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsNumber(v)) return "number";
    if (cJSON_IsString(v)) return "string";
    if (cJSON_IsArray(v)) return "array";
    if (cJSON_IsObject(v)) return "object";
    return "unknown";
}

// The numeric interval of a number or scale key: "(0, 1)", "[0, 10]".
static void fmt_interval(const KeySpec *k, char *buf, size_t n) {
    char lo[32], hi[32];
    fmt_double(lo, sizeof(lo), k->min);
    fmt_double(hi, sizeof(hi), k->max);
    snprintf(buf, n, "%c%s, %s%c", k->min_open ? '(' : '[', lo, hi, k->max_open ? ')' : ']');
}

// "1..64" for ints, "(0, 1)" for numbers, "length 1..1023" for strings, "gpt2, fan_in" for enums.
void fmt_range(const KeySpec *k, char *buf, size_t n) {
    char iv[80];  // an interval is at most 67 bytes
    switch (k->type) {
    case T_INT:
        snprintf(buf, n, "%d..%d", (int)k->min, (int)k->max);
        break;
    case T_NUM:
        fmt_interval(k, buf, n);
        break;
    case T_SCALE:
        fmt_interval(k, iv, sizeof(iv));
        snprintf(buf, n, "sqrt, none or %s", iv);
        break;
    case T_STR:
        if (k->enums) {
            size_t j = 0;
            buf[0] = '\0';
            for (int i = 0; k->enums[i] && j < n; i++)
                j += (size_t)snprintf(buf + j, n - j, "%s%s", i ? ", " : "", k->enums[i]);
        } else {
            snprintf(buf, n, "length %d..%d", (int)k->min, (int)k->max);
        }
        break;
    }
}

// ----------------------------------------------------------------------------
// "did you mean": case-insensitive Levenshtein distance to every key and section name

#define levenshtein text_distance  // base/common.c: case-insensitive, INT_MAX past 256 characters

static int lower(int ch) { return (ch >= 'A' && ch <= 'Z') ? ch - 'A' + 'a' : ch; }

static int ascii_casecmp(const char *a, const char *b) {
    while (*a && lower((unsigned char)*a) == lower((unsigned char)*b)) a++, b++;
    return lower((unsigned char)*a) - lower((unsigned char)*b);
}

const char *leaf(const char *key) {
    const char *dot = strrchr(key, '.');
    return dot ? dot + 1 : key;
}

// Distance from what was typed to a candidate: the whole path, or the last component plus one
// so that "model.lr" (right key, wrong section) and a bare "lr" both find "train.lr".
static int key_distance(const char *typed, const char *cand) {
    int d = levenshtein(typed, cand);
    int dl = levenshtein(leaf(typed), leaf(cand));
    if (dl != INT_MAX && dl + 1 < d) d = dl + 1;
    return d;
}

// The closest key or section name (into buf), or NULL when nothing is plausibly close.
static const char *suggest(const char *typed, char *buf, size_t n) {
    int best_d = INT_MAX;
    for (int i = 0; i < CONFIG_N_KEYS; i++) {
        int d = key_distance(typed, CONFIG_KEYS[i].key);
        if (d < best_d) best_d = d, snprintf(buf, n, "%s", CONFIG_KEYS[i].key);
        size_t sl = config_section_len(CONFIG_KEYS[i].key);
        if (sl > 0) {
            char sec[64];
            snprintf(sec, sizeof(sec), "%.*s", (int)sl, CONFIG_KEYS[i].key);
            d = levenshtein(typed, sec);
            if (d < best_d) best_d = d, snprintf(buf, n, "%s", sec);
        }
    }
    if (best_d == INT_MAX) return NULL;
    int limit =
        (int)strlen(buf) / 3;  // a third of the name may be wrong, but always allow two edits
    if (limit < 2) limit = 2;
    return best_d <= limit ? buf : NULL;
}

static int unknown_key(const ErrCtx *e, const char *key) {
    char sbuf[64];
    const char *s = suggest(key, sbuf, sizeof(sbuf));
    if (s && ascii_casecmp(s, key) == 0)
        return fail(e, "unknown key '%s' (keys are case-sensitive; did you mean '%s'?)",
                    PRINTABLE(key), s);
    if (s) return fail(e, "unknown key '%s' (did you mean '%s'?)", PRINTABLE(key), s);
    return fail(e, "unknown key '%s' (see --help for the list of keys)", PRINTABLE(key));
}

// ----------------------------------------------------------------------------
// setting one value: every path (JSON, override, finalize) goes through these checks

static int in_range(const KeySpec *k, double v) {
    if (k->min_open ? !(v > k->min) : !(v >= k->min)) return 0;
    if (k->max_open ? !(v < k->max) : !(v <= k->max)) return 0;
    return 1;
}

// Validate a number for an int/number key; `text` is how the user wrote it (NULL = format v).
static int check_number(const KeySpec *k, double v, const char *text, const ErrCtx *e) {
    char vbuf[64], range[RANGE_CHARS];
    if (!text) {
        fmt_double(vbuf, sizeof(vbuf), v);
        text = vbuf;
    }
    if (!isfinite(v))
        return fail(e, "'%s' must be a finite number, got %s", k->key, PRINTABLE(text));
    if (k->type == T_INT && v != floor(v))
        return fail(e, "'%s' must be an integer, got %s", k->key, PRINTABLE(text));
    if (k->type == T_INT)
        fmt_range(k, range, sizeof(range));
    else
        fmt_interval(k, range, sizeof(range));
    if (!in_range(k, v))
        return fail(e, "'%s' = %s is out of range %s", k->key, PRINTABLE(text), range);
    return 1;
}

static int set_number(Config *c, const KeySpec *k, double v, const char *text, const ErrCtx *e) {
    if (!check_number(k, v, text, e)) return 0;
    if (k->type == T_INT)
        *int_field(c, k) = (int)v;  // exact: v is integral and within an int range
    else
        *num_field(c, k) = v;
    return 1;
}

// Zero-fill the rest of the array, not just one terminator, so equal configs are equal bytes.
// memmove: finalize re-stores a field from itself.
static void store_string(Config *c, const KeySpec *k, const char *s) {
    char *dst = str_field(c, k);
    size_t len = strlen(s);
    memmove(dst, s, len);
    memset(dst + len, 0, k->size - len);
}

static int set_string(Config *c, const KeySpec *k, const char *s, const ErrCtx *e) {
    size_t len = strlen(s);
    // every string ends up in the checkpoint and summary.json, which are UTF-8 (a JSON file
    // was checked as a whole; this catches overrides)
    size_t bad = utf8_invalid_offset((const unsigned char *)s, len);
    if (bad < len)
        return fail(e, "'%s' is not valid UTF-8 (at byte %zu of its value)", k->key, bad);
    if (len > (size_t)k->max)
        return fail(e, "'%s' is too long (%zu bytes; at most %d)", k->key, len, (int)k->max);
    if (len < (size_t)k->min) {
        if (k->min == 1) return fail(e, "'%s' must not be empty", k->key);
        return fail(e, "'%s' is too short (%zu bytes; at least %d)", k->key, len, (int)k->min);
    }
    if (k->aliases)
        for (int i = 0; k->aliases[i]; i += 2)
            if (strcmp(k->aliases[i], s) == 0) s = k->aliases[i + 1];
    if (k->enums) {
        int ok = 0;
        for (int i = 0; k->enums[i]; i++) ok |= strcmp(k->enums[i], s) == 0;
        if (!ok) {
            char range[RANGE_CHARS];
            fmt_range(k, range, sizeof(range));
            return fail(e, "'%s' must be one of %s; got '%s'", k->key, range, PRINTABLE(s));
        }
    }
    store_string(c, k, s);
    return 1;
}

// model.attn_scale is kept as its text: "sqrt", "none", or the number in canonical form (what
// config_to_json writes back). config_finalize resolves it, once the head width is known.
static int set_scale_word(Config *c, const KeySpec *k, const char *word, const ErrCtx *e) {
    char iv[RANGE_CHARS];
    fmt_interval(k, iv, sizeof(iv));
    if (strcmp(word, "sqrt") != 0 && strcmp(word, "none") != 0)
        return fail(e, "'%s' must be \"sqrt\", \"none\" or a number in %s, got '%s'", k->key, iv,
                    PRINTABLE(word));
    store_string(c, k, word);
    return 1;
}

static int set_scale_number(Config *c, const KeySpec *k, double v, const char *text,
                            const ErrCtx *e) {
    if (!check_number(k, v, text, e)) return 0;
    char buf[64];
    fmt_double(buf, sizeof(buf), v);
    store_string(c, k, buf);
    return 1;
}

static int set_from_json(Config *c, const KeySpec *k, const cJSON *v, const ErrCtx *e) {
    switch (k->type) {
    case T_INT:
    case T_NUM:
        if (!cJSON_IsNumber(v))
            return fail(e, "'%s' must be %s, got %s", k->key,
                        k->type == T_INT ? "an integer" : "a number", json_type_name(v));
        return set_number(c, k, v->valuedouble, NULL, e);
    case T_STR:
        if (!cJSON_IsString(v))
            return fail(e, "'%s' must be a string, got %s", k->key, json_type_name(v));
        return set_string(c, k, v->valuestring, e);
    case T_SCALE:
        if (cJSON_IsNumber(v)) return set_scale_number(c, k, v->valuedouble, NULL, e);
        if (cJSON_IsString(v)) return set_scale_word(c, k, v->valuestring, e);
        return fail(e, "'%s' must be \"sqrt\", \"none\" or a positive number, got %s", k->key,
                    json_type_name(v));
    }
    return 0;
}

// Strict text -> number for overrides: plain decimal only (strtod alone would take "0x10",
// "inf", " 5"), and the whole text must be consumed (base/common.c). Overflow gives +-HUGE_VAL or a
// saturated integer, which check_number then rejects with the text as written.
int parse_decimal(const char *s, double *out) { return parse_decimal_text(s, out); }

static int parse_integer(const char *s, double *out) {
    long long v;
    if (!parse_integer_text(s, &v)) return 0;
    *out = (double)v;
    return 1;
}

// ----------------------------------------------------------------------------
// JSON loading

// Where cJSON stopped, as 1-based line and byte column.
static void line_col(const char *text, size_t pos, int *line, int *col) {
    int l = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < pos; i++)
        if (text[i] == '\n') l++, line_start = i + 1;
    *line = l;
    *col = (int)(pos - line_start) + 1;
}

// Bracket depth at pos (outside strings), to tell "nested too deep" from other syntax errors.
static int depth_at(const char *text, size_t pos) {
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < pos; i++) {
        char ch = text[i];
        if (in_str) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_str = 0;
        } else if (ch == '"')
            in_str = 1;
        else if (ch == '[' || ch == '{')
            depth++;
        else if (ch == ']' || ch == '}')
            depth--;
    }
    return depth;
}

// Offset of a \u0000 escape inside a string, or len if none. cJSON would decode it into a NUL
// that silently cuts the key or value short, so such text is rejected instead.
static size_t find_nul_escape(const char *text, size_t len) {
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (!in_str) {
            in_str = ch == '"';
        } else if (ch == '"') {
            in_str = 0;
        } else if (ch == '\\') {
            if (i + 5 < len && text[i + 1] == 'u' && strncmp(text + i + 2, "0000", 4) == 0)
                return i;
            i++;  // skip the escaped character
        }
    }
    return len;
}

static int invalid_json(const ErrCtx *e, const char *text, size_t len, size_t pos) {
    int line, col;
    if (!e->err || e->errlen == 0) return 0;
    if (pos > len) pos = len;
    line_col(text, pos, &line, &col);
    const char *origin = e->origin ? e->origin : "config";
    if (depth_at(text, pos) >= CJSON_NESTING_LIMIT)
        snprintf(e->err, e->errlen, "%s:%d:%d: invalid JSON (nested deeper than %d levels)", origin,
                 line, col, CJSON_NESTING_LIMIT);
    else
        snprintf(e->err, e->errlen, "%s:%d:%d: invalid JSON", origin, line, col);
    return 0;
}

// Walk the members ourselves: cJSON's getters match keys case-insensitively and silently take
// the first of duplicate keys, and we want both to be errors.
static int load_root(Config *c, const cJSON *root, const ErrCtx *e, int *had_name) {
    unsigned char seen[CONFIG_MAX_KEYS] = {0}, seen_section[CONFIG_MAX_KEYS] = {0};
    int name_row = config_find_key("name");
    if (!cJSON_IsObject(root))
        return fail(e, "the top level must be a JSON object, got %s", json_type_name(root));
    for (const cJSON *it = root->child; it; it = it->next) {
        const char *k = it->string;
        int row = config_find_key(k);
        if (row >= 0 && config_section_len(k) == 0) {  // a top-level key such as "name"
            if (seen[row]) return fail(e, "duplicate key '%s'", k);
            seen[row] = 1;
            if (!set_from_json(c, &CONFIG_KEYS[row], it, e)) return 0;
            if (row == name_row) *had_name = 1;
            continue;
        }
        if (row >= 0)  // "model.n_layer" written literally at the top level
            return fail(e, "unknown key '%s' at the top level (nest it: \"%.*s\": {\"%s\": ...})",
                        k, (int)config_section_len(k), k, leaf(k));
        int sec = config_find_section(k);
        if (sec < 0) return unknown_key(e, k);
        if (seen_section[sec]) return fail(e, "duplicate key '%s'", k);
        seen_section[sec] = 1;
        if (!cJSON_IsObject(it))
            return fail(e, "'%s' must be an object, got %s", k, json_type_name(it));
        for (const cJSON *m = it->child; m; m = m->next) {
            char full[MAX_KEY_CHARS + 64];
            snprintf(full, sizeof(full), "%s.%s", k, m->string);  // a cut key cannot match any row
            row = config_find_key(full);
            if (row < 0) return unknown_key(e, full);
            if (seen[row]) return fail(e, "duplicate key '%s'", full);
            seen[row] = 1;
            if (!set_from_json(c, &CONFIG_KEYS[row], m, e)) return 0;
        }
    }
    return 1;
}

static int load_json(Config *cfg, const char *json, size_t len, const ErrCtx *e, int *had_name) {
    *had_name = 0;
    if (len == SIZE_MAX) return fail(e, "config text too large");
    if (!json) json = "";  // (NULL, 0) is an empty text
    // cJSON wants a terminated buffer whose length includes the terminator (otherwise it
    // reports trailing text), and would stop at an embedded NUL, so copy and check for one.
    const char *nul = memchr(json, '\0', len);
    if (nul) return invalid_json(e, json, len, (size_t)(nul - json));
    // JSON text is UTF-8 (RFC 8259); cJSON passes raw bytes through unchecked, so check here:
    // every key and string then is valid UTF-8, and so is everything written from them
    size_t bad = utf8_invalid_offset((const unsigned char *)json, len);
    if (bad < len) {
        int line, col;
        line_col(json, bad, &line, &col);
        if (e->err && e->errlen)
            snprintf(e->err, e->errlen, "%s:%d:%d: invalid UTF-8 at byte offset %zu",
                     e->origin ? e->origin : "config", line, col, bad);
        return 0;
    }
    char *text = xmalloc(len + 1, "config text");
    memcpy(text, json, len);
    text[len] = '\0';

    size_t nul_escape = find_nul_escape(text, len);
    if (nul_escape < len) {
        int line, col;
        line_col(text, nul_escape, &line, &col);
        free(text);
        if (e->err && e->errlen)
            snprintf(e->err, e->errlen,
                     "%s:%d:%d: invalid JSON (\\u0000 is not allowed in strings)",
                     e->origin ? e->origin : "config", line, col);
        return 0;
    }

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
    if (!root) {
        invalid_json(e, text, len, end ? (size_t)(end - text) : 0);
        free(text);
        return 0;
    }
    // Load into a copy so a failed load leaves cfg untouched.
    Config tmp = *cfg;
    int ok = load_root(&tmp, root, e, had_name);
    cJSON_Delete(root);
    free(text);
    if (ok) *cfg = tmp;
    return ok;
}

int config_load_json(Config *cfg, const char *json, size_t len, const char *origin, char *err,
                     size_t errlen) {
    ErrCtx e = {err, errlen, origin};
    int had_name;
    return load_json(cfg, json, len, &e, &had_name);
}

// Read a whole file, at most MAX_CONFIG_BYTES. Returns a malloc'd terminated buffer or NULL.
// Only a regular file is read: a FIFO, a device or a directory is refused before the first read
// (fopen_regular), so nothing blocks and /dev/zero is not read for ever.
static char *read_file(const char *path, size_t *out_len, const ErrCtx *e) {
    uint64_t size;
    const char *why;
    FILE *f = fopen_regular(path, &size, &why);
    if (!f) {
        char near[1024];
        if (access(path, F_OK) != 0 && nearest_file(path, near, sizeof near))
            fail(e, "cannot read config '%s': %s (did you mean '%s'?)", path, why, near);
        else
            fail(e, "cannot read config '%s': %s", path, why);
        return NULL;
    }
    if (size > MAX_CONFIG_BYTES) {
        fclose(f);
        fail(e, "config '%s' is larger than %u MB", path, MAX_CONFIG_BYTES >> 20);
        return NULL;
    }
    // Read at most one byte past the limit: enough to know the file is too large.
    size_t cap = 4096, len = 0;
    char *buf = xmalloc(cap + 1, "config file");
    while (len <= MAX_CONFIG_BYTES) {
        if (len == cap) {
            cap = cap * 2 > MAX_CONFIG_BYTES + 1 ? MAX_CONFIG_BYTES + 1 : cap * 2;
            char *grown = realloc(buf, cap + 1);
            if (!grown) die(EXIT_RUNTIME, "out of memory reading config '%s'", path);
            buf = grown;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                int errnum = errno;
                fclose(f);
                free(buf);
                fail(e, "cannot read config '%s': %s", path,
                     errnum ? strerror(errnum) : "read error");
                return NULL;
            }
            break;  // end of file
        }
    }
    if (fclose(f) != 0) {
        int errnum = errno;
        free(buf);
        fail(e, "cannot read config '%s': %s", path, strerror(errnum));
        return NULL;
    }
    if (len > MAX_CONFIG_BYTES) {
        free(buf);
        fail(e, "config '%s' is larger than %u MB", path, MAX_CONFIG_BYTES >> 20);
        return NULL;
    }
    buf[len] = '\0';
    *out_len = len;
    return buf;
}

int config_load_file(Config *cfg, const char *path, char *err, size_t errlen) {
    ErrCtx e = {err, errlen, NULL};
    size_t len = 0;
    char *text = read_file(path, &len, &e);
    if (!text) return 0;
    e.origin = path;
    Config tmp = *cfg;
    int had_name = 0;
    int ok = load_json(&tmp, text, len, &e, &had_name);
    free(text);
    if (!ok) return 0;
    if (!had_name) {  // the run is named after its config file: configs/tiny.json -> "tiny"
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        size_t n = strlen(base);
        if (n >= 5 && strcmp(base + n - 5, ".json") == 0) n -= 5;
        if (n >= sizeof(tmp.name))
            return fail(&e,
                        "the file name is too long to be the run name (%zu bytes; at most %zu); "
                        "set \"name\"",
                        n, sizeof(tmp.name) - 1);
        memset(tmp.name, 0, sizeof(tmp.name));
        memcpy(tmp.name, base, n);
    }
    *cfg = tmp;
    return 1;
}

// ----------------------------------------------------------------------------
// public API

void config_defaults(Config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    for (int i = 0; i < CONFIG_N_KEYS; i++) {
        const KeySpec *k = &CONFIG_KEYS[i];
        switch (k->type) {
        case T_INT:
            *int_field(cfg, k) = (int)k->def;
            break;
        case T_NUM:
            *num_field(cfg, k) = k->def;
            break;
        case T_STR:
            store_string(cfg, k, k->def_str);
            break;
        case T_SCALE: {
            ErrCtx quiet = {NULL, 0, NULL};
            set_scale_word(cfg, k, k->def_str, &quiet);
            break;
        }
        }
    }
}

int config_apply_override(Config *cfg, const char *arg, char *err, size_t errlen) {
    ErrCtx e = {err, errlen, "command line"};
    const char *eq = strchr(arg, '=');
    size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
    char key[MAX_KEY_CHARS + 1];
    snprintf(key, sizeof(key), "%.*s", (int)(klen > MAX_KEY_CHARS ? MAX_KEY_CHARS : klen), arg);
    int row = config_find_key(key);
    if (row < 0) {
        if (config_find_section(key) >= 0)
            return fail(&e, "'--%s' is a section; override one key, e.g. --%s=VALUE",
                        PRINTABLE(key), CONFIG_KEYS[config_find_section(key)].key);
        return unknown_key(&e, key);
    }
    const KeySpec *k = &CONFIG_KEYS[row];
    if (!eq) return fail(&e, "'--%s' needs a value: --%s=VALUE", k->key, k->key);
    const char *val = eq + 1;
    double v;
    switch (k->type) {
    case T_INT:
        if (!parse_integer(val, &v))
            return fail(&e, "'%s' must be an integer, got '%s'", k->key, PRINTABLE(val));
        return set_number(cfg, k, v, val, &e);
    case T_NUM:
        if (!parse_decimal(val, &v))
            return fail(&e, "'%s' must be a number, got '%s'", k->key, PRINTABLE(val));
        return set_number(cfg, k, v, val, &e);
    case T_STR:
        return set_string(cfg, k, val, &e);
    case T_SCALE:
        if (parse_decimal(val, &v)) return set_scale_number(cfg, k, v, val, &e);
        return set_scale_word(cfg, k, val, &e);
    }
    return 0;
}

double config_scale_factor(const char *text, int head_dim) {
    double v;
    if (strcmp(text, "sqrt") == 0) return head_dim > 0 ? 1.0 / sqrt((double)head_dim) : NAN;
    if (strcmp(text, "none") == 0) return 1.0;
    return parse_decimal(text, &v) && v > 0 ? v : NAN;
}

int config_finalize(Config *cfg, char *err, size_t errlen) {
    ErrCtx e = {err, errlen, NULL};
    // Re-check every value against the table: fields may also have been set directly in code.
    for (int i = 0; i < CONFIG_N_KEYS; i++) {
        const KeySpec *k = &CONFIG_KEYS[i];
        if (k->type == T_INT && !check_number(k, *int_field(cfg, k), NULL, &e)) return 0;
        if (k->type == T_NUM && !check_number(k, *num_field(cfg, k), NULL, &e)) return 0;
        if (k->type == T_STR && memchr(str_field(cfg, k), '\0', k->size) == NULL)
            return fail(&e, "'%s' is not terminated", k->key);
        if (k->type == T_STR) {
            const char *v = cstr_field(cfg, k);
            size_t len = strlen(v), bad = utf8_invalid_offset((const unsigned char *)v, len);
            if (bad < len)
                return fail(&e, "'%s' is not valid UTF-8 (at byte %zu of its value)", k->key, bad);
        }
    }

    if (!cfg->name[0]) snprintf(cfg->name, sizeof(cfg->name), "run");
    // The name becomes a directory under out/, so it must be one path component.
    if (strchr(cfg->name, '/') || strcmp(cfg->name, ".") == 0 || strcmp(cfg->name, "..") == 0)
        return fail(&e,
                    "'name' = '%s' must be a single path component (no '/', not '.' or '..'): it "
                    "names out/<name>",
                    PRINTABLE(cfg->name));
    for (const char *p = cfg->name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return fail(&e, "'name' = '%s' must not contain control characters",
                        PRINTABLE(cfg->name));

    if (cfg->n_embd % cfg->n_head != 0)
        return fail(&e, "'model.n_embd' (%d) must be divisible by 'model.n_head' (%d)", cfg->n_embd,
                    cfg->n_head);
    if (cfg->attn_window > cfg->block_size)
        return fail(&e,
                    "'model.attn_window' (%d) must be at most 'model.block_size' (%d): a query "
                    "sees at most block_size keys",
                    cfg->attn_window, cfg->block_size);
    if (cfg->attn_window > 0 && strcmp(cfg->attn_mask, "causal") != 0)
        return fail(&e,
                    "'model.attn_window' (%d) needs 'model.attn_mask' causal, got '%s': the window "
                    "narrows the causal mask",
                    cfg->attn_window, cfg->attn_mask);
    if (cfg->min_lr > cfg->lr) {
        char a[32], b[32];
        fmt_double(a, sizeof(a), cfg->min_lr);
        fmt_double(b, sizeof(b), cfg->lr);
        return fail(&e, "'train.min_lr' (%s) must be <= 'train.lr' (%s)", a, b);
    }

    // Check the scale's text (it may have been set in code), then resolve it: the one factor
    // every consumer reads.
    const KeySpec *sk = &CONFIG_KEYS[config_find_key("model.attn_scale")];
    double v;
    if (parse_decimal(cfg->attn_scale_str, &v)) {
        if (!set_scale_number(cfg, sk, v, cfg->attn_scale_str, &e)) return 0;
    } else if (!set_scale_word(cfg, sk, cfg->attn_scale_str, &e)) {
        return 0;
    }
    cfg->attn_scale = config_scale_factor(cfg->attn_scale_str, cfg->n_embd / cfg->n_head);

    if (!cfg->out_dir[0])
        snprintf(cfg->out_dir, sizeof(cfg->out_dir), "out/%s",
                 cfg->name);  // always fits: 4 + 127 < 1024
    return 1;
}
int config_names_value(const char *key, const char *value) {
    int row = config_find_key(key);
    if (row < 0) return 0;
    if (!value) return 1;
    const KeySpec *k = &CONFIG_KEYS[row];
    if (k->enums) {
        for (int i = 0; k->enums[i]; i++)
            if (strcmp(k->enums[i], value) == 0) return 1;
        return 0;
    }
    Config c;
    config_defaults(&c);
    char arg[MAX_KEY_CHARS + 512], err[512];
    snprintf(arg, sizeof arg, "%s=%s", key, value);
    return config_apply_override(&c, arg, err, sizeof err);
}
