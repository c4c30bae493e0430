// tests/programs.c: the helpers of tests/programs.h.
#define _POSIX_C_SOURCE 200809L
#include "programs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

char g_dir[64];
char g_out[65536], g_err[65536];

void tmpdir(const char *tag) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tgpt_%s_XXXXXX", tag);
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

void cleanup(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "  (could not remove %s)\n", g_dir);
}

void slurp(const char *path, char *buf, size_t n) {
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
}

int file_bytes(const char *path, unsigned char **out, size_t *n) {
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)len + 1);
    *n = fread(*out, 1, (size_t)len, f);
    fclose(f);
    return 1;
}

int run(const char *fmt, ...) {
    char cmd[8192], full[9000], po[128], pe[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(po, sizeof po, "%s/.stdout", g_dir);
    snprintf(pe, sizeof pe, "%s/.stderr", g_dir);
    snprintf(full, sizeof full, "(%s) >'%s' 2>'%s' </dev/null", cmd, po, pe);
    int st = system(full);
    slurp(po, g_out, sizeof g_out);
    slurp(pe, g_err, sizeof g_err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

void expand_at(char *out, size_t n, const char *tmpl, const char *dir) {
    size_t o = 0, dl = strlen(dir);
    for (const char *p = tmpl; *p && o + dl + 1 < n; p++) {
        if (*p == '@') {
            memcpy(out + o, dir, dl);
            o += dl;
        } else
            out[o++] = *p;
    }
    out[o] = 0;
}
