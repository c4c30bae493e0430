// base/config_format.h: what the configuration's loading and checks (base/config.c) share with
// its text (base/config_text.c): a value and a key's range as text, a string key's field, a key's
// last component and the strict decimal parser, all defined in base/config.c.
#ifndef CONFIG_FORMAT_H
#define CONFIG_FORMAT_H

#include <stddef.h>

#include "base/config.h"       // Config
#include "base/config_keys.h"  // KeySpec

#define RANGE_CHARS 128  // "sqrt, none or (lo, hi]" with two %.17g numbers fits

// The string value of key k in c (a T_STR or T_SCALE field).
const char *cstr_field(const Config *c, const KeySpec *k);
// Shortest decimal text that reads back as exactly v (integral values without an exponent).
void fmt_double(char *buf, size_t n, double v);
// "1..64" for ints, "(0, 1)" for numbers, "length 1..1023" for strings, "gpt2, fan_in" for enums.
void fmt_range(const KeySpec *k, char *buf, size_t n);
// The last component of a dotted key ("model.n_layer" -> "n_layer").
const char *leaf(const char *key);
// Strict text -> number: plain decimal only, the whole text consumed (parse_decimal_text).
int parse_decimal(const char *s, double *out);

#endif
