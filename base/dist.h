// base/dist.h: data-parallel training over MPI (`make MPI=1`). Every rank holds the whole model and
// trains on its share of each batch; one allreduce per step sums the gradients. Without MPI
// (the default build) there is one rank and every call here is a no-op.
#ifndef DIST_H
#define DIST_H

#include <stddef.h>

#include "base/common.h"

// Start MPI (when built with it) and name this rank in error messages ("train (rank 1)").
// Errors after this on any rank stop every rank (MPI_Abort), so no rank waits forever.
void dist_init(int *argc, char ***argv);
int dist_rank(void);
int dist_size(void);
static inline int dist_is_root(void) { return dist_rank() == 0; }
// Ranks sharing this machine, to split its cores among them (1 without MPI).
int dist_local_size(void);
// Whether the program was built with MPI ("MPI: ..." in --version).
const char *dist_describe(void);

// In-place sums over all ranks; the result is identical on every rank.
void dist_sum_real(real *buf, size_t n);
void dist_sum_double(double *buf, int n);
// The largest of v over all ranks (e.g. a stop flag that any rank may have raised).
int dist_max_int(int v);
// Whether every rank holds the same n bytes (a hash compared across ranks).
int dist_same_bytes(const void *buf, size_t n);
void dist_barrier(void);
// Exit every rank with `code` after a failure all ranks reached together (nothing to abort).
_Noreturn void dist_exit(int code);

#endif
