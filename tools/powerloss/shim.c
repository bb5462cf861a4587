// Power-loss recorder: an LD_PRELOAD layer that records, in the order they
// complete, every call that changes files under one directory (writes,
// truncations, syncs, creations, renames, removals) and everything the
// process writes to stdout, into one trace file shared by every process of
// the workload. tools/powerloss.rs replays the trace into the directory
// image a power loss would leave at every sync point (in the spirit of
// CrashMonkey and ALICE) and checks the ledger there.
//
// Environment: PL_ROOT (absolute directory to trace), PL_TRACE (trace file).
// Built by tools/powerloss.rs: cc -shared -fPIC -O2 -o shim.so shim.c -ldl -lpthread
//
// Each record: u32 kind, u32 pid, u64 offset, u64 len, u32 path_len,
// u32 path2_len, then the path, the second path (rename), then len data
// bytes (writes and stdout). All little-endian. A record is written with one
// write() on an O_APPEND descriptor, under a process-wide mutex held across
// the traced call, so the trace order is the order in which calls took
// effect.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum {
    K_WRITE = 1,    // offset, data
    K_TRUNC = 2,    // offset = new length
    K_SYNC = 3,     // fsync / fdatasync of a file (durable)
    K_SYNC_DIR = 4, // fsync of a directory
    K_SFR = 5,      // sync_file_range (not durable: no cache flush, no metadata)
    K_CREATE = 6,   // a new file
    K_RENAME = 7,   // path -> path2
    K_UNLINK = 8,
    K_MKDIR = 9,
    K_STDOUT = 10,  // data the process wrote to fd 1
    K_RMDIR = 11,
};

#define MAX_FDS 65536
static char *fd_path[MAX_FDS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -1;
static char root[PATH_MAX];
static size_t root_len = 0;
static int ready = 0;

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_sync_file_range)(int, off_t, off_t, unsigned int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_rmdir)(const char *);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_fallocate)(int, int, off_t, off_t);
static int (*real_posix_fallocate)(int, off_t, off_t);

#define LOAD(name) real_##name = dlsym(RTLD_NEXT, #name)

__attribute__((constructor)) static void init(void) {
    LOAD(open); LOAD(open64); LOAD(openat); LOAD(openat64); LOAD(close);
    LOAD(write); LOAD(pwrite); LOAD(pwrite64); LOAD(writev); LOAD(pwritev);
    LOAD(fsync); LOAD(fdatasync); LOAD(sync_file_range); LOAD(ftruncate);
    LOAD(ftruncate64); LOAD(rename); LOAD(renameat); LOAD(renameat2);
    LOAD(unlink); LOAD(unlinkat); LOAD(mkdir); LOAD(mkdirat); LOAD(rmdir);
    LOAD(dup); LOAD(dup2); LOAD(dup3); LOAD(fcntl); LOAD(fallocate);
    LOAD(posix_fallocate);
    const char *r = getenv("PL_ROOT");
    const char *t = getenv("PL_TRACE");
    if (!r || !t) return;
    strncpy(root, r, sizeof root - 1);
    root_len = strlen(root);
    while (root_len > 1 && root[root_len - 1] == '/') root[--root_len] = 0;
    trace_fd = real_open(t, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    ready = trace_fd >= 0;
}

static void die(const char *what) {
    char msg[256];
    int n = snprintf(msg, sizeof msg, "powerloss shim: %s: %s\n", what, strerror(errno));
    if (n > 0) real_write(2, msg, (size_t)n);
    abort();
}

// The absolute, lexically normalized path of `p` relative to `dirfd`, or
// NULL when it is not under the root.
static char *resolve(int dirfd, const char *p) {
    if (!p) return NULL;
    char buf[PATH_MAX * 2];
    if (p[0] == '/') {
        snprintf(buf, sizeof buf, "%s", p);
    } else if (dirfd == AT_FDCWD) {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return NULL;
        snprintf(buf, sizeof buf, "%s/%s", cwd, p);
    } else if (dirfd >= 0 && dirfd < MAX_FDS && fd_path[dirfd]) {
        snprintf(buf, sizeof buf, "%s/%s", fd_path[dirfd], p);
    } else {
        return NULL;
    }
    // normalize: drop "." and "", fold ".."
    char out[PATH_MAX * 2];
    size_t o = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (!strcmp(tok, ".")) continue;
        if (!strcmp(tok, "..")) {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
            continue;
        }
        size_t l = strlen(tok);
        if (o + l + 2 >= sizeof out) return NULL;
        out[o++] = '/';
        memcpy(out + o, tok, l);
        o += l;
    }
    out[o] = 0;
    if (o == 0) { out[0] = '/'; out[1] = 0; o = 1; }
    if (strncmp(out, root, root_len) != 0 || (out[root_len] != 0 && out[root_len] != '/'))
        return NULL;
    return strdup(out);
}

