// base/common.c: error reporting, checked allocation, opening user paths without blocking, strict
// numbers from text, and the memory limit.
#define _POSIX_C_SOURCE 200809L
#include "base/common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#ifdef _OPENMP
#include <omp.h>
#endif

const char *g_progname = "train";
void (*g_die_hook)(int code) = NULL;

void err_print(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", g_progname);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", g_progname);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (g_die_hook) g_die_hook(code);
    exit(code);
}

void *xmalloc(size_t bytes, const char *what) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) die(EXIT_RUNTIME, "out of memory allocating %zu bytes for %s", bytes, what);
    return p;
}

void *xcalloc(size_t count, size_t size, const char *what) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) die(EXIT_RUNTIME, "out of memory allocating %zu x %zu bytes for %s", count, size, what);
    return p;
}

char *xstrdup(const char *s, const char *what) {
    size_t n = strlen(s);
    char *c = xmalloc(n + 1, what);
    memcpy(c, s, n + 1);
    return c;
}

void *xmalloc_aligned(size_t bytes, const char *what) {
    void *p = NULL;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes) die(EXIT_RUNTIME, "size overflow allocating %s", what);
    if (posix_memalign(&p, 64, rounded ? rounded : 64) != 0 || !p)
        die(EXIT_RUNTIME, "out of memory allocating %zu bytes for %s", bytes, what);
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

int mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int thread_index(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

int thread_count(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

int thread_max(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

void thread_set_max(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

// ---------------------------------------------------------------------------------------------
// the thread count chosen from measured time

#define PACE_FIRST_PROBE 3     // units at the configured count before the first probe
#define PACE_PROBE_UNITS 3     // units a probe runs (its median is compared)
#define PACE_MIN_GAP     8     // the wait after a close verdict, and the first doubled
#define PACE_BUDGET      0.05  // the share of the time that probes may cost

void pace_init(ThreadPace *p, int max_threads) {
    memset(p, 0, sizeof *p);
    p->max = max_threads;
    p->current = 1;
    p->next_probe = PACE_FIRST_PROBE;
    p->gap = PACE_MIN_GAP;
}

// The median of the last n (<= PACE_WINDOW) seconds of count c.
static double pace_median(const ThreadPace *p, int c, int n) {
    double v[PACE_WINDOW];
    for (int i = 0; i < n; i++)
        v[i] = p->recent[c][(p->pos[c] - 1 - i + 2 * PACE_WINDOW) % PACE_WINDOW];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int pace_threads(const ThreadPace *p) {
    return p->max < 2 ? (p->max < 1 ? 1 : p->max) : p->current ? p->max : 1;
}

int pace_begin(ThreadPace *p) {
    if (p->max < 2) return p->max < 1 ? 1 : p->max;
    // a probe's extra seconds (over the current count's) stay within PACE_BUDGET of all units'
    if (!p->probing && p->units >= p->next_probe && p->have[p->current] > 0 &&
        p->probe_cost <= PACE_BUDGET * p->total) {
        p->probing = PACE_PROBE_UNITS;
        p->have[!p->current] = 0;  // the probe's own units only
    }
    int c = p->probing ? !p->current : p->current, n = c ? p->max : 1;
    thread_set_max(n);
    return n;
}

void pace_end(ThreadPace *p, double seconds) {
    if (p->max < 2) return;
    thread_set_max(p->max);
    int c = p->probing ? !p->current : p->current;
    p->units++;
    p->total += seconds;
    if (p->units == 1) return;  // the first unit pays for first touches and thread start-up
    p->recent[c][p->pos[c]] = seconds;
    p->pos[c] = (p->pos[c] + 1) % PACE_WINDOW;
    if (p->have[c] < PACE_WINDOW) p->have[c]++;
    if (!p->probing) {
        // the machine's load changed (the current count's median halved or doubled since the last
        // verdict): look at the other count again now
        double m = p->have[c] == PACE_WINDOW ? pace_median(p, c, PACE_WINDOW) : 0;
        if (m > 0 && p->settled > 0 && (m > 2 * p->settled || m < p->settled / 2)) {
            p->next_probe = p->units;
            p->settled = m;
        }
        return;
    }
    double now = pace_median(p, p->current, p->have[p->current]);
    if (seconds > now) p->probe_cost += seconds - now;
    // a probe unit over 1.5 times the current count's median ends the probe: the other count loses
    int done = --p->probing == 0 || seconds > 1.5 * now;
    if (!done) return;
    p->probing = 0;
    double other = pace_median(p, c, p->have[c]);
    int wide = other > 1.25 * now || other < now / 1.25;
    if (other < now) p->current = c;
    p->settled = other < now ? other : now;
    // a clear verdict: wait twice as long; a close one: look again soon
    p->gap = wide ? (p->gap * 2 < PACE_MAX_GAP ? p->gap * 2 : PACE_MAX_GAP) : PACE_MIN_GAP;
    p->next_probe = p->units + p->gap;
}

const char *option_value(int argc, char **argv, int *i, const char *name) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] == 0) {
        if (*i + 1 >= argc) die(EXIT_USAGE, "%s needs a value", name);
        return argv[++*i];
    }
    return NULL;
}

void option_once(const char *name, const char *value) {
    enum { MAX_SEEN = 256, NAME_CHARS = 160 };
    static char names[MAX_SEEN][NAME_CHARS];
    static const char *values[MAX_SEEN];
    static int n = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i], name) != 0) continue;
        if (value && values[i])
            die(EXIT_USAGE, "%s is given twice ('%s' and '%s'): give each option once", name,
                values[i], value);
        die(EXIT_USAGE, "%s is given twice: give each option once", name);
    }
    if (n == MAX_SEEN || strlen(name) >= NAME_CHARS)
        return;  // (longer names are refused by their parser)
    snprintf(names[n], NAME_CHARS, "%s", name);
    values[n++] = value;
}

