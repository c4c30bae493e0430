// base/outfile.c: the one writer of every output file (the rules are in base/outfile.h).
#define _POSIX_C_SOURCE 200809L
#include "base/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/common.h"

#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif

// The files being written. A slot is active while its temporary file exists; the signal handler
// reads only `active` and `tmp`.
typedef struct {
    FILE *f;
    int flags, is_stdout;
    char *path;
    char tmp[4400];
    volatile sig_atomic_t active;
} Slot;

static Slot g_slots[OUT_MAX_OPEN];
static unsigned long g_serial = 0;

void out_remove_temps_now(void) {
    for (int i = 0; i < OUT_MAX_OPEN; i++)
        if (g_slots[i].active) unlink(g_slots[i].tmp);
}

static void remove_temps_at_exit(void) {
    out_remove_temps_now();
    for (int i = 0; i < OUT_MAX_OPEN; i++) g_slots[i].active = 0;
}

// What an existing non-regular file is, for messages ("is a FIFO (named pipe)").
static void describe(const char *path, mode_t mode, char *buf, size_t n) {
    if (S_ISLNK(mode)) {
        char to[1024];
        ssize_t k = readlink(path, to, sizeof to - 1);
        if (k < 0) k = 0;
        to[k] = 0;
        snprintf(buf, n, "is a symbolic link (to '%.900s')", to);
    } else if (S_ISDIR(mode))
        snprintf(buf, n, "is a directory");
    else if (S_ISFIFO(mode))
        snprintf(buf, n, "is a FIFO (named pipe)");
    else if (S_ISCHR(mode))
        snprintf(buf, n, "is a character device");
    else if (S_ISBLK(mode))
        snprintf(buf, n, "is a block device");
    else if (S_ISSOCK(mode))
        snprintf(buf, n, "is a socket");
    else
        snprintf(buf, n, "is not a regular file");
}

// 1 when path does not exist or is a regular file (its mode in *mode, 0 when missing), else 0
// with the message.
static int target_ok(const char *path, mode_t *mode, char *err, size_t errlen) {
    struct stat st;
    *mode = 0;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 1;
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return 0;
    }
    if (S_ISREG(st.st_mode)) {
        *mode = st.st_mode;
        return 1;
    }
    char what[1100];
    describe(path, st.st_mode, what, sizeof what);
    snprintf(err, errlen,
             "cannot write '%s': it %s, not a regular file; nothing was written (remove it or name "
             "another file)",
             path, what);
    return 0;
}

int out_check_target(const char *path, char *err, size_t errlen) {
    mode_t mode;
    return target_ok(path, &mode, err, errlen);
}

static Slot *slot_of(FILE *f) {
    for (int i = 0; i < OUT_MAX_OPEN; i++)
        if (g_slots[i].f == f && (g_slots[i].active || g_slots[i].is_stdout)) return &g_slots[i];
    return NULL;
}

static void slot_free(Slot *s) {
    s->active = 0;
    free(s->path);
    s->path = NULL;
    s->f = NULL;
    s->is_stdout = 0;
}

// The temporary files of one target's killed writers (out_begin removes them): the target's
// own name in its directory.
static const char *g_stale_name;
static int is_stale_name(const char *name, size_t n) {
    return strlen(g_stale_name) == n && !strncmp(name, g_stale_name, n);
}

static void remove_stale_temps_of(const char *path) {
    char dir[4400], err[4600];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    g_stale_name = slash ? slash + 1 : path;
    (void)out_remove_stale_temps(dir, is_stale_name, err,
                                 sizeof err);  // (an unreadable directory: the write says why)
}

int out_is_input(const char *out, const char *const *inputs, int n, char *err, size_t errlen) {
    struct stat so, si;
    if (!out || !strcmp(out, "-") || stat(out, &so) != 0) return 0;
    for (int i = 0; i < n; i++)
        if (inputs[i] && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev &&
            si.st_ino == so.st_ino) {
            snprintf(err, errlen,
                     "cannot write '%s': it is (or links to) the input '%s', which writing it "
                     "would replace; "
                     "name another file for the output",
                     out, inputs[i]);
            return 1;
        }
    return 0;
}

FILE *out_begin(const char *path, int flags, char *err, size_t errlen) {
    static int registered = 0;
    if (!registered) registered = atexit(remove_temps_at_exit) == 0;
    Slot *s = NULL;
    for (int i = 0; i < OUT_MAX_OPEN && !s; i++)
        if (!g_slots[i].active && !g_slots[i].is_stdout) s = &g_slots[i];
    if (!s) {
        snprintf(err, errlen, "cannot write '%s': more than %d files open for writing at once",
                 path, OUT_MAX_OPEN);
        return NULL;
    }
    if ((flags & OUT_DASH) && strcmp(path, "-") == 0) {
        s->is_stdout = 1;
        s->f = stdout;
        s->flags = flags;
        return stdout;
    }
    if (!*path) {
        snprintf(err, errlen, "cannot write a file with an empty name");
        return NULL;
    }
    mode_t mode;
    if (!target_ok(path, &mode, err, errlen)) return NULL;
    size_t n = strlen(path);
    if (n + 48 > sizeof s->tmp) {
        snprintf(err, errlen, "cannot write '%.900s...': path too long", path);
        return NULL;
    }
    remove_stale_temps_of(path);
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 1000; attempt++) {
        snprintf(s->tmp, sizeof s->tmp, "%s.tmp.%ld.%lu", path, (long)getpid(), g_serial++);
        fd = open(s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot write '%s' (its temporary file '%s'): %s", path, s->tmp,
                 strerror(errno));
        return NULL;
    }
    s->active = 1;
