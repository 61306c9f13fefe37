// powercut: an LD_PRELOAD layer that records what a process writes to the files under one directory,
// so that the states a power cut could leave on disk can be built afterwards (docs/POWERCUT.md).
//
// Environment:
//   LODE_POWERCUT_DIR    the directory followed (files and directories anywhere under it).
//   LODE_POWERCUT_LOG    where the trace goes (outside that directory).
//   LODE_POWERCUT_MARKS  a file outside the directory whose writes are recorded in the trace as
//                        marks: a writer's acknowledgements, placed exactly among its file operations.
//   LODE_POWERCUT_AT     cut at this operation (1 = the first): the process is killed with SIGKILL
//                        before it runs, after pending writes through writable maps are recorded.
//   LODE_POWERCUT_WHEN   follow only a process in whose environment this variable is set (a tool
//                        that does its work in a child process); the layer stays loaded in the
//                        others, so it reaches that child. A followed process's own children are not
//                        followed.
//
// Each trace record is a fixed header followed by `length` payload bytes (docs/POWERCUT.md):
//   uint32 kind, uint32 flags, uint64 inode, uint64 offset, uint64 length.
// The layer serializes the calls it follows (one mutex), so the trace order is the order in which
// their effects happened.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum {
    PC_INIT_DIR = 1,   // payload: relative path; the directory exists (and is durable) at start
    PC_INIT_FILE = 2,  // payload: relative path NUL content; inode; durable at start
    PC_WRITE = 3,      // inode, offset, payload: the bytes; flags & 1: synchronous (O_SYNC/O_DSYNC)
    PC_TRUNCATE = 4,   // inode, offset: the new length
    PC_SYNC = 5,       // inode: every write before is durable (fsync, fdatasync)
    PC_RANGE_SYNC = 6, // inode, offset, length in flags-free form: payload is uint64 length
    PC_CREATE = 7,     // inode, payload: relative path of a new file
    PC_MKDIR = 8,      // payload: relative path
    PC_RENAME = 9,     // payload: old NUL new
    PC_UNLINK = 10,    // payload: relative path
    PC_RMDIR = 11,     // payload: relative path
    PC_DIR_SYNC = 12,  // payload: relative path of a directory that was fsynced
    PC_MARK = 13,      // payload: bytes the process wrote to the marks file
    PC_CUT = 14,       // the power went out here
    PC_LINK = 15,      // payload: existing NUL new (a hard link)
};

struct header {
    uint32_t kind;
    uint32_t flags;
    uint64_t inode;
    uint64_t offset;
    uint64_t length;
};

#define MAX_FDS 4096
#define MAX_MAPS 64

struct tracked {
    int used;
    int directory;
    int synchronous;
    int marks;
    uint64_t inode;
    char rel[PATH_MAX];
};

struct mapping {
    int used;
    char *address;
    size_t length;
    off_t offset;
    int fd;
    uint64_t inode;
    unsigned char *shadow;  // the bytes as last recorded
};

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int active;
static int log_fd = -1;
static char root[PATH_MAX];
static size_t root_length;
static char marks_path[PATH_MAX];
static unsigned long long operations;
static unsigned long long cut_at;
static struct tracked fds[MAX_FDS];
static struct mapping maps[MAX_MAPS];

