// base/dist.c: the MPI layer of data-parallel training, or its one-rank stand-in without MPI.
#include "base/dist.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef USE_MPI
#include <mpi.h>

static int g_rank = 0, g_size = 1, g_local_size = 1, g_mpi_on = 0;
static char g_name[64];

// die() calls this before exiting: a rank that fails alone takes the others down with it
// (they would otherwise block in the next allreduce).
static void abort_all(int code) {
    if (g_mpi_on && g_size > 1) {
        fflush(stdout);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
}

static void finalize(void) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (g_mpi_on && !finalized) MPI_Finalize();
}

void dist_init(int *argc, char ***argv) {
    if (MPI_Init(argc, argv) != MPI_SUCCESS) die(EXIT_RUNTIME, "MPI_Init failed");
    g_mpi_on = 1;
    atexit(finalize);  // every normal exit (including --help) finalizes on every rank
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm local;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) ==
        MPI_SUCCESS) {
        MPI_Comm_size(local, &g_local_size);
        MPI_Comm_free(&local);
    }
    g_die_hook = abort_all;
    if (g_size > 1 && g_rank > 0) {
        snprintf(g_name, sizeof g_name, "%s (rank %d)", g_progname, g_rank);
        g_progname = g_name;
    }
}

int dist_rank(void) { return g_rank; }
int dist_size(void) { return g_size; }
int dist_local_size(void) { return g_local_size; }

const char *dist_describe(void) {
    static char buf[MPI_MAX_LIBRARY_VERSION_STRING + 64];
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = 0;
    char *comma = strchr(lib, ',');
    if (comma) *comma = 0;
    snprintf(buf, sizeof buf, "on (%s), %d rank%s", lib, g_size, g_size == 1 ? "" : "s");
    return buf;
}

void dist_sum_real(real *buf, size_t n) {
    if (g_size == 1) return;
    MPI_Datatype type = sizeof(real) == 4 ? MPI_FLOAT : MPI_DOUBLE;
    // MPI counts are int: reduce in chunks so any model size works
    const size_t chunk = (size_t)1 << 30;
    for (size_t off = 0; off < n; off += chunk) {
        int count = (int)(n - off < chunk ? n - off : chunk);
        if (MPI_Allreduce(MPI_IN_PLACE, buf + off, count, type, MPI_SUM, MPI_COMM_WORLD) !=
            MPI_SUCCESS)
            die(EXIT_RUNTIME, "MPI_Allreduce of %d values failed", count);
    }
}

void dist_sum_double(double *buf, int n) {
    if (g_size == 1) return;
    if (MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        die(EXIT_RUNTIME, "MPI_Allreduce of %d values failed", n);
}

int dist_max_int(int v) {
    if (g_size == 1) return v;
    if (MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        die(EXIT_RUNTIME, "MPI_Allreduce of a flag failed");
    return v;
}

int dist_same_bytes(const void *buf, size_t n) {
    if (g_size == 1) return 1;
    // FNV-1a over the bytes; equal min and max over the ranks means every rank has the same
    const unsigned char *p = buf;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    unsigned long long lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

void dist_barrier(void) {
    if (g_size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void dist_exit(int code) {
    fflush(stdout);
    fflush(stderr);
    g_die_hook = NULL;
    exit(code);  // atexit finalizes MPI
}

#else  // one process, no MPI

void dist_init(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
}
int dist_rank(void) { return 0; }
int dist_size(void) { return 1; }
int dist_local_size(void) { return 1; }
const char *dist_describe(void) { return "off (build with make MPI=1)"; }
void dist_sum_real(real *buf, size_t n) {
    (void)buf;
    (void)n;
}
void dist_sum_double(double *buf, int n) {
    (void)buf;
    (void)n;
}
int dist_max_int(int v) { return v; }
int dist_same_bytes(const void *buf, size_t n) {
    (void)buf;
    (void)n;
    return 1;
}
void dist_barrier(void) {}
void dist_exit(int code) { exit(code); }

#endif
