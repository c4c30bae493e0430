// base/config_keys.h: the configuration's key table (base/config_keys.c), which loading,
// overrides and validation (base/config.c), the resolved JSON and the reference
// (base/config_text.c) read.
#ifndef CONFIG_KEYS_H
#define CONFIG_KEYS_H

#include <stddef.h>

#include "base/config.h"  // Config: where each key is stored

#define CONFIG_MAX_KEYS 64  // rows the table may hold (arrays sized by it)

typedef enum {
    T_INT,    // JSON integer -> int field
    T_NUM,    // finite JSON number -> double field
    T_STR,    // JSON string -> char[] field; min/max bound its length in bytes
    T_SCALE,  // model.attn_scale: "sqrt", "none" or a number -> attn_scale_str (config_finalize
              // resolves attn_scale)
} KeyType;

typedef struct {
    const char *key;  // dotted path: "section.key", or "key" at the top level
    KeyType type;
    size_t offset;             // of the field in Config
    size_t size;               // of the field (bounds string copies)
    double def;                // default for T_INT / T_NUM
    const char *def_str;       // default for T_STR / T_SCALE
    double min, max;           // allowed range (string length for T_STR)
    int min_open, max_open;    // 1 = that bound is exclusive
    const char *const *enums;  // NULL-terminated allowed strings for enum keys, else NULL
    const char *const
        *aliases;      // NULL, or pairs {old name, enum it stands for, ..., NULL}: still accepted
    int omit_default;  // written to the resolved config only when it differs from its default: a
                       // key added later leaves the config of a run at the defaults as it was
    const char *help;
} KeySpec;

// The rows, those of one section contiguous (config_to_json writes them as one JSON object).
extern const KeySpec CONFIG_KEYS[];
extern const int CONFIG_N_KEYS;

// Row of key, or -1.
int config_find_key(const char *key);
// The index of value among the names of enum key (the enums of the program follow their order),
// or -1 when key has no such name.
int config_enum_index(const char *key, const char *value);
// The name of an enum key's value of that index ("?" when it has none).
const char *config_enum_name(const char *key, int index);
// Length of the section prefix of a key ("model.n_layer" -> 5), 0 for a top-level key.
size_t config_section_len(const char *key);
// Index of the first row of section `name`, or -1 when no key lives in such a section.
int config_find_section(const char *name);

#endif
