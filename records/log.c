/* records/log.c: the record log: a streaming reader that tells a torn tail
 * from damage, and a locked, append-only writer. */
#include "records/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/clock.h"
#include "records/codec.h"

#define READ_CHUNK (256 * 1024)

struct LogReader {
    int fd;
    bool own_fd;
    char *path;
    msgpack_unpacker up;
    msgpack_unpacked obj;
    off_t read_off; /* next byte to read from the file */
    off_t good;     /* just after the last complete object */
    bool eof;
    LogReadStatus final; /* sticky once END, TORN or DAMAGED was returned */
    char final_msg[TT_ERRLEN];
};

/* ---- reading ----------------------------------------------------------------- */

/* True when every byte from `from` to the end of the file is zero: some file
 * systems leave such a tail after a crash that extended the file but never
 * wrote the data, which is a torn write, not damage. */
static bool tail_is_zero(int fd, off_t from) {
    char buf[4096];
    for (off_t off = from;;) {
        ssize_t n = pread(fd, buf, sizeof buf, off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) return true;
        for (ssize_t i = 0; i < n; i++)
            if (buf[i]) return false;
        off += n;
    }
}

static LogReadStatus finish(LogReader *this, LogReadStatus st, char *msg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static LogReadStatus finish(LogReader *this, LogReadStatus st, char *msg, const char *fmt, ...) {
    this->final = st;
    this->final_msg[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(this->final_msg, sizeof this->final_msg, fmt, ap);
        va_end(ap);
    }
    if (msg) snprintf(msg, TT_ERRLEN, "%s", this->final_msg);
    return st;
}

/* Damage found in the object starting at `at`, unless the rest of the file is
 * only zeros (a torn write). */
static LogReadStatus damaged(LogReader *this, off_t at, const char *why, char *msg) {
    if (tail_is_zero(this->fd, at)) {
        this->good = at;
        return finish(this, LOG_TORN, msg, "log %s: torn tail of zero bytes at byte offset %jd", this->path,
                      (intmax_t)at);
    }
    return finish(this, LOG_DAMAGED, msg, "log %s: damaged at byte offset %jd: %s", this->path, (intmax_t)at, why);
}

/* The file ended inside an object (tail = its bytes). It is a torn last
 * record when it is the beginning of a record as the writer writes them;
 * anything else is damage. */
static LogReadStatus at_eof_inside_object(LogReader *this, const unsigned char *tail, size_t n, char *msg) {
    if (Record_isPrefix(tail, n))
        return finish(this, LOG_TORN, msg,
                      "log %s: torn last record at byte offset %jd (%zu bytes of an incomplete record at the end)",
                      this->path, (intmax_t)this->good, n);
    char why[96];
    snprintf(why, sizeof why, "the last %zu bytes do not start a record", n);
    return damaged(this, this->good, why, msg);
}

/* Next complete msgpack object into this->obj (LOG_RECORD, *start = its
 * offset), or END / TORN / DAMAGED. Each object is scanned first: the
 * unpacker only sees objects that are whole and well-formed. */
static LogReadStatus next_object(LogReader *this, off_t *start, char *msg) {
    if (this->final != LOG_RECORD) {
        if (msg) snprintf(msg, TT_ERRLEN, "%s", this->final_msg);
        return this->final;
    }
    for (;;) {
        const unsigned char *p = (const unsigned char *)this->up.buffer + this->up.off;
        size_t avail = this->up.used - this->up.off, len = 0;
        ScanResult sr = avail ? Msgpack_scan(p, avail, &len) : SCAN_INCOMPLETE;
        if (sr == SCAN_INVALID) {
            char why[96];
            snprintf(why, sizeof why, "byte 0x%02x at offset %jd is not msgpack", p[len],
                     (intmax_t)(this->good + (off_t)len));
            return damaged(this, this->good, why, msg);
        }
        if (sr == SCAN_COMPLETE ? len > LOG_MAX_RECORD : avail >= LOG_MAX_RECORD)
            return damaged(this, this->good, "an object larger than any record", msg);
        if (sr == SCAN_COMPLETE) {
            size_t size = 0;
            msgpack_unpack_return r = msgpack_unpacker_next_with_size(&this->up, &this->obj, &size);
            if (r == MSGPACK_UNPACK_SUCCESS || r == MSGPACK_UNPACK_EXTRA_BYTES) {
                *start = this->good;
                this->good += (off_t)size;
                return LOG_RECORD;
            }
            /* the scan said it is whole and valid; only memory can fail here */
            return finish(this, LOG_DAMAGED, msg, "log %s: cannot decode the object at byte offset %jd (%s)",
                          this->path, (intmax_t)this->good,
                          r == MSGPACK_UNPACK_NOMEM_ERROR ? "out of memory" : "unpacker error");
        }
        /* the object at `good` needs more bytes */
        if (this->eof) {
            if (avail == 0) return finish(this, LOG_END, msg, NULL);
            return at_eof_inside_object(this, p, avail, msg);
        }
        if (!msgpack_unpacker_reserve_buffer(&this->up, READ_CHUNK))
            return finish(this, LOG_DAMAGED, msg, "log %s: out of memory while reading", this->path);
        ssize_t n = pread(this->fd, msgpack_unpacker_buffer(&this->up), msgpack_unpacker_buffer_capacity(&this->up),
                          this->read_off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return finish(this, LOG_DAMAGED, msg, "log %s: read error at byte offset %jd: %s", this->path,
                          (intmax_t)this->read_off, strerror(errno));
        if (n == 0) {
            this->eof = true;
        } else {
            msgpack_unpacker_buffer_consumed(&this->up, (size_t)n);
            this->read_off += n;
        }
    }
}

/* Reader over an open descriptor (pread only: the descriptor's offset is not
 * used, so a writer may share it). Reads and checks the header. */
static Status reader_new(int fd, bool own_fd, const char *path, LogReader **out, LogHeader *header, char *err) {
    LogReader *this = calloc(1, sizeof *this);
    if (!this) abort();
    this->fd = fd;
    this->own_fd = own_fd;
    this->path = strdup(path);
    if (!this->path || !msgpack_unpacker_init(&this->up, READ_CHUNK)) abort();
    msgpack_unpacked_init(&this->obj);
    this->final = LOG_RECORD;

    off_t start;
    char why[TT_ERRLEN];
    LogReadStatus st = next_object(this, &start, why);
    Status rc = TT_OK;
    if (st == LOG_END) {
        rc = tt_fail(err, "log %s is empty", path);
    } else if (st != LOG_RECORD) {
        rc = tt_fail(err, "%s is not a tunetop log (its first bytes are not a log header)", path);
    } else {
        LogHeader h;
        if (LogHeader_fromObject(&this->obj.data, &h, why))
            rc = tt_fail(err, "%s is not a tunetop log (%s)", path, why);
        else if (header)
            *header = h;
    }
    if (rc != TT_OK) {
        LogReader_close(this);
        return TT_ERR;
    }
    *out = this;
    return TT_OK;
}

Status LogReader_open(const char *path, LogReader **out, LogHeader *header, char *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return tt_fail(err, "log %s does not exist", path);
        return tt_fail(err, "cannot open log %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tt_fail(err, "%s is not a regular file", path);
    }
    return reader_new(fd, true, path, out, header, err);
}

LogReadStatus LogReader_nextEntry(LogReader *this, LogEntry *e, char *msg) {
    off_t start;
    LogReadStatus st = next_object(this, &start, msg);
    if (st != LOG_RECORD) return st;
    char why[TT_ERRLEN];
    Status bad = LogObject_kind(&this->obj.data, &e->kind, why);
    if (!bad) {
        switch (e->kind) {
        case LOG_OBJ_SESSION: bad = LogSession_fromObject(&this->obj.data, &e->session, why); break;
        case LOG_OBJ_STEER: bad = LogSteer_fromObject(&this->obj.data, &e->steer, why); break;
        default: bad = Record_fromObject(&this->obj.data, &e->rec, why); break;
        }
    }
    if (bad) {
        this->good = start; /* good data ends before the bad object */
        return damaged(this, start, why, msg);
    }
    return LOG_RECORD;
}

LogReadStatus LogReader_next(LogReader *this, Record *rec, char *msg) {
    for (;;) {
        off_t start;
        LogReadStatus st = next_object(this, &start, msg);
        if (st != LOG_RECORD) return st;
        char why[TT_ERRLEN];
        LogObjectKind kind;
        Status bad = LogObject_kind(&this->obj.data, &kind, why);
        if (!bad && kind != LOG_OBJ_RECORD) {
            /* a session or steer object: checked, then skipped */
            LogSession s;
            LogSteer steer;
            LogSession_init(&s);
            bad = kind == LOG_OBJ_SESSION ? LogSession_fromObject(&this->obj.data, &s, why)
                                          : LogSteer_fromObject(&this->obj.data, &steer, why);
            LogSession_done(&s);
            if (!bad) continue;
        }
        if (!bad) bad = Record_fromObject(&this->obj.data, rec, why);
        if (bad) {
            this->good = start; /* good data ends before the bad object */
            return damaged(this, start, why, msg);
        }
        return LOG_RECORD;
    }
}

void LogReader_follow(LogReader *this) {
    if (this->final == LOG_DAMAGED || this->final == LOG_RECORD) return;
    if (this->final == LOG_TORN) {
        /* forget the partial object: the writer may have completed it, or a
         * resuming session truncated it and wrote another */
        msgpack_unpacked_destroy(&this->obj);
        msgpack_unpacker_destroy(&this->up);
        if (!msgpack_unpacker_init(&this->up, READ_CHUNK)) abort();
        this->read_off = this->good;
    }
    this->eof = false;
    this->final = LOG_RECORD;
}

off_t LogReader_goodOffset(const LogReader *this) { return this->good; }

void LogReader_close(LogReader *this) {
    if (!this) return;
    msgpack_unpacked_destroy(&this->obj);
    msgpack_unpacker_destroy(&this->up);
    if (this->own_fd) close(this->fd);
    free(this->path);
    free(this);
}

/* ---- writing ----------------------------------------------------------------- */

struct LogWriter {
    int fd;
    char *path;
    off_t size;         /* bytes of complete records in the file */
    pthread_mutex_t mu; /* one record at a time, so a retried short write never interleaves */
};

/* write(2) until all of buf is out (EINTR and short writes continue from the
 * same buffer). On O_APPEND each piece lands at the end of the file. */
static int write_all(int fd, const char *buf, size_t len) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return EIO;
        done += (size_t)n;
    }
    return 0;
}

