// run/outdir.c: the output directory and the files a run writes there.
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE   // flock (glibc)
#define _DARWIN_C_SOURCE  // flock (macOS)
#include "run/outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/common.h"

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

// ---------------------------------------------------------------------------------------------
// claiming a directory

int outdir_lock(const char *dir, char *err, size_t errlen) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open output directory '%s': %s", dir, strerror(errno));
        return 0;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 1;  // fd stays open: the lock lasts until exit
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK) {
        snprintf(err, errlen, "output directory '%s' is in use by another trainer: wait for it to finish, or give this run"
                 " another --train.out_dir (or --name)", dir);
        return 0;
    }
    static int warned = 0;
    if (!warned) fprintf(stderr, "train: warning: cannot lock '%s' (%s): nothing stops a second trainer writing there\n",
                         dir, strerror(e));
    warned = 1;
    return 1;
}

// The files a run writes, besides checkpoint_<step>.bin.
static const char *const RUN_FILES[] = {"checkpoint.bin", "best.bin", "metrics.csv", "attention.csv", "summary.json",
                                        "compare.csv", "report.md", "scaling.svg", "compare.svg", "report.html", NULL};

// "checkpoint_<digits>.bin" of length n: its step, else -1.
static long step_checkpoint(const char *name, size_t n) {
    if (n < 16 || strncmp(name, "checkpoint_", 11) != 0 || strncmp(name + n - 4, ".bin", 4) != 0) return -1;
    long step = 0;
    for (size_t i = 11; i < n - 4; i++) {
        if (name[i] < '0' || name[i] > '9' || step > 100000000000L) return -1;
        step = step * 10 + (name[i] - '0');
    }
    return step;
}

static int is_run_file_n(const char *name, size_t n) {
    for (int i = 0; RUN_FILES[i]; i++)
        if (strlen(RUN_FILES[i]) == n && strncmp(name, RUN_FILES[i], n) == 0) return 1;
    return step_checkpoint(name, n) >= 0;
}

static int is_run_file(const char *name) { return is_run_file_n(name, strlen(name)); }
static int is_step_checkpoint(const char *name) { return step_checkpoint(name, strlen(name)) >= 0; }

// NAME.tmp or NAME.tmp.<anything> for a run file NAME (this program's and run/checkpoint.c's
// temporary files, of this version and earlier ones).
static int is_run_temp(const char *name) {
    for (const char *t = strstr(name, ".tmp"); t; t = strstr(t + 1, ".tmp"))
        if ((t[4] == 0 || t[4] == '.') && is_run_file_n(name, (size_t)(t - name))) return 1;
    return 0;
}

// Call f(dir, name, arg) for every entry of dir that keep(name) accepts.
static void for_each_entry(const char *dir, int (*keep)(const char *), void (*f)(const char *, const char *, void *),
                           void *arg) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (keep(e->d_name)) f(dir, e->d_name, arg);
    closedir(d);
}

static void first_name(const char *dir, const char *name, void *arg) {
    (void)dir;
    char *buf = arg;
    if (!buf[0]) snprintf(buf, 64, "%s", name);
}

const char *outdir_run_file(const char *dir, char *buf, size_t n) {
    char path[4200], step_ckpt[64] = "";
    for (int i = 0; RUN_FILES[i]; i++) {  // in the order of RUN_FILES: the checkpoint first
        snprintf(path, sizeof path, "%s/%s", dir, RUN_FILES[i]);
        if (access(path, F_OK) == 0) {
            snprintf(buf, n, "%s", RUN_FILES[i]);
            return buf;
        }
    }
    for_each_entry(dir, is_step_checkpoint, first_name, step_ckpt);
    if (!step_ckpt[0]) return NULL;
    snprintf(buf, n, "%s", step_ckpt);
    return buf;
}

static void remove_entry(const char *dir, const char *name, void *arg) {
    (void)arg;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (remove(path) != 0 && errno != ENOENT) die(EXIT_RUNTIME, "cannot remove '%s': %s", path, strerror(errno));
}