#ifdef TGPT_TEST_HOOKS
    {  // TGPT_TEST_SIGNAL_WRITING=INT or TERM: that signal while the temporary file exists
        const char *sig = getenv("TGPT_TEST_SIGNAL_WRITING");
        if (sig) raise(!strcmp(sig, "INT") ? SIGINT : SIGTERM);
    }
#endif
    if (mode) fchmod(fd, mode & 07777);  // a replaced file keeps its permissions (best effort)
    s->path = malloc(n + 1);
    s->f = s->path ? fdopen(fd, "wb") : NULL;
    if (!s->f) {
        int e = s->path ? errno : ENOMEM;
        close(fd);
        unlink(s->tmp);
        slot_free(s);
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(e));
        return NULL;
    }
    memcpy(s->path, path, n + 1);
    s->flags = flags;
    return s->f;
}

// fsync the directory holding path so the rename itself is durable (best effort: some file
// systems refuse a directory fsync).
static void fsync_dir_of(const char *path) {
    char dir[4400];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        slash[1] = 0;
    else
        *slash = 0;
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

int out_end(FILE *f, char *err, size_t errlen) {
    Slot *s = slot_of(f);
    if (!s) {
        snprintf(err, errlen, "internal error: out_end on a stream out_begin did not open");
        if (f && f != stdout) fclose(f);
        return 0;
    }
    if (s->is_stdout) {
        int ok = fflush(stdout) == 0 && !ferror(stdout);
        if (!ok)
            snprintf(err, errlen, "cannot write to standard output: %s",
                     strerror(errno ? errno : EIO));
        slot_free(s);
        return ok;
    }
    int e = 0;
    if (fflush(f) != 0 || ferror(f)) e = errno ? errno : EIO;
    if (!e && (s->flags & OUT_DURABLE) && fsync(fileno(f)) != 0) e = errno;
    if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    s->f = NULL;
    mode_t mode;
    int ok = !e && target_ok(s->path, &mode, err, errlen);  // nothing was swapped in meanwhile
    if (ok && rename(s->tmp, s->path) != 0) e = errno, ok = 0;
    if (e) snprintf(err, errlen, "cannot write '%s': %s", s->path, strerror(e));
    if (!ok)
        unlink(s->tmp);
    else if (s->flags & OUT_DURABLE)
        fsync_dir_of(s->path);
    slot_free(s);
    return ok;
}

void out_cancel(FILE *f) {
    Slot *s = slot_of(f);
    if (!s) return;
    if (!s->is_stdout) {
        fclose(f);
        unlink(s->tmp);
    }
    slot_free(s);
}

FILE *out_begin_or_die(const char *path, int flags) {
    char err[2048];
    FILE *f = out_begin(path, flags, err, sizeof err);
    if (!f) die(EXIT_RUNTIME, "%s", err);
    return f;
}

void out_end_or_die(FILE *f) {
    char err[2048];
    if (!out_end(f, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
}

FILE *out_append(const char *path, int *was_empty, char *err, size_t errlen) {
    mode_t mode;
    *was_empty = 1;
    if (!target_ok(path, &mode, err, errlen)) return NULL;
    // O_NONBLOCK: were a FIFO swapped in after the check, the open does not wait for a reader
    int fd = open(
        path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        char what[1100];
        describe(path, st.st_mode, what, sizeof what);
        snprintf(err, errlen, "cannot write '%s': it %s, not a regular file; nothing was written",
                 path, what);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "a");
    if (!f) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    *was_empty = st.st_size == 0;
    return f;
}

// ---------------------------------------------------------------------------------------------
// the temporary files killed writers left

static int all_digits(const char *p, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9') return 0;
    return 1;
}

size_t out_temp_target(const char *name, long *pid) {
    size_t n = strlen(name);
    const char *last = strrchr(name, '.');  // before <n>
    if (!last || !all_digits(last + 1, n - (size_t)(last - name) - 1) ||
        n - (size_t)(last - name) - 1 > 20)
        return 0;
    const char *p = last;
    while (p > name && p[-1] >= '0' && p[-1] <= '9') p--;  // <pid>
    size_t pid_len = (size_t)(last - p);
    if (pid_len == 0 || pid_len > 9 || (size_t)(p - name) < 5 + 1 ||
        strncmp(p - 5, ".tmp.", 5) != 0)
        return 0;
    long v = strtol(p, NULL, 10);
    if (v <= 0) return 0;
    *pid = v;
    return (size_t)(p - 5 - name);
}

int out_remove_stale_temps(const char *dir, int (*is_target)(const char *name, size_t n), char *err,
                           size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "cannot read directory '%s': %s", dir, strerror(errno));
        return -1;
    }
    int dfd = dirfd(d), removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        size_t target = out_temp_target(e->d_name, &pid);
        if (!target || !is_target(e->d_name, target)) continue;
        if (pid == (long)getpid()) {
            int open_here = 0;  // one of ours that is being written
            for (int i = 0; i < OUT_MAX_OPEN; i++) {
                const char *t = g_slots[i].tmp, *slash = strrchr(t, '/');
                open_here |= g_slots[i].active && strcmp(slash ? slash + 1 : t, e->d_name) == 0;
            }
            if (open_here) continue;
        } else if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
            continue;  // that process runs (or may: EPERM), and its writer may be live
        }
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (unlinkat(dfd, e->d_name, 0) == 0) removed++;
    }
    closedir(d);
    return removed;
}

void html_escape(FILE *f, const char *text) {
    for (const char *c = text ? text : ""; *c; c++) {
        switch (*c) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*c, f);
        }
    }
}