const char *command_line_text(char *buf, size_t n, const char *program, int argc,
                              char *const *argv) {
    size_t k = (size_t)snprintf(buf, n, "%s", program);
    for (int i = 1; i < argc && k < n; i++) {
        const char *a = argv[i];
        int plain = *a != 0;
        for (const char *c = a; *c; c++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:+@%",
                        *c))
                plain = 0;
        k += (size_t)snprintf(buf + k, n - k, plain ? " %s" : " '%s'", a);
    }
    return buf;
}

// ---------------------------------------------------------------------------------------------
// user-given paths

// What a non-regular file is, for messages.
static const char *not_regular(mode_t mode) {
    if (S_ISDIR(mode)) return strerror(EISDIR);  // "Is a directory", as open() and read() say it
    if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a regular file";
    if (S_ISCHR(mode)) return "is a character device, not a regular file";
    if (S_ISBLK(mode)) return "is a block device, not a regular file";
    if (S_ISSOCK(mode)) return "is a socket, not a regular file";
    return "is not a regular file";
}

// Turn O_NONBLOCK off again and wrap the descriptor in a stream.
static FILE *blocking_stream(int fd, const char *mode, const char **why) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        *why = strerror(errno);
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, mode);
    if (!f) {
        *why = strerror(errno);
        close(fd);
    }
    return f;
}

FILE *fopen_regular(const char *path, uint64_t *size, const char **why) {
    *size = 0;
    *why = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        *why = strerror(errno);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *why = strerror(errno);
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = not_regular(st.st_mode);
        close(fd);
        return NULL;
    }
    *size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    return blocking_stream(fd, "rb", why);
}

// ---------------------------------------------------------------------------------------------
// strict numbers

int parse_integer_text(const char *s, long long *out) {
    const char *digits = (*s == '-' || *s == '+') ? s + 1 : s;
    if (!*digits || strspn(digits, "0123456789") != strlen(digits)) return 0;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);  // saturates on overflow (ERANGE)
    if (*end) return 0;
    *out = v;
    return 1;
}

int parse_decimal_text(const char *s, double *out) {
    if (!*s || strspn(s, "0123456789+-.eE") != strlen(s)) return 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end) return 0;
    *out = v;
    return 1;
}

long long flag_integer(const char *flag, const char *v, long long lo, long long hi) {
    long long x;
    if (!parse_integer_text(v, &x) || x < lo || x > hi)
        die(EXIT_USAGE, "%s expects an integer from %lld to %lld, got '%s'", flag, lo, hi, v);
    return x;
}

