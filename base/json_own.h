// base/json_own.h: the part of cJSON's interface that base/config.c uses, for a build without a
// cJSON library (the web build: none exists for wasm32; base/json.h chooses it under JSON_OWN).
// base/json_own.c implements it with cJSON 1.7.15's semantics: the same accepted texts, the same
// values, the same position of a syntax error; tests/json_check.c compares the two.
#ifndef BASE_JSON_OWN_H
#define BASE_JSON_OWN_H

#include <stddef.h>

#define cJSON_Invalid (0)
#define cJSON_False   (1 << 0)
#define cJSON_True    (1 << 1)
#define cJSON_NULL    (1 << 2)
#define cJSON_Number  (1 << 3)
#define cJSON_String  (1 << 4)
#define cJSON_Array   (1 << 5)
#define cJSON_Object  (1 << 6)

#ifndef CJSON_NESTING_LIMIT
#define CJSON_NESTING_LIMIT 1000
#endif

typedef int cJSON_bool;

typedef struct cJSON {
    struct cJSON *next, *prev;
    struct cJSON *child;  // an array's or object's first element
    int type;
    char *valuestring;  // a string's value (NUL-terminated, UTF-8)
    int valueint;       // a number's value saturated to int
    double valuedouble;
    char *string;  // an object member's key
} cJSON;

// Parse buffer_length bytes of value. With require_null_terminated the text must end (after
// whitespace) at a NUL inside the length. *return_parse_end: where parsing stopped, or on
// failure where the error is. NULL on failure.
cJSON *cJSON_ParseWithLengthOpts(const char *value, size_t buffer_length,
                                 const char **return_parse_end, cJSON_bool require_null_terminated);
void cJSON_Delete(cJSON *item);
cJSON_bool cJSON_IsInvalid(const cJSON *item);
cJSON_bool cJSON_IsFalse(const cJSON *item);
cJSON_bool cJSON_IsTrue(const cJSON *item);
cJSON_bool cJSON_IsBool(const cJSON *item);
cJSON_bool cJSON_IsNull(const cJSON *item);
cJSON_bool cJSON_IsNumber(const cJSON *item);
cJSON_bool cJSON_IsString(const cJSON *item);
cJSON_bool cJSON_IsArray(const cJSON *item);
cJSON_bool cJSON_IsObject(const cJSON *item);

#endif