#define REAL(name, ret, ...)                                                                      \
    static ret (*real_##name)(__VA_ARGS__);                                                       \
    static void load_##name(void) {                                                               \
        if (!real_##name) real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);            \
    }

REAL(open, int, const char *, int, ...)
REAL(openat, int, int, const char *, int, ...)
REAL(close, int, int)
REAL(write, ssize_t, int, const void *, size_t)
REAL(writev, ssize_t, int, const struct iovec *, int)
REAL(pwrite, ssize_t, int, const void *, size_t, off_t)
REAL(pwrite64, ssize_t, int, const void *, size_t, off64_t)
REAL(pwritev, ssize_t, int, const struct iovec *, int, off_t)
REAL(pwritev64, ssize_t, int, const struct iovec *, int, off64_t)
REAL(ftruncate, int, int, off_t)
REAL(ftruncate64, int, int, off64_t)
REAL(fsync, int, int)
REAL(fdatasync, int, int)
REAL(msync, int, void *, size_t, int)
REAL(mmap, void *, void *, size_t, int, int, int, off_t)
REAL(munmap, int, void *, size_t)
REAL(rename, int, const char *, const char *)
REAL(renameat, int, int, const char *, int, const char *)
REAL(renameat2, int, int, const char *, int, const char *, unsigned int)
REAL(unlink, int, const char *)
REAL(unlinkat, int, int, const char *, int)
REAL(mkdir, int, const char *, mode_t)
REAL(mkdirat, int, int, const char *, mode_t)
REAL(rmdir, int, const char *)
REAL(link, int, const char *, const char *)
REAL(linkat, int, int, const char *, int, const char *, int)

static void write_all(const void *bytes, size_t length) {
    const char *p = bytes;
    while (length > 0) {
        load_write();
        ssize_t n = real_write(log_fd, p, length);
        if (n < 0) {
            if (errno == EINTR) continue;
            static const char message[] = "powercut: cannot write the trace\n";
            real_write(2, message, sizeof message - 1);
            _exit(70);
        }
        p += n;
        length -= (size_t)n;
    }
}

static void record(uint32_t kind, uint32_t flags, uint64_t inode, uint64_t offset, const void *payload,
                   uint64_t length) {
    struct header h = {kind, flags, inode, offset, length};
    write_all(&h, sizeof h);
    if (length) write_all(payload, length);
}

static void record_path(uint32_t kind, uint64_t inode, const char *rel) {
    record(kind, 0, inode, 0, rel, strlen(rel));
}

// `path` (absolute, normalized) relative to the root, or NULL when it lies outside.
static const char *relative(const char *path) {
    if (strncmp(path, root, root_length) != 0) return NULL;
    if (path[root_length] == 0) return "";
    if (path[root_length] != '/') return NULL;
    return path + root_length + 1;
}

// Resolves `path` (relative to `dirfd`) to an absolute path with its directory part made real, so
// that it can be compared with the root. Returns 0 when it cannot.
static int resolve(int dirfd, const char *path, char *out) {
    char joined[PATH_MAX * 2];
    if (path[0] == '/') {
        snprintf(joined, sizeof joined, "%s", path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(base, sizeof base)) return 0;
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t n = readlink(link, base, sizeof base - 1);
            if (n < 0) return 0;
            base[n] = 0;
        }
        snprintf(joined, sizeof joined, "%s/%s", base, path);
    }
    // Split off the last component; make the directory part real (it exists, or nothing happens).
    size_t length = strlen(joined);
    while (length > 1 && joined[length - 1] == '/') joined[--length] = 0;
    char *slash = strrchr(joined, '/');
    if (!slash) return 0;
    const char *name = slash + 1;
    char directory[PATH_MAX];
    if (slash == joined) {
        strcpy(directory, "/");
    } else {
        *slash = 0;
        if (!realpath(joined, directory)) return 0;
    }
    if (strcmp(name, ".") == 0 || strcmp(name, "") == 0) {
        snprintf(out, PATH_MAX, "%s", directory);
    } else if (strcmp(name, "..") == 0) {
        char parent[PATH_MAX * 2];
        snprintf(parent, sizeof parent, "%s/..", directory);
        if (!realpath(parent, out)) return 0;
    } else {
        snprintf(out, PATH_MAX, "%s%s%s", directory, strcmp(directory, "/") == 0 ? "" : "/", name);
    }
    return 1;
}

static void record_pending_maps(void);

// Counts an operation on the followed files and cuts the power when it is the one asked for.
static void operation(void) {
    operations++;
    if (cut_at && operations == cut_at) {
        record_pending_maps();
        record(PC_CUT, 0, 0, operations, NULL, 0);
        kill(getpid(), SIGKILL);
        for (;;) pause();
    }
}