double flag_number(const char *flag, const char *v, double lo, double hi) {
    double x;
    if (!parse_decimal_text(v, &x) || !(x >= lo && x <= hi))
        die(EXIT_USAGE, "%s expects a number from %g to %g, got '%s'", flag, lo, hi, v);
    return x;
}

// ---------------------------------------------------------------------------------------------
// memory

double physical_memory_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
}

int memory_fits(double bytes, const char *what, char *err, size_t errlen) {
    double phys = physical_memory_bytes();
    if (!(bytes >= 0) || !isfinite(bytes)) {
        snprintf(err, errlen, "%s needs more memory than can be addressed", what);
        return 0;
    }
    if (phys > 0 && bytes > 0.9 * phys) {
        snprintf(err, errlen, "%s needs %.1f GiB of memory but this machine has %.1f GiB", what,
                 bytes / 1073741824.0, phys / 1073741824.0);
        return 0;
    }
    return 1;
}

static int lower_ascii(int ch) { return (ch >= 'A' && ch <= 'Z') ? ch - 'A' + 'a' : ch; }

int text_distance(const char *a, const char *b) {
    enum { MAX_NAME_CHARS = 256 };
    size_t la = strlen(a), lb = strlen(b);
    if (la > MAX_NAME_CHARS || lb > MAX_NAME_CHARS) return INT_MAX;
    int row[MAX_NAME_CHARS + 1];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = lower_ascii((unsigned char)a[i - 1]) != lower_ascii((unsigned char)b[j - 1]);
            int best = diag + cost;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *closest_name(const char *typed, const char *const *names, int n) {
    const char *best = NULL;
    int best_d = INT_MAX;
    for (int i = 0; i < n; i++) {
        int d = text_distance(typed, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    int len = (int)strlen(typed), limit = len / 3 > 2 ? len / 3 : 2;
    return best && best_d <= limit ? best : NULL;
}

// The names of the regular files in directory dir (at most max, each malloc'd), as dir/NAME.
static int list_files(const char *dir, char **names, int max) {
    DIR *d = opendir(dir[0] ? dir : ".");
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while (n < max && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char full[1024];
        snprintf(full, sizeof full, "%.700s%s%.255s", dir, dir[0] ? "/" : "", de->d_name);
        struct stat st;
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        names[n] = malloc(strlen(full) + 1);
        if (names[n]) strcpy(names[n++], full);
    }
    closedir(d);
    return n;
}

int nearest_file(const char *path, char *out, size_t n) {
    if (!path || !path[0] || strlen(path) > 900 || !out || n == 0) return 0;
    char dir[1024];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 0, path);
    struct stat st;
    if (dir[0] && stat(dir, &st) != 0) {
        // the directory itself mistyped (config/ for configs/): the nearest one beside it
        char parent[1024], *names[256];
        const char *ps = strrchr(dir, '/');
        snprintf(parent, sizeof parent, "%.*s", ps ? (int)(ps - dir) : 0, dir);
        DIR *d = opendir(parent[0] ? parent : ".");
        int k = 0;
        struct dirent *de;
        while (d && k < 256 && (de = readdir(d))) {
            if (de->d_name[0] == '.') continue;
            char full[1024];
            snprintf(full, sizeof full, "%.700s%s%.255s", parent, parent[0] ? "/" : "", de->d_name);
            if (stat(full, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
            names[k] = malloc(strlen(full) + 1);
            if (names[k]) strcpy(names[k++], full);
        }
        if (d) closedir(d);
        const char *best = closest_name(dir, (const char *const *)names, k);
        if (best) snprintf(dir, sizeof dir, "%s", best);
        for (int i = 0; i < k; i++) free(names[i]);
        if (!best) return 0;
    }
    char *files[1024];
    int k = list_files(dir, files, 1024);
    // compared without a leading "./", as the user may or may not have typed it
    const char *typed = strncmp(path, "./", 2) == 0 ? path + 2 : path;
    const char *best = closest_name(typed, (const char *const *)files, k);
    int found = best && strcmp(best, typed) != 0;
    if (found) snprintf(out, n, "%s", best);
    for (int i = 0; i < k; i++) free(files[i]);
    return found;
}

int refuse(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return 0;
}