static void emit(uint32_t kind, uint64_t off, const char *path, const char *path2,
                 const struct iovec *iov, int iovcnt, uint64_t len) {
    uint32_t pl = path ? (uint32_t)strlen(path) : 0;
    uint32_t p2 = path2 ? (uint32_t)strlen(path2) : 0;
    size_t total = 32 + pl + p2 + len;
    char *buf = malloc(total);
    if (!buf) die("malloc");
    uint32_t pid = (uint32_t)getpid();
    memcpy(buf, &kind, 4);
    memcpy(buf + 4, &pid, 4);
    memcpy(buf + 8, &off, 8);
    memcpy(buf + 16, &len, 8);
    memcpy(buf + 24, &pl, 4);
    memcpy(buf + 28, &p2, 4);
    if (pl) memcpy(buf + 32, path, pl);
    if (p2) memcpy(buf + 32 + pl, path2, p2);
    size_t at = 32 + pl + p2;
    uint64_t left = len;
    for (int i = 0; i < iovcnt && left > 0; i++) {
        size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
        memcpy(buf + at, iov[i].iov_base, n);
        at += n;
        left -= n;
    }
    size_t done = 0;
    while (done < total) {
        ssize_t w = real_write(trace_fd, buf + done, total - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("write trace");
        done += (size_t)w;
    }
    free(buf);
}

static void remember(int fd, char *path) {
    if (fd < 0 || fd >= MAX_FDS) { free(path); return; }
    free(fd_path[fd]);
    fd_path[fd] = path;
}

static const char *traced(int fd) {
    if (!ready || fd < 0 || fd >= MAX_FDS) return NULL;
    return fd_path[fd];
}

static int is_dir(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

static int do_open(int dirfd, const char *p, int flags, mode_t mode, int at, int sixtyfour) {
    if (!ready) {
        if (at) return (sixtyfour ? real_openat64 : real_openat)(dirfd, p, flags, mode);
        return (sixtyfour ? real_open64 : real_open)(p, flags, mode);
    }
    pthread_mutex_lock(&mu);
    char *path = resolve(at ? dirfd : AT_FDCWD, p);
    int existed = 1;
    if (path && (flags & O_CREAT)) {
        struct stat st;
        existed = stat(path, &st) == 0;
    }
    int fd;
    if (at) fd = (sixtyfour ? real_openat64 : real_openat)(dirfd, p, flags, mode);
    else fd = (sixtyfour ? real_open64 : real_open)(p, flags, mode);
    int saved = errno;
    if (fd >= 0 && path) {
        if (!existed) emit(K_CREATE, 0, path, NULL, NULL, 0, 0);
        else if ((flags & O_TRUNC) && (flags & (O_WRONLY | O_RDWR))) emit(K_TRUNC, 0, path, NULL, NULL, 0, 0);
        remember(fd, path);
    } else {
        free(path);
    }
    pthread_mutex_unlock(&mu);
    errno = saved;
    return fd;
}

#define MODE_ARG(flags) \
    mode_t mode = 0; \
    if ((flags) & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, int); va_end(ap); }

int open(const char *p, int flags, ...) { MODE_ARG(flags); return do_open(AT_FDCWD, p, flags, mode, 0, 0); }
int open64(const char *p, int flags, ...) { MODE_ARG(flags); return do_open(AT_FDCWD, p, flags, mode, 0, 1); }
int openat(int d, const char *p, int flags, ...) { MODE_ARG(flags); return do_open(d, p, flags, mode, 1, 0); }
int openat64(int d, const char *p, int flags, ...) { MODE_ARG(flags); return do_open(d, p, flags, mode, 1, 1); }

int close(int fd) {
    if (ready && fd >= 0 && fd < MAX_FDS) {
        pthread_mutex_lock(&mu);
        free(fd_path[fd]);
        fd_path[fd] = NULL;
        int r = real_close(fd);
        int saved = errno;
        pthread_mutex_unlock(&mu);
        errno = saved;
        return r;
    }
    return real_close(fd);
}

static ssize_t traced_write(int fd, const struct iovec *iov, int iovcnt, off_t off, int positional) {
    pthread_mutex_lock(&mu);
    const char *path = traced(fd);
    off_t at = off;
    if (path && !positional) {
        int fl = real_fcntl(fd, F_GETFL);
        if (fl >= 0 && (fl & O_APPEND)) {
            struct stat st;
            at = fstat(fd, &st) == 0 ? st.st_size : 0;
        } else {
            at = lseek(fd, 0, SEEK_CUR);
        }
    }
    ssize_t n;
    if (positional) n = real_pwritev(fd, iov, iovcnt, off);
    else n = real_writev(fd, iov, iovcnt);
    int saved = errno;
    if (n > 0) {
        if (path) emit(K_WRITE, (uint64_t)at, path, NULL, iov, iovcnt, (uint64_t)n);
        else if (ready && fd == 1) emit(K_STDOUT, 0, NULL, NULL, iov, iovcnt, (uint64_t)n);
    }
    pthread_mutex_unlock(&mu);
    errno = saved;
    return n;
}

ssize_t write(int fd, const void *b, size_t n) {
    if (!ready || (fd != 1 && !traced(fd))) return real_write(fd, b, n);
    struct iovec v = {(void *)b, n};
    return traced_write(fd, &v, 1, 0, 0);
}
ssize_t writev(int fd, const struct iovec *v, int c) {
    if (!ready || (fd != 1 && !traced(fd))) return real_writev(fd, v, c);
    return traced_write(fd, v, c, 0, 0);
}
ssize_t pwrite(int fd, const void *b, size_t n, off_t o) {
    if (!ready || !traced(fd)) return real_pwrite(fd, b, n, o);
    struct iovec v = {(void *)b, n};
    return traced_write(fd, &v, 1, o, 1);
}
ssize_t pwrite64(int fd, const void *b, size_t n, off_t o) {
    if (!ready || !traced(fd)) return real_pwrite64(fd, b, n, o);
    struct iovec v = {(void *)b, n};
    return traced_write(fd, &v, 1, o, 1);
}
ssize_t pwritev(int fd, const struct iovec *v, int c, off_t o) {
    if (!ready || !traced(fd)) return real_pwritev(fd, v, c, o);
    return traced_write(fd, v, c, o, 1);
}

static int traced_sync(int fd, int data_only) {
    pthread_mutex_lock(&mu);
    const char *path = traced(fd);
    int r = data_only ? real_fdatasync(fd) : real_fsync(fd);
    int saved = errno;
    if (r == 0 && path) emit(is_dir(fd) ? K_SYNC_DIR : K_SYNC, 0, path, NULL, NULL, 0, 0);
    pthread_mutex_unlock(&mu);
    errno = saved;
    return r;
}
int fsync(int fd) { return ready ? traced_sync(fd, 0) : real_fsync(fd); }
int fdatasync(int fd) { return ready ? traced_sync(fd, 1) : real_fdatasync(fd); }

int sync_file_range(int fd, off_t o, off_t n, unsigned int f) {
    if (!ready || !traced(fd)) return real_sync_file_range(fd, o, n, f);
    pthread_mutex_lock(&mu);
    int r = real_sync_file_range(fd, o, n, f);
    int saved = errno;
    if (r == 0) emit(K_SFR, 0, traced(fd), NULL, NULL, 0, 0);
    pthread_mutex_unlock(&mu);
    errno = saved;
    return r;
}

static int traced_truncate(int fd, off_t len, int sixtyfour) {
    pthread_mutex_lock(&mu);
    int r = sixtyfour ? real_ftruncate64(fd, len) : real_ftruncate(fd, len);
    int saved = errno;
    if (r == 0 && traced(fd)) emit(K_TRUNC, (uint64_t)len, traced(fd), NULL, NULL, 0, 0);
    pthread_mutex_unlock(&mu);
    errno = saved;
    return r;
}
int ftruncate(int fd, off_t len) { return ready ? traced_truncate(fd, len, 0) : real_ftruncate(fd, len); }
int ftruncate64(int fd, off_t len) { return ready ? traced_truncate(fd, len, 1) : real_ftruncate64(fd, len); }

// fallocate and posix_fallocate change only the allocation here (sled does
// not call them); a call that would grow a traced file is refused loudly so
// a workload that needs them is noticed rather than modelled wrongly.
int fallocate(int fd, int mode, off_t o, off_t n) {
    if (ready && traced(fd)) { errno = EOPNOTSUPP; return -1; }
    return real_fallocate(fd, mode, o, n);
}
int posix_fallocate(int fd, off_t o, off_t n) {
    if (ready && traced(fd)) return EOPNOTSUPP;
    return real_posix_fallocate(fd, o, n);
}

static int traced_path_op(uint32_t kind, int dfd, const char *p, int dfd2, const char *p2,
                          int (*call)(void *), void *arg) {
    pthread_mutex_lock(&mu);
    char *a = resolve(dfd, p);
    char *b = p2 ? resolve(dfd2, p2) : NULL;
    int r = call(arg);
    int saved = errno;
    if (r == 0 && (a || b)) {
        if (kind == K_RENAME && !(a && b)) {
            errno = saved;
            pthread_mutex_unlock(&mu);
            die("a rename into or out of the traced directory");
        }
        emit(kind, 0, a ? a : b, b, NULL, 0, 0);
    }
    free(a);
    free(b);
    pthread_mutex_unlock(&mu);
    errno = saved;
    return r;
}

struct two { int d1; const char *p1; int d2; const char *p2; unsigned int flags; mode_t mode; };
static int c_rename(void *x) { struct two *t = x; return real_rename(t->p1, t->p2); }
static int c_renameat(void *x) { struct two *t = x; return real_renameat(t->d1, t->p1, t->d2, t->p2); }
static int c_renameat2(void *x) { struct two *t = x; return real_renameat2(t->d1, t->p1, t->d2, t->p2, t->flags); }
static int c_unlink(void *x) { struct two *t = x; return real_unlink(t->p1); }
static int c_unlinkat(void *x) { struct two *t = x; return real_unlinkat(t->d1, t->p1, (int)t->flags); }
static int c_mkdir(void *x) { struct two *t = x; return real_mkdir(t->p1, t->mode); }
static int c_mkdirat(void *x) { struct two *t = x; return real_mkdirat(t->d1, t->p1, t->mode); }
static int c_rmdir(void *x) { struct two *t = x; return real_rmdir(t->p1); }

int rename(const char *a, const char *b) {
    struct two t = {AT_FDCWD, a, AT_FDCWD, b, 0, 0};
    return ready ? traced_path_op(K_RENAME, AT_FDCWD, a, AT_FDCWD, b, c_rename, &t) : real_rename(a, b);
}
int renameat(int d1, const char *a, int d2, const char *b) {
    struct two t = {d1, a, d2, b, 0, 0};
    return ready ? traced_path_op(K_RENAME, d1, a, d2, b, c_renameat, &t) : real_renameat(d1, a, d2, b);
}
int renameat2(int d1, const char *a, int d2, const char *b, unsigned int f) {
    struct two t = {d1, a, d2, b, f, 0};
    return ready ? traced_path_op(K_RENAME, d1, a, d2, b, c_renameat2, &t) : real_renameat2(d1, a, d2, b, f);
}
int unlink(const char *a) {
    struct two t = {AT_FDCWD, a, 0, NULL, 0, 0};
    return ready ? traced_path_op(K_UNLINK, AT_FDCWD, a, 0, NULL, c_unlink, &t) : real_unlink(a);
}
int unlinkat(int d, const char *a, int f) {
    struct two t = {d, a, 0, NULL, (unsigned int)f, 0};
    uint32_t kind = (f & AT_REMOVEDIR) ? K_RMDIR : K_UNLINK;
    return ready ? traced_path_op(kind, d, a, 0, NULL, c_unlinkat, &t) : real_unlinkat(d, a, f);
}
int mkdir(const char *a, mode_t m) {
    struct two t = {AT_FDCWD, a, 0, NULL, 0, m};
    return ready ? traced_path_op(K_MKDIR, AT_FDCWD, a, 0, NULL, c_mkdir, &t) : real_mkdir(a, m);
}
int mkdirat(int d, const char *a, mode_t m) {
    struct two t = {d, a, 0, NULL, 0, m};
    return ready ? traced_path_op(K_MKDIR, d, a, 0, NULL, c_mkdirat, &t) : real_mkdirat(d, a, m);
}
int rmdir(const char *a) {
    struct two t = {AT_FDCWD, a, 0, NULL, 0, 0};
    return ready ? traced_path_op(K_RMDIR, AT_FDCWD, a, 0, NULL, c_rmdir, &t) : real_rmdir(a);
}

static int dup_as(int old, int newfd) {
    if (newfd >= 0 && newfd < MAX_FDS) {
        char *p = (old >= 0 && old < MAX_FDS && fd_path[old]) ? strdup(fd_path[old]) : NULL;
        remember(newfd, p);
    }
    return newfd;
}
int dup(int fd) {
    if (!ready) return real_dup(fd);
    pthread_mutex_lock(&mu);
    int r = real_dup(fd);
    int saved = errno;
    if (r >= 0) dup_as(fd, r);
    pthread_mutex_unlock(&mu);
    errno = saved;
    return r;
}
int dup2(int fd, int n) {
    if (!ready) return real_dup2(fd, n);
    pthread_mutex_lock(&mu);
    int r = real_dup2(fd, n);
    int saved = errno;
    if (r >= 0) dup_as(fd, r);
    pthread_mutex_unlock(&mu);
    errno = saved;
    return r;
}
int dup3(int fd, int n, int f) {
    if (!ready) return real_dup3(fd, n, f);
    pthread_mutex_lock(&mu);
    int r = real_dup3(fd, n, f);
    int saved = errno;
    if (r >= 0) dup_as(fd, r);
    pthread_mutex_unlock(&mu);
    errno = saved;
    return r;
}
int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    if (!ready || (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)) return real_fcntl(fd, cmd, arg);
    pthread_mutex_lock(&mu);
    int r = real_fcntl(fd, cmd, arg);
    int saved = errno;
    if (r >= 0) dup_as(fd, r);
    pthread_mutex_unlock(&mu);
    errno = saved;
    return r;
}
