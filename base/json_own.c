// base/json_own.c: the JSON parser of a build without cJSON (base/json_own.h). It follows
// cJSON 1.7.15 step by step, so that base/config.c accepts and refuses the same texts and reports
// a syntax error at the same line and column as natively: whitespace is any byte <= 32, a UTF-8
// byte order mark is skipped, a number is the longest run of 0-9 + - e E . read by
// strtod, a \u escape with a non-hex digit reads as 0, and the error position is where the
// failing step left the cursor (a string's error: its opening quote + 1, or the bad escape).
#ifdef JSON_OWN  // compiled only where base/json.h chooses it: elsewhere the system's cJSON serves
#include "base/json_own.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const unsigned char *content;
    size_t length, offset, depth;
} Buf;

#define AT(b) ((b)->content + (b)->offset)
static int can_read(const Buf *b, size_t n) { return b->offset + n <= b->length; }
static int can_access(const Buf *b, size_t i) { return b->offset + i < b->length; }

static cJSON *new_item(void) { return calloc(1, sizeof(cJSON)); }

void cJSON_Delete(cJSON *item) {
    while (item) {
        cJSON *next = item->next;
        if (item->child) cJSON_Delete(item->child);
        free(item->valuestring);
        free(item->string);
        free(item);
        item = next;
    }
}

static Buf *skip_ws(Buf *b) {
    while (can_access(b, 0) && AT(b)[0] <= 32) b->offset++;
    if (b->offset == b->length) b->offset--;
    return b;
}

static unsigned hex4(const unsigned char *p) {
    unsigned h = 0;
    for (int i = 0; i < 4; i++) {
        if (p[i] >= '0' && p[i] <= '9')
            h += (unsigned)(p[i] - '0');
        else if (p[i] >= 'A' && p[i] <= 'F')
            h += 10u + (unsigned)(p[i] - 'A');
        else if (p[i] >= 'a' && p[i] <= 'f')
            h += 10u + (unsigned)(p[i] - 'a');
        else
            return 0;
        if (i < 3) h <<= 4;
    }
    return h;
}

// A \uXXXX escape (or a surrogate pair of two) at p as UTF-8 at *out: the bytes of input it
// took (6 or 12), or 0 when it is not a valid escape.
static int utf16_to_utf8(const unsigned char *p, const unsigned char *end, unsigned char **out) {
    if (end - p < 6) return 0;
    unsigned long cp;
    unsigned first = hex4(p + 2);
    int len;
    if (first >= 0xDC00 && first <= 0xDFFF) return 0;
    if (first >= 0xD800 && first <= 0xDBFF) {
        const unsigned char *q = p + 6;
        if (end - q < 6 || q[0] != '\\' || q[1] != 'u') return 0;
        unsigned second = hex4(q + 2);
        if (second < 0xDC00 || second > 0xDFFF) return 0;
        cp = 0x10000 + (((unsigned long)(first & 0x3FF) << 10) | (second & 0x3FF));
        len = 12;
    } else {
        cp = first;
        len = 6;
    }
    unsigned char *o = *out;
    if (cp < 0x80)
        *o++ = (unsigned char)cp;
    else if (cp < 0x800)
        *o++ = (unsigned char)(0xC0 | (cp >> 6)), *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    else if (cp < 0x10000)
        *o++ = (unsigned char)(0xE0 | (cp >> 12)),
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)),
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    else
        *o++ = (unsigned char)(0xF0 | (cp >> 18)),
        *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F)),
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)),
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    *out = o;
    return len;
}

// A string at the cursor (its opening quote) into *s.
static int parse_string_to(char **s, Buf *b) {
    const unsigned char *in = AT(b) + 1, *end = AT(b) + 1;
    unsigned char *outbuf = NULL, *o;
    if (AT(b)[0] != '"') goto fail;
    while ((size_t)(end - b->content) < b->length && *end != '"') {
        if (end[0] == '\\') {
            if ((size_t)(end + 1 - b->content) >= b->length) goto fail;
            end++;
        }
        end++;
    }
    if ((size_t)(end - b->content) >= b->length || *end != '"') goto fail;
    outbuf = malloc((size_t)(end - in) +
                    1);  // an escape never grows: \uXXXX is 6 bytes, at most 3 of UTF-8
    if (!outbuf) goto fail;
    o = outbuf;
    while (in < end) {
        if (*in != '\\') {
            *o++ = *in++;
            continue;
        }
        int n = 2;
        if (end - in < 1) goto fail;
        switch (in[1]) {
        case 'b':
            *o++ = '\b';
            break;
        case 'f':
            *o++ = '\f';
            break;
        case 'n':
            *o++ = '\n';
            break;
        case 'r':
            *o++ = '\r';
            break;
        case 't':
            *o++ = '\t';
            break;
        case '"':
        case '\\':
        case '/':
            *o++ = in[1];
            break;
        case 'u':
            n = utf16_to_utf8(in, end, &o);
            if (n == 0) goto fail;
            break;
        default:
            goto fail;
        }
        in += n;
    }
    *o = '\0';
    *s = (char *)outbuf;
    b->offset = (size_t)(end - b->content) + 1;
    return 1;
fail:
    free(outbuf);
    b->offset = (size_t)(in - b->content);
    return 0;
}

