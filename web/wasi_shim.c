// web/wasi_shim.c: web/wasi_shim.h's functions for the web build.
#include "web/wasi_shim.h"

#include <errno.h>

int fchmod(int fd, mode_t mode) {
    (void)fd, (void)mode;
    return 0;
}

int kill(pid_t pid, int sig) {
    (void)pid, (void)sig;
    errno = ESRCH;
    return -1;
}