/* The pid holding a flock on the file, from /proc/locks; 0 when unknown. */
static long lock_holder(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return 0;
    FILE *f = fopen("/proc/locks", "r");
    if (!f) return 0;
    char line[256];
    long pid = 0;
    while (!pid && fgets(line, sizeof line, f)) {
        char kind[16];
        long p;
        unsigned maj, min;
        unsigned long ino;
        /* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters ("1: -> FLOCK ...") do not match */
        if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%lu", kind, &p, &maj, &min, &ino) == 5 &&
            strcmp(kind, "FLOCK") == 0 && maj == major(st.st_dev) && min == minor(st.st_dev) && ino == st.st_ino)
            pid = p;
    }
    fclose(f);
    return pid > 0 ? pid : 0;
}

/* Makes a new file's directory entry durable. */
static void sync_parent_dir(const char *path) {
    char *copy = strdup(path);
    if (!copy) return;
    int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(copy);
}

static Status write_header(int fd, const char *path, const char *target, char *err) {
    LogHeader h = {.version = LOG_FORMAT_VERSION, .created = clock_wall()};
    snprintf(h.target, sizeof h.target, "%s", target);
    char *bytes;
    size_t len;
    if (LogHeader_encode(&h, &bytes, &len, err)) return TT_ERR;
    int e = write_all(fd, bytes, len);
    free(bytes);
    if (e) {
        if (ftruncate(fd, 0) != 0) { /* nothing more to do: the error below is what matters */
        }
        return tt_fail(err, "cannot write the header of log %s: %s", path, strerror(e));
    }
    if (fsync(fd) != 0) return tt_fail(err, "cannot sync log %s: %s", path, strerror(errno));
    sync_parent_dir(path);
    return TT_OK;
}