static int parse_number(cJSON *item, Buf *b) {
    size_t n = 0;
    for (; can_access(b, n); n++) {
        unsigned char ch = AT(b)[n];
        if (!((ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == 'e' || ch == 'E' ||
              ch == '.'))
            break;
    }
    char *num = malloc(n + 1), *after = NULL;
    if (!num) return 0;
    memcpy(num, AT(b), n);
    num[n] = '\0';
    double v = strtod(num, &after);
    size_t used = (size_t)(after - num);
    free(num);
    if (used == 0) return 0;
    item->valuedouble = v;
    item->valueint = v >= INT_MAX ? INT_MAX : v <= (double)INT_MIN ? INT_MIN : (int)v;
    item->type = cJSON_Number;
    b->offset += used;
    return 1;
}

static int parse_value(cJSON *item, Buf *b);

// An array ('[') or an object ('{') at the cursor: elements separated by ',', an object's each
// "key" ':' value.
static int parse_container(cJSON *item, Buf *b, int object) {
    const unsigned char open = object ? '{' : '[', close = object ? '}' : ']';
    cJSON *head = NULL, *cur = NULL;
    if (b->depth >= CJSON_NESTING_LIMIT) return 0;
    b->depth++;
    if (!can_access(b, 0) || AT(b)[0] != open) goto fail;
    b->offset++;
    skip_ws(b);
    if (can_access(b, 0) && AT(b)[0] == close) goto success;
    if (!can_access(b, 0)) {
        b->offset--;
        goto fail;
    }
    b->offset--;
    do {
        cJSON *n = new_item();
        if (!n) goto fail;
        if (!head)
            head = cur = n;
        else
            cur->next = n, n->prev = cur, cur = n;
        if (object) {
            if (!can_access(b, 1)) goto fail;
            b->offset++;
            skip_ws(b);
            if (!parse_string_to(&cur->string, b)) goto fail;
            skip_ws(b);
            if (!can_access(b, 0) || AT(b)[0] != ':') goto fail;
        }
        b->offset++;
        skip_ws(b);
        if (!parse_value(cur, b)) goto fail;
        skip_ws(b);
    } while (can_access(b, 0) && AT(b)[0] == ',');
    if (!can_access(b, 0) || AT(b)[0] != close) goto fail;
success:
    b->depth--;
    if (head) head->prev = cur;
    item->type = object ? cJSON_Object : cJSON_Array;
    item->child = head;
    b->offset++;
    return 1;
fail:
    cJSON_Delete(head);
    return 0;
}

static int parse_value(cJSON *item, Buf *b) {
    if (can_read(b, 4) && strncmp((const char *)AT(b), "null", 4) == 0) {
        item->type = cJSON_NULL;
        b->offset += 4;
        return 1;
    }
    if (can_read(b, 5) && strncmp((const char *)AT(b), "false", 5) == 0) {
        item->type = cJSON_False;
        b->offset += 5;
        return 1;
    }
    if (can_read(b, 4) && strncmp((const char *)AT(b), "true", 4) == 0) {
        item->type = cJSON_True;
        item->valueint = 1;
        b->offset += 4;
        return 1;
    }
    if (!can_access(b, 0)) return 0;
    unsigned char ch = AT(b)[0];
    if (ch == '"') {
        if (!parse_string_to(&item->valuestring, b)) return 0;
        item->type = cJSON_String;
        return 1;
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) return parse_number(item, b);
    if (ch == '[') return parse_container(item, b, 0);
    if (ch == '{') return parse_container(item, b, 1);
    return 0;
}

cJSON *cJSON_ParseWithLengthOpts(const char *value, size_t buffer_length,
                                 const char **return_parse_end,
                                 cJSON_bool require_null_terminated) {
    Buf b = {(const unsigned char *)value, buffer_length, 0, 0};
    cJSON *item = NULL;
    if (!value || buffer_length == 0) goto fail;
    item = new_item();
    if (!item) goto fail;
    if (can_access(&b, 4) && strncmp(value, "\xEF\xBB\xBF", 3) == 0) b.offset += 3;
    if (!parse_value(item, skip_ws(&b))) goto fail;
    if (require_null_terminated) {
        skip_ws(&b);
        if (b.offset >= b.length || AT(&b)[0] != '\0') goto fail;
    }
    if (return_parse_end) *return_parse_end = (const char *)AT(&b);
    return item;
fail:
    cJSON_Delete(item);
    if (value && return_parse_end) {
        size_t pos = 0;
        if (b.offset < b.length)
            pos = b.offset;
        else if (b.length > 0)
            pos = b.length - 1;
        *return_parse_end = value + pos;
    }
    return NULL;
}

cJSON_bool cJSON_IsInvalid(const cJSON *i) { return i && (i->type & 0xFF) == cJSON_Invalid; }
cJSON_bool cJSON_IsFalse(const cJSON *i) { return i && (i->type & 0xFF) == cJSON_False; }
cJSON_bool cJSON_IsTrue(const cJSON *i) { return i && (i->type & 0xFF) == cJSON_True; }
cJSON_bool cJSON_IsBool(const cJSON *i) { return i && (i->type & (cJSON_True | cJSON_False)) != 0; }
cJSON_bool cJSON_IsNull(const cJSON *i) { return i && (i->type & 0xFF) == cJSON_NULL; }
cJSON_bool cJSON_IsNumber(const cJSON *i) { return i && (i->type & 0xFF) == cJSON_Number; }
cJSON_bool cJSON_IsString(const cJSON *i) { return i && (i->type & 0xFF) == cJSON_String; }
cJSON_bool cJSON_IsArray(const cJSON *i) { return i && (i->type & 0xFF) == cJSON_Array; }
cJSON_bool cJSON_IsObject(const cJSON *i) { return i && (i->type & 0xFF) == cJSON_Object; }

#else
typedef int json_own_not_chosen;  // a translation unit holds a declaration (ISO C)
#endif
