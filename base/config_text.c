// base/config_text.c: the configuration as text: the resolved JSON (config_to_json, which every
// run writes and reads back) and the key reference (--help's table and docs/CONFIG.md's).
#include "base/config.h"
#include "base/common.h"         // die, xmalloc
#include "base/config_format.h"  // fmt_double, fmt_range, cstr_field, leaf, parse_decimal
#include "base/config_keys.h"    // the key table: KeySpec, CONFIG_KEYS, config_section_len

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
} StrBuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
sb_printf(StrBuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) die(EXIT_RUNTIME, "formatting the resolved config failed");
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *grown = realloc(b->p, cap);
        if (!grown)
            die(EXIT_RUNTIME, "out of memory allocating %zu bytes for the resolved config", cap);
        b->p = grown;
        b->cap = cap;
    }
}

// A JSON string literal; bytes >= 0x80 pass through (the text is taken to be UTF-8).
static void sb_json_string(StrBuf *b, const char *s) {
    sb_printf(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '"':
            sb_printf(b, "\\\"");
            break;
        case '\\':
            sb_printf(b, "\\\\");
            break;
        case '\n':
            sb_printf(b, "\\n");
            break;
        case '\r':
            sb_printf(b, "\\r");
            break;
        case '\t':
            sb_printf(b, "\\t");
            break;
        case '\b':
            sb_printf(b, "\\b");
            break;
        case '\f':
            sb_printf(b, "\\f");
            break;
        default:
            if (ch < 0x20)
                sb_printf(b, "\\u%04x", ch);
            else
                sb_printf(b, "%c", ch);
        }
    }
    sb_printf(b, "\"");
}

// The value of key k as JSON text.
static void sb_value(StrBuf *b, const Config *cfg, const KeySpec *k) {
    char num[64];
    switch (k->type) {
    case T_INT:
        sb_printf(b, "%d", *(const int *)(const void *)((const char *)cfg + k->offset));
        break;
    case T_NUM:
        fmt_double(num, sizeof(num),
                   *(const double *)(const void *)((const char *)cfg + k->offset));
        sb_printf(b, "%s", num);
        break;
    case T_STR:
        sb_json_string(b, cstr_field(cfg, k));
        break;
    case T_SCALE: {
        // A number is written as a JSON number (canonical form, whatever text it came from).
        double v;
        if (parse_decimal(cfg->attn_scale_str, &v) && isfinite(v)) {
            fmt_double(num, sizeof(num), v);
            sb_printf(b, "%s", num);
        } else {
            sb_json_string(b, cfg->attn_scale_str);
        }
        break;
    }
    }
}

// Whether key k holds its default value.
static int at_default(const Config *cfg, const KeySpec *k) {
    const void *f = (const char *)cfg + k->offset;
    switch (k->type) {
    case T_INT:
        return *(const int *)f == (int)k->def;
    case T_NUM:
        return *(const double *)f == k->def;
    default:
        return strcmp(cstr_field(cfg, k), k->def_str) == 0;
    }
}

char *config_to_json(const Config *cfg) {
    StrBuf b = {xmalloc(4096, "resolved config"), 0, 4096};
    const char *open_section = NULL;  // section whose object is open
    size_t open_len = 0;
    sb_printf(&b, "{");
    for (int i = 0; i < CONFIG_N_KEYS; i++) {
        const KeySpec *k = &CONFIG_KEYS[i];
        if (k->omit_default && at_default(cfg, k)) continue;
        size_t sl = config_section_len(k->key);
        int first_member = 0;
        if (!open_section || sl != open_len || strncmp(k->key, open_section, sl) != 0) {
            if (open_section && open_len > 0) sb_printf(&b, "\n  }");
            if (i > 0) sb_printf(&b, ",");
            if (sl > 0) sb_printf(&b, "\n  \"%.*s\": {", (int)sl, k->key);
            open_section = k->key;
            open_len = sl;
            first_member = 1;
        }
        if (!first_member) sb_printf(&b, ",");
        sb_printf(&b, sl > 0 ? "\n    \"%s\": " : "\n  \"%s\": ", leaf(k->key));
        sb_value(&b, cfg, k);
    }
    if (open_section && open_len > 0) sb_printf(&b, "\n  }");
    sb_printf(&b, "\n}\n");
    return b.p;
}

static const char *type_name(KeyType t) {
    switch (t) {
    case T_INT:
        return "int";
    case T_NUM:
        return "number";
    case T_STR:
        return "string";
    case T_SCALE:
        return "scale";
    }
    return "?";
}

// Markdown cells must not contain a bare '|'.
static void md_cell(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else
            fputc(*s, f);
    }
}

void config_print_reference(FILE *f, int markdown) {
    char defaults[CONFIG_MAX_KEYS][64], ranges[CONFIG_MAX_KEYS][RANGE_CHARS];
    int wk = 3, wt = 4, wd = 7, wr = 5;  // widths of "key", "type", "default", "range"
    for (int i = 0; i < CONFIG_N_KEYS; i++) {
        const KeySpec *k = &CONFIG_KEYS[i];
        if (k->type == T_INT || k->type == T_NUM) {
            fmt_double(defaults[i], sizeof(defaults[i]), k->def);
        } else {  // strings shown as JSON literals, so "" and "\n" are visible
            StrBuf b = {xmalloc(64, "reference"), 0, 64};
            sb_json_string(&b, k->def_str);
            snprintf(defaults[i], sizeof(defaults[i]), "%s", b.p);
            free(b.p);
        }
        fmt_range(k, ranges[i], sizeof(ranges[i]));
        int n;
        if ((n = (int)strlen(k->key)) > wk) wk = n;
        if ((n = (int)strlen(type_name(k->type))) > wt) wt = n;
        if ((n = (int)strlen(defaults[i])) > wd) wd = n;
        if ((n = (int)strlen(ranges[i])) > wr) wr = n;
    }
    if (markdown) {
        fprintf(f, "| key | type | default | range | meaning |\n");
        fprintf(f, "|-----|------|---------|-------|---------|\n");
        for (int i = 0; i < CONFIG_N_KEYS; i++) {
            fprintf(f, "| `%s` | %s | `", CONFIG_KEYS[i].key, type_name(CONFIG_KEYS[i].type));
            md_cell(f, defaults[i]);
            fputs("` | ", f);
            md_cell(f, ranges[i]);
            fputs(" | ", f);
            md_cell(f, CONFIG_KEYS[i].help);
            fputs(" |\n", f);
        }
        return;
    }
    fprintf(f, "Config keys (JSON: {\"name\": ..., \"model\": {\"n_layer\": ...}, ...}; override: "
               "--model.n_layer=8):\n");
    fprintf(f, "  %-*s  %-*s  %-*s  %-*s  %s\n", wk, "key", wt, "type", wd, "default", wr, "range",
            "meaning");
    for (int i = 0; i < CONFIG_N_KEYS; i++)
        fprintf(f, "  %-*s  %-*s  %-*s  %-*s  %s\n", wk, CONFIG_KEYS[i].key, wt,
                type_name(CONFIG_KEYS[i].type), wd, defaults[i], wr, ranges[i],
                CONFIG_KEYS[i].help);
}