/* Checks an existing log and finds where its good data ends; truncates a torn tail. */
static Status check_existing(int fd, const char *path, const char *target, off_t *size, off_t *truncated_at,
                             char *err) {
    LogReader *r;
    LogHeader h;
    char why[TT_ERRLEN];
    if (reader_new(fd, false, path, &r, &h, why)) return tt_fail(err, "refusing to append: %s", why);
    if (strcmp(h.target, target) != 0) {
        LogReader_close(r);
        return tt_fail(err, "log %s holds records for target %s, not %s; use another log file", path, h.target, target);
    }
    Record rec;
    Record_init(&rec);
    LogReadStatus st;
    while ((st = LogReader_next(r, &rec, why)) == LOG_RECORD) {
    }
    Record_done(&rec);
    off_t good = LogReader_goodOffset(r);
    LogReader_close(r);
    if (st == LOG_DAMAGED)
        return tt_fail(err, "refusing to append to a damaged log: %s (the file was not modified)", why);
    *size = good;
    if (st == LOG_TORN) {
        if (ftruncate(fd, good) != 0)
            return tt_fail(err, "cannot truncate the torn tail of log %s: %s", path, strerror(errno));
        if (fsync(fd) != 0) return tt_fail(err, "cannot sync log %s: %s", path, strerror(errno));
        *truncated_at = good;
    }
    return TT_OK;
}

