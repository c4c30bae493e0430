// tests/json_check.c: base/config.c on the web build's JSON parser (base/json_own.c) against the
// same code on the system's cJSON. tools/web-check.sh builds this program twice, once with each,
// and fails unless both print the same: for every file named and every text of the table below,
// whether config_load_json + config_finalize accept it, the message when not, and the resolved
// config (config_to_json) when so.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

static void check(const char *origin, const char *text, size_t len) {
    Config c;
    char err[1024] = "";
    config_defaults(&c);
    int ok = config_load_json(&c, text, len, origin, err, sizeof err) &&
             config_finalize(&c, err, sizeof err);
    if (!ok) {
        printf("%s: refused: %s\n", origin, err);
        return;
    }
    char *j = config_to_json(&c);
    printf("%s: accepted:\n%s\n", origin, j);
    free(j);
}

// Texts a parser can get wrong: syntax at every place, escapes, numbers, nesting, whitespace.
static const char *const table[] = {
    "",
    " ",
    "{",
    "}",
    "[]",
    "null",
    "true",
    "1",
    "\"x\"",
    "{}",
    " {} ",
    "{} x",
    "{}\x01",
    "\xEF\xBB\xBF{}",
    "{,}",
    "{\"model\":}",
    "{\"model\" {}}",
    "{\"model\":{},}",
    "{\"model\":{\"n_layer\":2,}}",
    "{\"model\":{\"n_layer\" 2}}",
    "{'model':{}}",
    "{\"model\":{\"n_layer\":02}}",
    "{\"model\":{\"n_layer\":+2}}",
    "{\"model\":{\"n_layer\":2.}}",
    "{\"model\":{\"n_layer\":2.0}}",
    "{\"model\":{\"n_layer\":2e0}}",
    "{\"model\":{\"n_layer\":-}}",
    "{\"model\":{\"n_layer\":1e}}",
    "{\"model\":{\"n_layer\":0x2}}",
    "{\"model\":{\"n_layer\":1.5.1}}",
    "{\"model\":{\"n_layer\":Infinity}}",
    "{\"model\":{\"n_layer\":NaN}}",
    "{\"train\":{\"lr\":1e400}}",
    "{\"train\":{\"lr\":1e-400}}",
    "{\"train\":{\"lr\":0.000000000000000000000000000000000000000000000000000000000000000000001}}",
    "{\"train\":{\"lr\":0."
    "00100000000000000000000000000000000000000000000000000000000000000000000000}}",
    "{\"model\":{\"n_layer\":true}}",
    "{\"model\":{\"n_layer\":null}}",
    "{\"model\":{\"n_layer\":[2]}}",
    "{\"model\":{\"n_layer\":{}}}",
    "{\"model\":{\"n_layer\":tru}}",
    "{\"model\":{\"n_layer\":nul}}",
    "{\"model\":{\"n_layer\":falsey}}",
    "{\"model\":{\"attn_scale\":\"none\"}}",
    "{\"model\":{\"attn_scale\":\"no\\u006ee\"}}",
    "{\"model\":{\"attn_scale\":\"\\none\"}}",
    "{\"model\":{\"attn_scale\":\"none\\\"}}",
    "{\"model\":{\"attn_scale\":\"none}}",
    "{\"model\":{\"attn_scale\":\"\\x\"}}",
    "{\"model\":{\"attn_scale\":\"\\u12\"}}",
    "{\"model\":{\"attn_scale\":\"\\uZZZZ\"}}",
    "{\"model\":{\"attn_scale\":\"\\ud800\"}}",
    "{\"model\":{\"attn_scale\":\"\\udc00\"}}",
    "{\"model\":{\"attn_scale\":\"\\ud83d\\ude00\"}}",
    "{\"model\":{\"attn_scale\":\"\\ud83d\\u0041\"}}",
    "{\"model\":{\"attn_scale\":\"\\u0000\"}}",
    "{\"name\":\"a\\u00e9\\u4e2d\"}",
    "{\"name\":\"tab\there\"}",
    "{\"name\":\"\\/\\b\\f\\r\\t\"}",
    "{\"name\":\"\xc3\xa9\"}",
    "{\"name\":\"\xc3\"}",
    "{\"Model\":{}}",
    "{\"model\":{\"N_LAYER\":2}}",
    "{\"model\":{},\"model\":{}}",
    "{\"model\":{\"n_layer\":2,\"n_layer\":3}}",
    "{\"model.n_layer\":2}",
    "{\"model\":[]}",
    "{\"model\":{\"qk_norm\":\"rmsnorm\"},\"train\":{\"z_loss\":1e-4}}",
    "{\"model\":{\"qk_norm\":\"l2\"}}",
    "{\"train\":{\"z_loss\":-1}}",
    "{\"model\":{\"n_embd\":30,\"n_head\":4}}",
    "\n\n  {\"model\":\n {\"n_layer\": x}}",
    "{\"model\":{\"n_layer\":2}}\n\n",
    "{\"model\":{\"n_layer\":2}}]",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
    "[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
    "]]]]]]]]]]]]",
};

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            printf("%s: cannot open\n", argv[i]);
            continue;
        }
        static char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        check(argv[i], buf, n);
    }
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        char origin[32];
        snprintf(origin, sizeof origin, "table[%zu]", i);
        check(origin, table[i], strlen(table[i]));
    }
    // deeper than cJSON's nesting limit, and an embedded NUL
    static char deep[2100];
    memset(deep, '[', 1001);
    memset(deep + 1001, ']', 1001);
    check("deep", deep, 2002);
    check("nul", "{\"model\":{}}\0{}", 15);
    return 0;
}
