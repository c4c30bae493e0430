// tests/test_format.c: the C sources keep the layout .clang-format gives them: no line over 100
// columns (checked everywhere), and, where clang-format 14 is installed (the version the tree is
// laid out with: another major version lays some lines out otherwise), every file exactly as
// clang-format would write it. The names start with cli_ as the tests that start programs do (the
// float64 and ARM64 runs skip those).
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define MAX_COLUMNS  100
#define LIST_SOURCES "git ls-files '*.c' '*.h' 2>/dev/null"

// The characters of a line of UTF-8 (continuation bytes 10xxxxxx do not start one).
static int columns(const char *line) {
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)line; *p && *p != '\n'; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

static void test_format_lines_within_100_columns(void) {
    FILE *list = popen(LIST_SOURCES, "r");
    CHECK(list != NULL);
    if (!list) return;
    char path[512], line[4096];
    int files = 0, over = 0;
    while (fgets(path, sizeof path, list)) {
        path[strcspn(path, "\n")] = 0;
        FILE *f = fopen(path, "r");
        if (!f) continue;
        files++;
        for (int lineno = 1; fgets(line, sizeof line, f); lineno++)
            if (columns(line) > MAX_COLUMNS && over++ < 10)
                fprintf(stderr, "  %s:%d has %d columns\n", path, lineno, columns(line));
        fclose(f);
    }
    pclose(list);
    if (files == 0) SKIP("no git checkout here: the sources cannot be listed");
    CHECK_MSG(files > 100, "only %d sources listed", files);
    CHECK_MSG(over == 0, "%d lines over %d columns (clang-format -i FILE lays them out)", over,
              MAX_COLUMNS);
}

static void test_format_sources_follow_clang_format(void) {
    // clang-format-14 by that name, else clang-format when it is version 14
    const char *tool = system("command -v clang-format-14 > /dev/null 2>&1") == 0
                           ? "clang-format-14"
                           : "clang-format";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s --version 2>/dev/null", tool);
    FILE *v = popen(cmd, "r");
    char version[256] = "";
    if (v) {
        if (!fgets(version, sizeof version, v)) version[0] = 0;
        pclose(v);
    }
    if (!strstr(version, "version 14."))
        SKIP("clang-format 14 is not installed (%s): apt-get install clang-format-14",
             version[0] ? "another version" : "none");
    snprintf(cmd, sizeof cmd, LIST_SOURCES " | xargs %s --dry-run --Werror 2> /tmp/tgpt_format.txt",
             tool);
    int st = system(cmd);
    char out[2048] = "";
    FILE *f = fopen("/tmp/tgpt_format.txt", "r");
    if (f) {
        size_t n = fread(out, 1, sizeof out - 1, f);
        out[n] = 0;
        fclose(f);
    }
    remove("/tmp/tgpt_format.txt");
    CHECK_MSG(st == 0, "a source differs from its clang-format layout (clang-format -i FILE):\n%s",
              out);
}

const TestCase tests_format[] = {
    {"cli_format_lines_within_100_columns", test_format_lines_within_100_columns},
    {"cli_format_sources_follow_clang_format", test_format_sources_follow_clang_format},
    {NULL, NULL},
};