static void record_file(const char *full, const struct stat *info, const char *rel) {
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t size = (size_t)info->st_size;
    unsigned char *bytes = malloc(size + strlen(rel) + 1);
    memcpy(bytes, rel, strlen(rel) + 1);
    size_t done = 0;
    while (done < size) {
        ssize_t n = pread(fd, bytes + strlen(rel) + 1 + done, size - done, (off_t)done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    close(fd);
    record(PC_INIT_FILE, 0, (uint64_t)info->st_ino, 0, bytes, strlen(rel) + 1 + done);
    free(bytes);
}

static int walk(const char *full, const struct stat *info, int type, struct FTW *ftw) {
    (void)ftw;
    const char *rel = relative(full);
    if (!rel) return 0;
    if (type == FTW_D) {
        record_path(PC_INIT_DIR, (uint64_t)info->st_ino, rel);
    } else if (type == FTW_F) {
        record_file(full, info, rel);
    }
    return 0;
}

__attribute__((constructor)) static void start(void) {
    const char *directory = getenv("LODE_POWERCUT_DIR");
    const char *trace = getenv("LODE_POWERCUT_LOG");
    if (!directory || !trace) return;
    const char *when = getenv("LODE_POWERCUT_WHEN");
    if (when && *when && !getenv(when)) return;
    if (!realpath(directory, root)) {
        fprintf(stderr, "powercut: LODE_POWERCUT_DIR %s: %s\n", directory, strerror(errno));
        _exit(70);
    }
    root_length = strlen(root);
    load_open();
    log_fd = real_open(trace, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        fprintf(stderr, "powercut: LODE_POWERCUT_LOG %s: %s\n", trace, strerror(errno));
        _exit(70);
    }
    const char *marks = getenv("LODE_POWERCUT_MARKS");
    if (marks && !resolve(AT_FDCWD, marks, marks_path)) marks_path[0] = 0;
    const char *at = getenv("LODE_POWERCUT_AT");
    cut_at = at ? strtoull(at, NULL, 10) : 0;
    // One process writes the trace: its children run without the layer.
    unsetenv("LD_PRELOAD");
    nftw(root, walk, 32, FTW_PHYS);
    active = 1;
}

static void track(int fd, int flags, const char *full) {
    if (fd < 0 || fd >= MAX_FDS) return;
    fds[fd].used = 0;
    if (marks_path[0] && strcmp(full, marks_path) == 0) {
        fds[fd].used = 1;
        fds[fd].marks = 1;
        return;
    }
    const char *rel = relative(full);
    if (!rel) return;
    struct stat info;
    if (fstat(fd, &info) != 0) return;
    fds[fd].used = 1;
    fds[fd].marks = 0;
    fds[fd].directory = S_ISDIR(info.st_mode);
    fds[fd].synchronous = (flags & (O_SYNC | O_DSYNC)) != 0;
    fds[fd].inode = (uint64_t)info.st_ino;
    snprintf(fds[fd].rel, sizeof fds[fd].rel, "%s", rel);
}

static struct tracked *followed(int fd) {
    if (!active || fd < 0 || fd >= MAX_FDS || !fds[fd].used) return NULL;
    return &fds[fd];
}

static int open_common(int dirfd, const char *path, int flags, mode_t mode, int at) {
    char full[PATH_MAX];
    int interesting = active && resolve(dirfd, path, full);
    const char *rel = interesting ? relative(full) : NULL;
    if (interesting && !rel && !(marks_path[0] && strcmp(full, marks_path) == 0)) interesting = 0;
    if (!interesting) {
        if (at) {
            load_openat();
            return real_openat(dirfd, path, flags, mode);
        }
        load_open();
        return real_open(path, flags, mode);
    }
    pthread_mutex_lock(&lock);
    struct stat before;
    int existed = lstat(full, &before) == 0;
    int creates = rel && (flags & O_CREAT) && !existed;
    int truncates = rel && (flags & O_TRUNC) && existed && S_ISREG(before.st_mode) && (flags & O_ACCMODE);
    if (creates || truncates) operation();
    int fd;
    if (at) {
        load_openat();
        fd = real_openat(dirfd, path, flags, mode);
    } else {
        load_open();
        fd = real_open(path, flags, mode);
    }
    int saved = errno;
    if (fd >= 0) {
        track(fd, flags, full);
        if (rel && fd < MAX_FDS && fds[fd].used) {
            if (creates) record_path(PC_CREATE, fds[fd].inode, rel);
            if (truncates) record(PC_TRUNCATE, 0, fds[fd].inode, 0, NULL, 0);
        }
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
    return fd;
}

static mode_t mode_argument(int flags, va_list arguments) {
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(arguments, int) : 0;
}

int open(const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    return open_common(AT_FDCWD, path, flags, mode, 0);
}

int open64(const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    return open_common(AT_FDCWD, path, flags, mode, 0);
}

int openat(int dirfd, const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    return open_common(dirfd, path, flags, mode, 1);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    return open_common(dirfd, path, flags, mode, 1);
}

int close(int fd) {
    load_close();
    if (active && fd >= 0 && fd < MAX_FDS) {
        pthread_mutex_lock(&lock);
        fds[fd].used = 0;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}

// A write of `length` bytes at `offset` that is about to happen: counted, then recorded once done.
static void record_write(struct tracked *t, const void *bytes, size_t length, off_t offset) {
    if (t->marks) {
        record(PC_MARK, 0, 0, 0, bytes, length);
    } else {
        record(PC_WRITE, t->synchronous ? 1 : 0, t->inode, (uint64_t)offset, bytes, length);
    }
}

static ssize_t followed_write(int fd, const void *bytes, size_t length, off_t offset, int positioned) {
    pthread_mutex_lock(&lock);
    struct tracked *t = followed(fd);
    if (t && !t->marks) operation();
    ssize_t n;
    if (positioned) {
        load_pwrite();
        n = real_pwrite(fd, bytes, length, offset);
    } else {
        offset = lseek(fd, 0, SEEK_CUR);
        if (offset >= 0 && (fcntl(fd, F_GETFL) & O_APPEND)) {
            struct stat info;
            if (fstat(fd, &info) == 0) offset = info.st_size;
        }
        load_write();
        n = real_write(fd, bytes, length);
    }
    int saved = errno;
    if (t && n > 0) record_write(t, bytes, (size_t)n, offset);
    pthread_mutex_unlock(&lock);
    errno = saved;
    return n;
}

ssize_t write(int fd, const void *bytes, size_t length) {
    if (!followed(fd)) {
        load_write();
        return real_write(fd, bytes, length);
    }
    return followed_write(fd, bytes, length, 0, 0);
}

ssize_t pwrite(int fd, const void *bytes, size_t length, off_t offset) {
    if (!followed(fd)) {
        load_pwrite();
        return real_pwrite(fd, bytes, length, offset);
    }
    return followed_write(fd, bytes, length, offset, 1);
}

ssize_t pwrite64(int fd, const void *bytes, size_t length, off64_t offset) {
    if (!followed(fd)) {
        load_pwrite64();
        return real_pwrite64(fd, bytes, length, offset);
    }
    return followed_write(fd, bytes, length, (off_t)offset, 1);
}

// Vector writes are gathered into one buffer and written at once, so a record is exactly one write.
static ssize_t followed_writev(int fd, const struct iovec *vector, int count, off_t offset, int positioned) {
    size_t total = 0;
    for (int i = 0; i < count; i++) total += vector[i].iov_len;
    char *buffer = malloc(total ? total : 1);
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        memcpy(buffer + at, vector[i].iov_base, vector[i].iov_len);
        at += vector[i].iov_len;
    }
    ssize_t n = followed_write(fd, buffer, total, offset, positioned);
    int saved = errno;
    free(buffer);
    errno = saved;
    return n;
}

ssize_t writev(int fd, const struct iovec *vector, int count) {
    if (!followed(fd)) {
        load_writev();
        return real_writev(fd, vector, count);
    }
    return followed_writev(fd, vector, count, 0, 0);
}

ssize_t pwritev(int fd, const struct iovec *vector, int count, off_t offset) {
    if (!followed(fd)) {
        load_pwritev();
        return real_pwritev(fd, vector, count, offset);
    }
    return followed_writev(fd, vector, count, offset, 1);
}

ssize_t pwritev64(int fd, const struct iovec *vector, int count, off64_t offset) {
    if (!followed(fd)) {
        load_pwritev64();
        return real_pwritev64(fd, vector, count, offset);
    }
    return followed_writev(fd, vector, count, (off_t)offset, 1);
}

static int followed_truncate(int fd, off_t length) {
    pthread_mutex_lock(&lock);
    struct tracked *t = followed(fd);
    if (t) operation();
    load_ftruncate();
    int result = real_ftruncate(fd, length);
    int saved = errno;
    if (t && result == 0) {
        record(PC_TRUNCATE, 0, t->inode, (uint64_t)length, NULL, 0);
        for (int i = 0; i < MAX_MAPS; i++) {
            // A map's shadow keeps what the file holds: zeros past a new end.
            if (maps[i].used && maps[i].inode == t->inode) {
                off_t end = maps[i].offset + (off_t)maps[i].length;
                if (length < end) {
                    size_t from = length > maps[i].offset ? (size_t)(length - maps[i].offset) : 0;
                    memset(maps[i].shadow + from, 0, maps[i].length - from);
                }
            }
        }
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
    return result;
}

int ftruncate(int fd, off_t length) {
    if (!followed(fd)) {
        load_ftruncate();
        return real_ftruncate(fd, length);
    }
    return followed_truncate(fd, length);
}

int ftruncate64(int fd, off64_t length) {
    if (!followed(fd)) {
        load_ftruncate64();
        return real_ftruncate64(fd, length);
    }
    return followed_truncate(fd, (off_t)length);
}

// Records the pages of `map` within [from, to) that differ from its shadow as writes.
static void record_map_changes(struct mapping *map, size_t from, size_t to) {
    struct stat info;
    if (fstat(map->fd, &info) != 0) return;
    // Pages past the end of the file cannot be read (SIGBUS) and hold nothing.
    off_t file_end = info.st_size;
    if (map->offset + (off_t)to > file_end) to = file_end > map->offset ? (size_t)(file_end - map->offset) : 0;
    const size_t page = 4096;
    for (size_t at = from - from % page; at < to; at += page) {
        size_t length = to - at < page ? to - at : page;
        if (memcmp(map->address + at, map->shadow + at, length) != 0) {
            memcpy(map->shadow + at, map->address + at, length);
            record(PC_WRITE, 0, map->inode, (uint64_t)(map->offset + (off_t)at), map->shadow + at, length);
        }
    }
}

static void record_pending_maps(void) {
    for (int i = 0; i < MAX_MAPS; i++) {
        if (maps[i].used) record_map_changes(&maps[i], 0, maps[i].length);
    }
}

static int followed_sync(int fd, int data_only) {
    pthread_mutex_lock(&lock);
    struct tracked *t = followed(fd);
    if (t && !t->marks) operation();
    int result;
    if (data_only) {
        load_fdatasync();
        result = real_fdatasync(fd);
    } else {
        load_fsync();
        result = real_fsync(fd);
    }
    int saved = errno;
    if (t && !t->marks && result == 0) {
        if (t->directory) {
            record_path(PC_DIR_SYNC, t->inode, t->rel);
        } else {
            // Syncing a file also writes what its writable maps changed.
            for (int i = 0; i < MAX_MAPS; i++) {
                if (maps[i].used && maps[i].inode == t->inode) record_map_changes(&maps[i], 0, maps[i].length);
            }
            record(PC_SYNC, 0, t->inode, 0, NULL, 0);
        }
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
    return result;
}

int fsync(int fd) {
    if (!followed(fd)) {
        load_fsync();
        return real_fsync(fd);
    }
    return followed_sync(fd, 0);
}

int fdatasync(int fd) {
    if (!followed(fd)) {
        load_fdatasync();
        return real_fdatasync(fd);
    }
    return followed_sync(fd, 1);
}

static void *followed_mmap(void *address, size_t length, int protection, int flags, int fd, off_t offset) {
    load_mmap();
    void *result = real_mmap(address, length, protection, flags, fd, offset);
    struct tracked *t = followed(fd);
    if (result == MAP_FAILED || !t || t->marks || !(protection & PROT_WRITE) || !(flags & MAP_SHARED)) return result;
    // LMDB's lock file holds no durable state (it is rebuilt by the first process to open the store).
    size_t name = strlen(t->rel);
    if (name >= 8 && strcmp(t->rel + name - 8, "lock.mdb") == 0) return result;
    if (name >= 5 && strcmp(t->rel + name - 5, "-lock") == 0) return result;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_MAPS; i++) {
        if (maps[i].used) continue;
        maps[i].used = 1;
        maps[i].address = result;
        maps[i].length = length;
        maps[i].offset = offset;
        maps[i].fd = fd;
        maps[i].inode = t->inode;
        maps[i].shadow = calloc(length, 1);
        struct stat info;
        if (fstat(fd, &info) == 0) {
            size_t available = info.st_size > offset ? (size_t)(info.st_size - offset) : 0;
            if (available > length) available = length;
            size_t done = 0;
            while (done < available) {
                ssize_t n = pread(fd, maps[i].shadow + done, available - done, offset + (off_t)done);
                if (n <= 0) break;
                done += (size_t)n;
            }
        }
        break;
    }
    pthread_mutex_unlock(&lock);
    return result;
}

void *mmap(void *address, size_t length, int protection, int flags, int fd, off_t offset) {
    return followed_mmap(address, length, protection, flags, fd, offset);
}

void *mmap64(void *address, size_t length, int protection, int flags, int fd, off64_t offset) {
    return followed_mmap(address, length, protection, flags, fd, (off_t)offset);
}

int munmap(void *address, size_t length) {
    load_munmap();
    if (active) {
        pthread_mutex_lock(&lock);
        for (int i = 0; i < MAX_MAPS; i++) {
            if (maps[i].used && maps[i].address == address) {
                // What the map changed stays in the page cache: record it before the map goes.
                record_map_changes(&maps[i], 0, maps[i].length);
                free(maps[i].shadow);
                maps[i].used = 0;
            }
        }
        pthread_mutex_unlock(&lock);
    }
    return real_munmap(address, length);
}

int msync(void *address, size_t length, int flags) {
    load_msync();
    if (!active) return real_msync(address, length, flags);
    pthread_mutex_lock(&lock);
    struct mapping *map = NULL;
    for (int i = 0; i < MAX_MAPS; i++) {
        if (maps[i].used && (char *)address >= maps[i].address &&
            (char *)address < maps[i].address + maps[i].length) {
            map = &maps[i];
        }
    }
    if (map && (flags & MS_SYNC)) operation();
    int result = real_msync(address, length, flags);
    int saved = errno;
    if (map && result == 0) {
        size_t from = (size_t)((char *)address - map->address);
        size_t to = from + length > map->length ? map->length : from + length;
        record_map_changes(map, from, to);
        if (flags & MS_SYNC) {
            uint64_t range = to - from;
            record(PC_RANGE_SYNC, 0, map->inode, (uint64_t)(map->offset + (off_t)from), &range, sizeof range);
        }
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
    return result;
}

// A change to a name under the root: counted before, recorded after it succeeded.
static int namespace_change(int kind, int olddir, const char *old, int newdir, const char *new,
                            int (*perform)(void *), void *context) {
    char old_full[PATH_MAX], new_full[PATH_MAX];
    const char *old_rel = NULL, *new_rel = NULL;
    if (active && old && resolve(olddir, old, old_full)) old_rel = relative(old_full);
    if (active && new && resolve(newdir, new, new_full)) new_rel = relative(new_full);
    if (!old_rel && !new_rel) return perform(context);
    pthread_mutex_lock(&lock);
    operation();
    int result = perform(context);
    int saved = errno;
    if (result == 0) {
        if (kind == PC_RENAME || kind == PC_LINK) {
            if (old_rel && new_rel) {
                size_t a = strlen(old_rel), b = strlen(new_rel);
                char *payload = malloc(a + b + 1);
                memcpy(payload, old_rel, a + 1);
                memcpy(payload + a + 1, new_rel, b);
                record((uint32_t)kind, 0, 0, 0, payload, a + 1 + b);
                free(payload);
            } else if (old_rel && kind == PC_RENAME) {
                record_path(PC_UNLINK, 0, old_rel);  // moved out of the followed tree
            }
        } else {
            record_path((uint32_t)kind, 0, old_rel ? old_rel : new_rel);
        }
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
    return result;
}

struct call {
    int olddir, newdir, flags;
    const char *old, *new;
    mode_t mode;
    unsigned int rename_flags;
};

static int do_rename(void *c) {
    struct call *k = c;
    load_rename();
    return real_rename(k->old, k->new);
}
static int do_renameat(void *c) {
    struct call *k = c;
    load_renameat();
    return real_renameat(k->olddir, k->old, k->newdir, k->new);
}
static int do_renameat2(void *c) {
    struct call *k = c;
    load_renameat2();
    return real_renameat2(k->olddir, k->old, k->newdir, k->new, k->rename_flags);
}
static int do_unlink(void *c) {
    struct call *k = c;
    load_unlink();
    return real_unlink(k->old);
}
static int do_unlinkat(void *c) {
    struct call *k = c;
    load_unlinkat();
    return real_unlinkat(k->olddir, k->old, k->flags);
}
static int do_mkdir(void *c) {
    struct call *k = c;
    load_mkdir();
    return real_mkdir(k->old, k->mode);
}
static int do_mkdirat(void *c) {
    struct call *k = c;
    load_mkdirat();
    return real_mkdirat(k->olddir, k->old, k->mode);
}
static int do_rmdir(void *c) {
    struct call *k = c;
    load_rmdir();
    return real_rmdir(k->old);
}

static int do_link(void *c) {
    struct call *k = c;
    load_link();
    return real_link(k->old, k->new);
}
static int do_linkat(void *c) {
    struct call *k = c;
    load_linkat();
    return real_linkat(k->olddir, k->old, k->newdir, k->new, k->flags);
}

int link(const char *old, const char *new) {
    struct call k = {AT_FDCWD, AT_FDCWD, 0, old, new, 0, 0};
    return namespace_change(PC_LINK, AT_FDCWD, old, AT_FDCWD, new, do_link, &k);
}

int linkat(int olddir, const char *old, int newdir, const char *new, int flags) {
    struct call k = {olddir, newdir, flags, old, new, 0, 0};
    return namespace_change(PC_LINK, olddir, old, newdir, new, do_linkat, &k);
}

int rename(const char *old, const char *new) {
    struct call k = {AT_FDCWD, AT_FDCWD, 0, old, new, 0, 0};
    return namespace_change(PC_RENAME, AT_FDCWD, old, AT_FDCWD, new, do_rename, &k);
}

int renameat(int olddir, const char *old, int newdir, const char *new) {
    struct call k = {olddir, newdir, 0, old, new, 0, 0};
    return namespace_change(PC_RENAME, olddir, old, newdir, new, do_renameat, &k);
}

int renameat2(int olddir, const char *old, int newdir, const char *new, unsigned int flags) {
    struct call k = {olddir, newdir, 0, old, new, 0, flags};
    return namespace_change(PC_RENAME, olddir, old, newdir, new, do_renameat2, &k);
}

int unlink(const char *path) {
    struct call k = {AT_FDCWD, AT_FDCWD, 0, path, NULL, 0, 0};
    return namespace_change(PC_UNLINK, AT_FDCWD, path, AT_FDCWD, NULL, do_unlink, &k);
}

int unlinkat(int dir, const char *path, int flags) {
    struct call k = {dir, AT_FDCWD, flags, path, NULL, 0, 0};
    return namespace_change((flags & AT_REMOVEDIR) ? PC_RMDIR : PC_UNLINK, dir, path, AT_FDCWD, NULL,
                            do_unlinkat, &k);
}

int mkdir(const char *path, mode_t mode) {
    struct call k = {AT_FDCWD, AT_FDCWD, 0, path, NULL, mode, 0};
    return namespace_change(PC_MKDIR, AT_FDCWD, path, AT_FDCWD, NULL, do_mkdir, &k);
}

int mkdirat(int dir, const char *path, mode_t mode) {
    struct call k = {dir, AT_FDCWD, 0, path, NULL, mode, 0};
    return namespace_change(PC_MKDIR, dir, path, AT_FDCWD, NULL, do_mkdirat, &k);
}

int rmdir(const char *path) {
    struct call k = {AT_FDCWD, AT_FDCWD, 0, path, NULL, 0, 0};
    return namespace_change(PC_RMDIR, AT_FDCWD, path, AT_FDCWD, NULL, do_rmdir, &k);
}
