// tests/test_build.c: the Makefile tracks the headers of every folder: a changed header rebuilds
// exactly the objects whose sources include it, directly or through another header. `make -n -W
// HEADER all` (what make would run were HEADER just modified) is compared with the includes
// read from the sources themselves. The name starts with cli_ as the tests that start programs do
// (the float64 and ARM64 runs skip those).
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define MAX_OBJS   256
#define PATH_CHARS 256

typedef struct {
    char src[MAX_OBJS][PATH_CHARS], obj[MAX_OBJS][PATH_CHARS];
    int n;
} Compiles;

// The compilations a make command would run ("... -c SRC -o OBJ" lines of its dry run). make
// inherits MAKEFLAGS from `make test`, so it looks at the objects of the same build (CC,
// NO_OMP...). Its stamp of the build's flags goes to a file of its own: a dry run changes nothing.
static int dry_run(const char *make_args, Compiles *c) {
    char cmd[512], stamp[64];
    snprintf(stamp, sizeof stamp, "/tmp/test_build_stamp_%ld", (long)getpid());
    snprintf(cmd, sizeof cmd, "make -n STAMP=%s %s all 2>/dev/null", stamp, make_args);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    static char line[16384];
    c->n = 0;
    while (fgets(line, sizeof line, p)) {
        const char *s = strstr(line, " -c "), *o = strstr(line, " -o ");
        if (!s || !o || o < s || c->n == MAX_OBJS) continue;
        if (sscanf(s + 4, "%255s", c->src[c->n]) == 1 &&
            sscanf(o + 4, "%255s", c->obj[c->n]) == 1 && strstr(c->obj[c->n], ".o"))
            c->n++;
    }
    int ok = pclose(p) == 0;
    remove(stamp);
    return ok;
}

static int has_obj(const Compiles *c, const char *obj) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->obj[i], obj) == 0) return 1;
    return 0;
}

// Whether `file` includes `header` ("..." includes, found from the top as -I. does, or beside
// the including file), directly or through the headers it includes; depth bounds a cycle.
static int includes(const char *file, const char *header, int depth) {
    if (depth > 16) return 0;
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    char line[1024], name[PATH_CHARS], beside[2 * PATH_CHARS];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        const char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (sscanf(s, "#include \"%255[^\"]\"", name) != 1) continue;
        const char *slash = strrchr(file, '/');
        snprintf(beside, sizeof beside, "%.*s%s", slash ? (int)(slash - file + 1) : 0, file, name);
        FILE *top = fopen(name, "r");
        const char *path = top ? name : beside;
        if (top) fclose(top);
        found = strcmp(path, header) == 0 || includes(path, header, depth + 1);
    }
    fclose(f);
    return found;
}

static void test_build_header_change_rebuilds_dependents(void) {
    static Compiles every, pending, after;
    CHECK(dry_run("-B", &every));  // every compilation of `all`
    CHECK(dry_run("", &pending));  // those already due (none after `make all`)
    if (every.n < 10) SKIP("make -n -B all listed %d compilations: no make here?", every.n);
    if (pending.n == every.n) SKIP("nothing is built yet: run `make all` first");
    // a header of each floor below the top, included directly and through other headers
    static const char *const headers[] = {"base/common.h", "kernels/vec.h", "kernels/matmul.h",
                                          "attention.h",   "report/html.h", "teach/lab_core.h"};
    for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++) {
        char args[PATH_CHARS + 8];
        snprintf(args, sizeof args, "-W %s", headers[h]);
        CHECK(dry_run(args, &after));
        int expected = 0, spared = 0;
        for (int i = 0; i < every.n; i++) {
            if (has_obj(&pending, every.obj[i])) continue;
            int want = includes(every.src[i], headers[h], 0), got = has_obj(&after, every.obj[i]);
            expected += want;
            spared += !want;
            CHECK_MSG(want == got, "%s changed: %s %s rebuilt, but %s %s it", headers[h],
                      every.obj[i], got ? "is" : "is not", every.src[i],
                      want ? "includes" : "does not include");
        }
        // the check means something: the header has users, and not every object is one
        CHECK_MSG(expected > 0, "no source includes %s", headers[h]);
        if (strcmp(headers[h], "base/common.h") != 0)
            CHECK_MSG(spared > 0, "every object includes %s", headers[h]);
    }
}

const TestCase tests_build[] = {
    {"cli_build_header_change_rebuilds_dependents", test_build_header_change_rebuilds_dependents},
    {NULL, NULL},
};
