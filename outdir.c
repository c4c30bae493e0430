// outdir.c: the output directory and the files a run writes there.
#define _POSIX_C_SOURCE 200809L
#include "outdir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

int ensure_dir(const char *path, char *err, size_t errlen) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char saved = *p;
            *p = 0;
            struct stat st;
            if (stat(buf, &st) != 0) {
                if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                    snprintf(err, errlen, "cannot create output directory '%.900s': %s", buf, strerror(errno));
                    return 0;
                }
            } else if (!S_ISDIR(st.st_mode)) {
                snprintf(err, errlen, "output path '%.900s' exists and is not a directory", buf);
                return 0;
            }
            *p = saved;
            if (saved == 0) break;
        }
    }
    if (access(path, W_OK) != 0) {
        snprintf(err, errlen, "output directory '%s' is not writable: %s", path, strerror(errno));
        return 0;
    }
    return 1;
}

void join_path(char *out, size_t n, const char *dir, const char *file) {
    int w = snprintf(out, n, "%s/%s", dir, file);
    if (w < 0 || (size_t)w >= n) die(EXIT_USAGE, "path too long: '%s/%s'", dir, file);
}

FILE *open_or_die(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f) die(EXIT_RUNTIME, "cannot open '%s' for writing: %s", path, strerror(errno));
    return f;
}

// A resumed run continues its logs without repeating rows written after the last checkpoint.
void truncate_csv(const char *path, long max_step) {
    FILE *in = fopen(path, "r");
    if (!in) return;
    char tmp[2100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = open_or_die(tmp, "w");
    char line[8192];
    int first = 1;
    while (fgets(line, sizeof line, in)) {
        if (first || strtol(line, NULL, 10) <= max_step) fputs(line, out);
        first = 0;
    }
    fclose(in);
    if (fflush(out) != 0 || fclose(out) != 0) die(EXIT_RUNTIME, "cannot write '%s': %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0) die(EXIT_RUNTIME, "cannot replace '%s': %s", path, strerror(errno));
}
