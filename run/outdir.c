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
#include "base/outfile.h"

int ensure_dir(const char *path, char *err, size_t errlen) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char saved = *p;
            *p = 0;
            struct stat st;
            if (stat(buf, &st) != 0) {
                if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                    snprintf(err, errlen, "cannot create output directory '%.900s': %s", buf,
                             strerror(errno));
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
        snprintf(err, errlen,
                 "output directory '%s' is in use by another trainer: wait for it to finish, or "
                 "give this run"
                 " another --train.out_dir (or --name)",
                 dir);
        return 0;
    }
    static int warned = 0;
    if (!warned)
        fprintf(
            stderr,
            "train: warning: cannot lock '%s' (%s): nothing stops a second trainer writing there\n",
            dir, strerror(e));
    warned = 1;
    return 1;
}

// The files a run writes, besides checkpoint_<step>.bin.
static const char *const RUN_FILES[] = {
    "checkpoint.bin", "best.bin",    "metrics.csv", "attention.csv",
    "summary.json",   "compare.csv", "report.md",   "scaling.svg",
    "compare.svg",    "report.html", NULL};

// "checkpoint_<step>.bin" of length n, as the trainer writes it ("%ld": no sign, no leading zero):
// its step, else -1.
static long step_checkpoint(const char *name, size_t n) {
    if (n < 16 || strncmp(name, "checkpoint_", 11) != 0 || strncmp(name + n - 4, ".bin", 4) != 0)
        return -1;
    if (name[11] == '0' && n > 16) return -1;
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

// Call f(dir, name, arg) for every entry of dir that keep(name) accepts.
static void for_each_entry(const char *dir, int (*keep)(const char *),
                           void (*f)(const char *, const char *, void *), void *arg) {
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
    if (!buf[0]) snprintf(buf, 64, "%.63s", name);
}

const char *outdir_run_file(const char *dir, char *buf, size_t n) {
    char path[4200], step_ckpt[64] = "";
    for (int i = 0; RUN_FILES[i]; i++) {  // in the order of RUN_FILES: the checkpoint first
        snprintf(path, sizeof path, "%s/%s", dir, RUN_FILES[i]);
        struct stat st;
        if (lstat(path, &st) == 0) {  // a symbolic link (even a dangling one) by that name counts
            snprintf(buf, n, "%s", RUN_FILES[i]);
            return buf;
        }
    }
    for_each_entry(dir, is_step_checkpoint, first_name, step_ckpt);
    if (!step_ckpt[0]) return NULL;
    snprintf(buf, n, "%s", step_ckpt);
    return buf;
}

// The first run file of dir that is not a regular file (a symbolic link, a directory, a FIFO...).
static void first_odd(const char *dir, const char *name, void *arg) {
    char *buf = arg, path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!buf[0] && lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) snprintf(buf, 300, "%s", name);
}

static void remove_entry(const char *dir, const char *name, void *arg) {
    (void)arg;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) return;  // only regular files are removed
    if (unlink(path) != 0 && errno != ENOENT)
        die(EXIT_RUNTIME, "cannot remove '%s': %s", path, strerror(errno));
}

int outdir_clear_run(const char *dir, char *err, size_t errlen) {
    struct stat st;
    if (lstat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen,
                 "'%s' %s: --train.overwrite=true replaces the files of a run's own"
                 " directory only (remove it yourself or choose another train.out_dir)",
                 dir,
                 S_ISLNK(st.st_mode) ? "is a symbolic link, not a directory"
                                     : "is not a directory");
        return 0;
    }
    char odd[300] = "";
    for_each_entry(dir, is_run_file, first_odd, odd);
    if (odd[0]) {
        snprintf(
            err, errlen,
            "'%s/%s' is not a regular file this program wrote (a symbolic link, a directory or a"
            " device): --train.overwrite=true removes nothing else; remove it yourself or choose "
            "another"
            " train.out_dir",
            dir, odd);
        return 0;
    }
    for_each_entry(dir, is_run_file, remove_entry, NULL);
    return 1;
}

int outdir_check_run_files(const char *dir, char *err, size_t errlen) {
    char odd[300] = "", path[4400];
    for_each_entry(dir, is_run_file, first_odd, odd);
    if (!odd[0]) return 1;
    snprintf(path, sizeof path, "%s/%s", dir, odd);
    if (!out_check_target(path, err, errlen)) return 0;
    return 1;  // (replaced by a regular file meanwhile)
}

static int is_run_file_len(const char *name, size_t n) { return is_run_file_n(name, n); }

void outdir_remove_stale_temps(const char *dir) {
    char err[1200];
    if (out_remove_stale_temps(dir, is_run_file_len, err, sizeof err) < 0)
        die(EXIT_RUNTIME, "%s", err);
}

int outdir_same_dir(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && S_ISDIR(sa.st_mode) &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// A resumed run continues its logs without repeating rows written after the last checkpoint.
void truncate_csv(const char *path, long max_step, const char *header) {
    char err[2400];
    struct stat st;
    if (lstat(path, &st) != 0) return;  // a log that was never written: it starts anew
    if (!out_check_target(path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    uint64_t size;
    const char *why;
    FILE *in = fopen_regular(path, &size, &why);
    if (!in) die(EXIT_RUNTIME, "cannot read '%s': %s", path, why);
    FILE *out = out_begin_or_die(path, 0);
    // lines of any length, each whole (getline): a long row is one row, kept or dropped as one
    char *line = NULL;
    size_t cap = 0;
    int first = 1;
    ssize_t len;
    while ((len = getline(&line, &cap, in)) > 0) {
        size_t n = strcspn(line, "\r\n");
        if (first && n > 0 && n < strlen(header) && strncmp(line, header, n) == 0 &&
            header[n] == ',')
            fputs(header, out);
        else if (first || strtol(line, NULL, 10) <= max_step)
            fwrite(line, 1, (size_t)len, out);
        first = 0;
    }
    free(line);
    fclose(in);
    out_end_or_die(out);
}

// ---------------------------------------------------------------------------------------------
// pruning checkpoints

typedef struct {
    long *steps;
    size_t n, cap;
    long upto;
} StepList;

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