void outdir_clear_run(const char *dir) { for_each_entry(dir, is_run_file, remove_entry, NULL); }

void outdir_remove_stale_temps(const char *dir) { for_each_entry(dir, is_run_temp, remove_entry, NULL); }

int outdir_same_dir(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && S_ISDIR(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// ---------------------------------------------------------------------------------------------
// files replaced whole

static char g_temp_path[4200];                 // the temporary file being written
static volatile sig_atomic_t g_temp_active = 0;
static char g_final_path[4100];

void outdir_remove_temp_now(void) {
    if (g_temp_active) unlink(g_temp_path);
}

static void remove_temp_at_exit(void) {
    outdir_remove_temp_now();
    g_temp_active = 0;
}

FILE *outfile_open(const char *path) {
    static unsigned serial = 0;
    static int registered = 0;
    if (!registered && atexit(remove_temp_at_exit) == 0) registered = 1;
    if (g_temp_active) die(EXIT_RUNTIME, "internal error: '%s' is still being written", g_final_path);
    snprintf(g_final_path, sizeof g_final_path, "%s", path);
    for (;;) {
        snprintf(g_temp_path, sizeof g_temp_path, "%s.tmp.%ld.%u", path, (long)getpid(), serial++);
        int fd = open(g_temp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            g_temp_active = 1;
            FILE *f = fdopen(fd, "w");
            if (!f) die(EXIT_RUNTIME, "cannot write '%s': %s", g_temp_path, strerror(errno));
            return f;
        }
        if (errno != EEXIST) die(EXIT_RUNTIME, "cannot write '%s': %s", g_temp_path, strerror(errno));
    }
}

void outfile_commit(FILE *f) {
    int failed = fflush(f) != 0 || ferror(f);
    int e = errno;
    if (fclose(f) != 0 && !failed) failed = 1, e = errno;
    if (failed) die(EXIT_RUNTIME, "cannot write '%s': %s", g_temp_path, strerror(e));
    if (rename(g_temp_path, g_final_path) != 0) die(EXIT_RUNTIME, "cannot replace '%s': %s", g_final_path, strerror(errno));
    g_temp_active = 0;
}

// A resumed run continues its logs without repeating rows written after the last checkpoint.
void truncate_csv(const char *path, long max_step) {
    FILE *in = fopen(path, "r");
    if (!in) return;
    FILE *out = outfile_open(path);
    char line[8192];
    int first = 1;
    while (fgets(line, sizeof line, in)) {
        if (first || strtol(line, NULL, 10) <= max_step) fputs(line, out);
        first = 0;
    }
    fclose(in);
    outfile_commit(out);
}

// ---------------------------------------------------------------------------------------------
// pruning checkpoints

typedef struct { long *steps; size_t n, cap; long upto; } StepList;

static void collect_step(const char *dir, const char *name, void *arg) {
    (void)dir;
    StepList *l = arg;
    long step = step_checkpoint(name, strlen(name));
    if (step > l->upto) return;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        long *grown = realloc(l->steps, l->cap * sizeof(long));
        if (!grown) die(EXIT_RUNTIME, "out of memory listing '%s'", dir);
        l->steps = grown;
    }
    l->steps[l->n++] = step;
}

static int cmp_desc(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x < y) - (x > y);
}

void outdir_prune_checkpoints(const char *dir, int keep, long upto) {
    StepList l = {NULL, 0, 0, upto};
    for_each_entry(dir, is_step_checkpoint, collect_step, &l);
    qsort(l.steps, l.n, sizeof(long), cmp_desc);
    for (size_t i = (size_t)keep; i < l.n; i++) {
        char name[64];
        snprintf(name, sizeof name, "checkpoint_%ld.bin", l.steps[i]);
        remove_entry(dir, name, NULL);
    }
    free(l.steps);
}
