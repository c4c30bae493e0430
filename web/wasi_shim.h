// web/wasi_shim.h: what the native sources call that WASI lacks, for the web build (included
// before every source by tools/build-web.sh; web/wasi_shim.c defines them).
#ifndef WEB_WASI_SHIM_H
#define WEB_WASI_SHIM_H
#include <sys/types.h>
// The memory file system keeps no permission bits: a replaced file's mode has nothing to keep.
int fchmod(int fd, mode_t mode);
// A page holds one process: every other pid names none (ESRCH), so a temporary file of another
// pid is a killed writer's.
int kill(pid_t pid, int sig);
#endif