Status LogWriter_open(const char *path, const char *target, LogWriter **out, off_t *truncated_at, char *err) {
    off_t trunc = -1, size = 0;
    if (truncated_at) *truncated_at = -1;
    if (!target || !target[0] || strlen(target) >= sizeof((LogHeader *)0)->target)
        return tt_fail(err, "invalid target name for log %s", path);
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return tt_fail(err, "cannot open log %s for writing: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tt_fail(err, "%s is not a regular file", path);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        long pid = e == EWOULDBLOCK ? lock_holder(fd) : 0;
        close(fd);
        if (e != EWOULDBLOCK) return tt_fail(err, "cannot lock log %s: %s", path, strerror(e));
        if (pid) return tt_fail(err, "log %s is in use by another tunetop session (pid %ld)", path, pid);
        return tt_fail(err, "log %s is in use by another tunetop session", path);
    }
    /* size again under the lock: the previous holder may have written since */
    if (fstat(fd, &st) != 0) {
        close(fd);
        return tt_fail(err, "cannot stat log %s: %s", path, strerror(errno));
    }
    Status rc =
        st.st_size == 0 ? write_header(fd, path, target, err) : check_existing(fd, path, target, &size, &trunc, err);
    if (rc) {
        close(fd); /* releases the lock */
        return TT_ERR;
    }
    if (st.st_size == 0) {
        struct stat now;
        size = fstat(fd, &now) == 0 ? now.st_size : 0;
    }
    LogWriter *this = calloc(1, sizeof *this);
    if (!this) abort();
    this->fd = fd;
    this->path = strdup(path);
    if (!this->path) abort();
    this->size = size;
    pthread_mutex_init(&this->mu, NULL);
    if (truncated_at) *truncated_at = trunc;
    *out = this;
    return TT_OK;
}

/* One object's bytes with a single write(2); a failed write is cut off again. */
static Status append_bytes(LogWriter *this, char *bytes, size_t len, char *err) {
    pthread_mutex_lock(&this->mu);
    int e = write_all(this->fd, bytes, len);
    if (e == 0) {
        this->size += (off_t)len;
    } else if (ftruncate(this->fd, this->size) != 0) {
        /* a partial record stays at the end: the next open sees a torn tail and cuts it */
    }
    pthread_mutex_unlock(&this->mu);
    free(bytes);
    if (e) return tt_fail(err, "cannot append to log %s: %s", this->path, strerror(e));
    return TT_OK;
}

Status LogWriter_append(LogWriter *this, const Record *rec, char *err) {
    char *bytes;
    size_t len;
    if (Record_encode(rec, &bytes, &len, err)) return TT_ERR;
    return append_bytes(this, bytes, len, err);
}

Status LogWriter_appendSession(LogWriter *this, const LogSession *s, char *err) {
    char *bytes;
    size_t len;
    if (LogSession_encode(s, &bytes, &len, err)) return TT_ERR;
    return append_bytes(this, bytes, len, err);
}

Status LogWriter_appendSteer(LogWriter *this, const LogSteer *s, char *err) {
    char *bytes;
    size_t len;
    if (LogSteer_encode(s, &bytes, &len, err)) return TT_ERR;
    return append_bytes(this, bytes, len, err);
}

Status LogWriter_sync(LogWriter *this, char *err) {
    if (fsync(this->fd) != 0) return tt_fail(err, "cannot sync log %s: %s", this->path, strerror(errno));
    return TT_OK;
}

void LogWriter_close(LogWriter *this) {
    if (!this) return;
    fsync(this->fd);
    flock(this->fd, LOCK_UN);
    close(this->fd);
    pthread_mutex_destroy(&this->mu);
    free(this->path);
    free(this);
}
