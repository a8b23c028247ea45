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

#include "base/alloc.h"
#include "base/clock.h"
#include "records/codec.h"
#include "records/logio.h"

#define READ_CHUNK (256 * 1024)

struct LogReader {
    int fd;                   /* -1: reading from mem[0..mem_len) instead */
    const unsigned char *mem; /* not owned */
    size_t mem_len;
    bool own_fd;
    char *path;
    unsigned char *buf; /* bytes read, not yet consumed: buf[start..end) (the next object starts at start) */
    size_t cap, start, end;
    const unsigned char *cur; /* the object next_object returned: cur[0..cur_len), inside buf */
    size_t cur_len;
    msgpack_unpacked obj; /* cur unpacked, for the header and session / steer objects only */
    off_t read_off;       /* next byte to read from the file */
    off_t good;           /* just after the last complete object */
    bool eof;
    LogReadStatus final; /* sticky once END, TORN or DAMAGED was returned */
    char final_msg[TT_ERRLEN];
    size_t chunk;         /* bytes read at a time: READ_CHUNK from a file, less from memory */
    bool checked;         /* the header or an earlier record carried a checksum: every later object must */
    long unchecked;       /* records read without a checksum (written before checksums existed) */
    long long bytes_read; /* from the source, in all (LogReader_bytesRead) */
    off_t size_seen;      /* the file's size at the last LogReader_check */
    /* the chain (codec.h, format version 2): state after the last object */
    uint64_t seq;      /* records since the header or the last session object */
    uint32_t last_crc; /* the last object's seal, 0 when it had none */
    bool chained;      /* the last object carried a chain: every later one must */
    bool closed;       /* the last object was a close marker */
    bool in_session;   /* a session object started the current count (not the header) */
    /* the chain before the current object: what it was if that object is cut as bad */
    uint64_t seq_before;
    uint32_t crc_before;
    bool chained_before, closed_before, in_session_before;
};

static bool verify_checksums = true;

void Log_setChecksumVerification(bool on) { verify_checksums = on; }

/* pread from the file or the memory buffer. */
static ssize_t source_read(LogReader *this, void *buf, size_t n, off_t off) {
    if (this->fd >= 0) {
        ssize_t k = pread(this->fd, buf, n, off);
        if (k > 0) this->bytes_read += k;
        return k;
    }
    if (off < 0 || (size_t)off >= this->mem_len) return 0;
    size_t k = this->mem_len - (size_t)off < n ? this->mem_len - (size_t)off : n;
    memcpy(buf, this->mem + off, k);
    this->bytes_read += (long long)k;
    return (ssize_t)k;
}

/* ---- reading ----------------------------------------------------------------- */

/* True when every byte from `from` to the end of the file is zero: some file
 * systems leave such a tail after a crash that extended the file but never
 * wrote the data, which is a torn write, not damage. */
static bool tail_is_zero(LogReader *this, off_t from) {
    char buf[4096];
    for (off_t off = from;;) {
        ssize_t n = source_read(this, buf, sizeof buf, off);
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

/* True when the file from `at` on is the beginning of a record followed only
 * by zero bytes: a write torn by a crash on a file system that extended the
 * file (a page of zeros) but never wrote all of the data. The zeros may even
 * complete the msgpack object, so this looks at the non-zero part alone: it
 * must be an incomplete record. (A last record damaged elsewhere whose
 * checksum happens to end in zero bytes looks the same, and is cut as torn.) */
static bool torn_then_zeros(LogReader *this, off_t at) {
    size_t cap = 4096, n = 0;
    unsigned char *buf = tt_malloc(cap);
    size_t last_nonzero = 0; /* one past */
    for (;;) {
        if (n == cap) {
            if (cap >= LOG_MAX_RECORD) { /* more than a record's worth before the zeros end: not a torn record */
                free(buf);
                return false;
            }
            buf = tt_realloc(buf, cap * 2);
            cap *= 2;
        }
        ssize_t k = source_read(this, buf + n, cap - n, at + (off_t)n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            free(buf);
            return false;
        }
        if (k == 0) break;
        for (size_t i = n; i < n + (size_t)k; i++)
            if (buf[i]) last_nonzero = i + 1;
        n += (size_t)k;
    }
    size_t len = 0, whole = 0;
    bool torn = last_nonzero > 0 && last_nonzero < n && Record_isPrefix(buf, last_nonzero) &&
                Msgpack_scan(buf, last_nonzero, &len) == SCAN_INCOMPLETE;
    /* an object without a checksum that ends exactly at the end of the file
     * is a whole record whose last bytes are zero, not zero padding */
    if (torn && Msgpack_scan(buf, n, &whole) == SCAN_COMPLETE && whole == n && !Msgpack_endsWithSeal(buf, n))
        torn = false;
    free(buf);
    return torn;
}

/* Damage found in the object starting at `at`, unless the rest of the file is
 * only zeros, or a record's beginning and then only zeros (a torn write). */
static LogReadStatus damaged(LogReader *this, off_t at, const char *why, char *msg) {
    if (tail_is_zero(this, at)) {
        this->good = at;
        return finish(this, LOG_TORN, msg, "log %s: torn tail of zero bytes at byte offset %jd", this->path,
                      (intmax_t)at);
    }
    if (torn_then_zeros(this, at)) {
        this->good = at;
        return finish(this, LOG_TORN, msg, "log %s: torn last record followed by zero bytes at byte offset %jd",
                      this->path, (intmax_t)at);
    }
    return finish(this, LOG_DAMAGED, msg, "log %s: damaged at byte offset %jd: %s", this->path, (intmax_t)at, why);
}

/* The file ended inside an object (tail = its bytes). It is a torn last
 * record when it is the beginning of a record as the writer writes them;
 * anything else is damage. */
static LogReadStatus at_eof_inside_object(LogReader *this, const unsigned char *tail, size_t n, char *msg) {
    /* a record that ends with its checksum was written whole: if it does not
     * parse, a length inside it was damaged (a torn write never ends there) */
    if (Msgpack_endsNearSeal(tail, n))
        return damaged(this, this->good, "a whole record (it ends with its checksum) whose lengths are damaged", msg);
    if (Record_isPrefix(tail, n))
        return finish(this, LOG_TORN, msg,
                      "log %s: torn last record at byte offset %jd (%zu bytes of an incomplete record at the end)",
                      this->path, (intmax_t)this->good, n);
    char why[96];
    snprintf(why, sizeof why, "the last %zu bytes do not start a record", n);
    return damaged(this, this->good, why, msg);
}

/* Makes room for at least `want` more bytes after buf[end]: moves the
 * unconsumed bytes to the front, grows the buffer when that is not enough. */
static void reserve(LogReader *this, size_t want) {
    if (this->cap - this->end >= want) return;
    if (this->start > 0) {
        memmove(this->buf, this->buf + this->start, this->end - this->start);
        this->end -= this->start;
        this->start = 0;
    }
    if (this->cap - this->end >= want) return;
    size_t cap = this->cap * 2 > this->end + want ? this->cap * 2 : this->end + want;
    this->buf = tt_realloc(this->buf, cap);
    this->cap = cap;
}

/* Checks the object p[0..len) (its seal already checked) against the chain
 * and advances it. NULL when it fits, else a sentence in why. *skip is set
 * for a close marker, which only the reader sees. */
static const char *chain_step(LogReader *this, const unsigned char *p, size_t len, bool *skip, char *why,
                              size_t why_len) {
    int kind = this->good == 0 ? -1 : Msgpack_kindOf(p, len); /* -1 the header, 3 a close marker */
    uint64_t seq = 0;
    uint32_t prev = 0;
    bool chained = Msgpack_chainOf(p, len, &seq, &prev);
    bool starts = kind == -1 || kind == 1; /* the header or a session object starts a new count */
    uint64_t want = starts ? 0 : kind == 0 ? this->seq + 1 : this->seq;
    *skip = kind == 3;
    if (!chained && (this->chained || kind == 3)) {
        snprintf(why, why_len, "a %s without its sequence number, in a log whose objects carry one",
                 kind == 3   ? "close marker"
                 : kind == 0 ? "record"
                             : "log object");
        return why;
    }
    if (chained && seq != want) {
        snprintf(why, why_len,
                 "%s number %" PRIu64 " where number %" PRIu64
                 " of the session comes (a record duplicated, reordered or missing)",
                 kind == 0   ? "record"
                 : kind == 3 ? "a close marker after record"
                             : "an object after record",
                 seq, want);
        return why;
    }
    if (chained && !starts && prev != this->last_crc) {
        snprintf(why, why_len,
                 "the object before it is not the one it was written after (chain %08x, expected %08x): a record "
                 "duplicated, reordered or missing",
                 prev, this->last_crc);
        return why;
    }
    this->seq = want;
    this->last_crc = Msgpack_sealValue(p, len);
    if (chained) this->chained = true;
    if (starts) this->chained = chained;
    if (starts) this->in_session = kind == 1;
    this->closed = kind == 3;
    return NULL;
}

/* Next complete msgpack object (LOG_RECORD, *start = its offset; its bytes
 * are this->cur[0..cur_len), valid until the next call), or END / TORN /
 * DAMAGED. Each object is scanned first: only objects that are whole,
 * well-formed and not nested too deeply are returned, so the decoders and
 * the unpacker never see anything else. */
static LogReadStatus next_object(LogReader *this, off_t *start, char *msg) {
    if (this->final != LOG_RECORD) {
        if (msg) snprintf(msg, TT_ERRLEN, "%s", this->final_msg);
        return this->final;
    }
    for (;;) {
        const unsigned char *p = this->buf + this->start;
        size_t avail = this->end - this->start, len = 0;
        int depth = 0;
        ScanResult sr = avail ? Msgpack_scanDepth(p, avail, &len, LOG_MAX_DEPTH, &depth) : SCAN_INCOMPLETE;
        if (sr == SCAN_INVALID) {
            char why[96];
            snprintf(why, sizeof why, "byte 0x%02x at offset %jd is not msgpack", p[len],
                     (intmax_t)(this->good + (off_t)len));
            return damaged(this, this->good, why, msg);
        }
        if (sr == SCAN_COMPLETE ? len > LOG_MAX_RECORD : avail >= LOG_MAX_RECORD)
            return damaged(this, this->good, "an object larger than any record", msg);
        if (sr == SCAN_COMPLETE) {
            if (depth > LOG_MAX_DEPTH) {
                char why[128];
                snprintf(why, sizeof why, "an object nested more than %d levels deep (a record nests 2)",
                         LOG_MAX_DEPTH);
                return damaged(this, this->good, why, msg);
            }
            uint32_t stored = 0, computed = 0;
            SealState seal = verify_checksums               ? Msgpack_checkSeal(p, len, &stored, &computed)
                             : Msgpack_endsWithSeal(p, len) ? SEAL_OK
                                                            : SEAL_NONE;
            if (seal == SEAL_BAD) {
                char why[128];
                snprintf(why, sizeof why, "checksum mismatch (stored %08x, computed %08x): the record's bytes changed",
                         stored, computed);
                return damaged(this, this->good, why, msg);
            }
            if (seal == SEAL_NONE && this->checked)
                return damaged(this, this->good, "a record without its checksum, in a log whose records carry one",
                               msg);
            if (seal == SEAL_OK)
                this->checked = true;
            else if (this->good > 0)
                this->unchecked++; /* the header is not a record */
            char cwhy[TT_ERRLEN];
            bool skip = false;
            this->seq_before = this->seq, this->crc_before = this->last_crc, this->chained_before = this->chained;
            this->closed_before = this->closed, this->in_session_before = this->in_session;
            if (chain_step(this, p, len, &skip, cwhy, sizeof cwhy) && verify_checksums)
                return damaged(this, this->good, cwhy, msg);
            if (skip) { /* a close marker: the reader's own business */
                this->start += len;
                this->good += (off_t)len;
                continue;
            }
            this->cur = p;
            this->cur_len = len;
            this->start += len;
            *start = this->good;
            this->good += (off_t)len;
            return LOG_RECORD;
        }
        /* the object at `good` needs more bytes */
        if (this->eof) {
            if (avail == 0) return finish(this, LOG_END, msg, NULL);
            return at_eof_inside_object(this, p, avail, msg);
        }
        reserve(this, this->chunk);
        ssize_t n = source_read(this, this->buf + this->end, this->cap - this->end, this->read_off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return finish(this, LOG_DAMAGED, msg, "log %s: read error at byte offset %jd: %s", this->path,
                          (intmax_t)this->read_off, strerror(errno));
        if (n == 0) {
            this->eof = true;
        } else {
            this->end += (size_t)n;
            this->read_off += n;
        }
    }
}

/* Unpacks the object next_object returned into this->obj (the header and
 * session / steer objects; records are decoded from their bytes). The scan
 * said it is whole and valid: only memory can fail here. */
static LogReadStatus unpack_current(LogReader *this, off_t start, char *msg) {
    size_t off = 0;
    msgpack_unpack_return r = msgpack_unpack_next(&this->obj, (const char *)this->cur, this->cur_len, &off);
    if (r == MSGPACK_UNPACK_SUCCESS || r == MSGPACK_UNPACK_EXTRA_BYTES) return LOG_RECORD;
    this->good = start;
    return finish(this, LOG_DAMAGED, msg, "log %s: cannot decode the object at byte offset %jd (%s)", this->path,
                  (intmax_t)start, r == MSGPACK_UNPACK_NOMEM_ERROR ? "out of memory" : "unpacker error");
}

/* Reader over an open descriptor (pread only: the descriptor's offset is not
 * used, so a writer may share it). Reads and checks the header. */
static Status reader_new(int fd, const void *mem, size_t mem_len, bool own_fd, const char *path, LogReader **out,
                         LogHeader *header, char *err) {
    LogReader *this = tt_calloc(1, sizeof *this);
    this->fd = fd;
    this->mem = mem;
    this->mem_len = mem_len;
    /* a memory reader (tests, fuzzing) reads in small pieces: objects then
     * often span two reads, and a short input costs no large buffer */
    this->chunk = fd >= 0 ? READ_CHUNK : 4096;
    this->own_fd = own_fd;
    this->path = tt_strdup(path);
    this->cap = this->chunk;
    this->buf = tt_malloc(this->cap); /* never NULL: the scan's pointer is buf + start */
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
    } else if (unpack_current(this, start, why) != LOG_RECORD) {
        rc = tt_fail(err, "%s", why);
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

/* "a FIFO", "a directory", ...: what a path that is not a log file is. */
static const char *file_kind(mode_t m) {
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

Status LogReader_open(const char *path, LogReader **out, LogHeader *header, char *err) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the type check
     * below then refuses it (a regular file ignores the flag) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return tt_fail(err, "log %s does not exist", path);
        return tt_fail(err, "cannot open log %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return tt_fail(err, "cannot stat log %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return tt_fail(err, "%s is %s, not a log file", path, file_kind(st.st_mode));
    }
    return reader_new(fd, NULL, 0, true, path, out, header, err);
}

Status LogReader_openBuffer(const void *bytes, size_t len, const char *name, LogReader **out, LogHeader *header,
                            char *err) {
    return reader_new(-1, bytes, len, false, name, out, header, err);
}

void LogReader_setBufferLength(LogReader *this, size_t len) {
    if (this->fd < 0) this->mem_len = len;
}

long LogReader_uncheckedRecords(const LogReader *this) { return this->unchecked; }

bool LogReader_unclosedNote(const LogReader *this, char *note, size_t cap) {
    note[0] = '\0';
    /* a header alone (a log made, nothing written) is no session */
    if (!this->chained || this->closed || this->final == LOG_DAMAGED || this->final == LOG_TORN ||
        (!this->in_session && this->seq == 0)) /* a torn tail says it already */
        return false;
    snprintf(note, cap,
             "the last session of log %.300s has no close marker (it ended by a crash, or the log was cut): it "
             "holds %" PRIu64 " record%s",
             this->path, this->seq, this->seq == 1 ? "" : "s");
    return true;
}

bool LogReader_lastSession(const LogReader *this, bool *closed, long *records) {
    *closed = this->closed;
    *records = (long)this->seq;
    return this->chained;
}

LogReadStatus LogReader_nextEntry(LogReader *this, LogEntry *e, char *msg) {
    off_t start;
    LogReadStatus st = next_object(this, &start, msg);
    if (st != LOG_RECORD) return st;
    char why[TT_ERRLEN];
    /* a record is decoded from its bytes; a session or steer object is unpacked */
    bool has_kind;
    Status bad = Record_fromBytes(this->cur, this->cur_len, &e->rec, &has_kind, why);
    e->kind = LOG_OBJ_RECORD;
    if (has_kind) {
        if (unpack_current(this, start, msg) != LOG_RECORD) return this->final;
        bad = LogObject_kind(&this->obj.data, &e->kind, why);
    }
    if (has_kind && !bad) {
        switch (e->kind) {
        case LOG_OBJ_SESSION:
            bad = LogSession_fromObject(&this->obj.data, &e->session, why);
            break;
        case LOG_OBJ_STEER:
            bad = LogSteer_fromObject(&this->obj.data, &e->steer, why);
            break;
        default:
            bad = Record_fromObject(&this->obj.data, &e->rec, why);
            break;
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
        LogObjectKind kind = LOG_OBJ_RECORD;
        /* a record is decoded from its bytes; a session or steer object is unpacked */
        bool has_kind;
        Status bad = Record_fromBytes(this->cur, this->cur_len, rec, &has_kind, why);
        if (has_kind) {
            if (unpack_current(this, start, msg) != LOG_RECORD) return this->final;
            bad = LogObject_kind(&this->obj.data, &kind, why);
        }
        if (has_kind && !bad && kind != LOG_OBJ_RECORD) {
            /* a session or steer object: checked, then skipped */
            LogSession s;
            LogSteer steer;
            LogSession_init(&s);
            bad = kind == LOG_OBJ_SESSION ? LogSession_fromObject(&this->obj.data, &s, why)
                                          : LogSteer_fromObject(&this->obj.data, &steer, why);
            LogSession_done(&s);
            if (!bad) continue;
        }
        if (has_kind && !bad) bad = Record_fromObject(&this->obj.data, rec, why);
        if (bad) {
            this->good = start; /* good data ends before the bad object, and so does the chain */
            this->seq = this->seq_before, this->last_crc = this->crc_before, this->chained = this->chained_before;
            this->closed = this->closed_before, this->in_session = this->in_session_before;
            return damaged(this, start, why, msg);
        }
        return LOG_RECORD;
    }
}

void LogReader_follow(LogReader *this) {
    if (this->final == LOG_RECORD) return;
    if (this->final == LOG_TORN || this->final == LOG_DAMAGED) {
        /* forget the partial object: the writer may have completed it, or a
         * resuming session truncated it and wrote another. Damage is looked at
         * again too: whether bytes are a torn record or damage can depend on
         * where the file ends (the same bytes give the same answer). */
        this->start = this->end = 0;
        this->read_off = this->good;
    }
    this->eof = false;
    this->final = LOG_RECORD;
}

off_t LogReader_goodOffset(const LogReader *this) { return this->good; }

long long LogReader_bytesRead(const LogReader *this) { return this->bytes_read; }

LogFileChange LogReader_check(LogReader *this, char *msg) {
    if (msg) msg[0] = '\0';
    if (this->fd < 0) { /* a memory reader: its length is the file's size */
        off_t size = (off_t)this->mem_len;
        LogFileChange c = size < this->good         ? LOG_FILE_TRUNCATED
                          : size != this->size_seen ? LOG_FILE_CHANGED
                                                    : LOG_FILE_SAME;
        this->size_seen = size;
        if (c == LOG_FILE_TRUNCATED && msg)
            snprintf(msg, TT_ERRLEN, "%.300s was cut to %lld bytes, below the %lld already read", this->path,
                     (long long)size, (long long)this->good);
        return c;
    }
    struct stat path_st, fd_st;
    if (stat(this->path, &path_st) != 0) {
        if (msg) snprintf(msg, TT_ERRLEN, "%.400s: no longer readable (%s)", this->path, strerror(errno));
        return LOG_FILE_GONE;
    }
    if (fstat(this->fd, &fd_st) != 0 || fd_st.st_dev != path_st.st_dev || fd_st.st_ino != path_st.st_ino) {
        if (msg) snprintf(msg, TT_ERRLEN, "%.400s is another file now (replaced)", this->path);
        return LOG_FILE_REPLACED;
    }
    if (fd_st.st_size < this->good) {
        if (msg)
            snprintf(msg, TT_ERRLEN, "%.300s was cut to %lld bytes, below the %lld already read", this->path,
                     (long long)fd_st.st_size, (long long)this->good);
        this->size_seen = fd_st.st_size;
        return LOG_FILE_TRUNCATED;
    }
    LogFileChange c = fd_st.st_size != this->size_seen ? LOG_FILE_CHANGED : LOG_FILE_SAME;
    this->size_seen = fd_st.st_size;
    return c;
}

void LogReader_close(LogReader *this) {
    if (!this) return;
    msgpack_unpacked_destroy(&this->obj);
    free(this->buf);
    if (this->own_fd && this->fd >= 0) close(this->fd);
    free(this->path);
    free(this);
}

/* ---- writing ----------------------------------------------------------------- */

struct LogWriter {
    int fd;
    char *path;
    dev_t dev; /* the file the path named when it was opened */
    ino_t ino;
    off_t size;       /* bytes of complete records in the file */
    long records;     /* complete records in the file (the header is not one) */
    long unsynced;    /* of those, written since the last successful fsync */
    bool failed;      /* a write or sync failed: final, nothing more is written */
    bool sync_failed; /* an fsync failed: never retried (it would prove nothing) */
    bool moved;       /* the path no longer names the file, or another hand changed it */
    bool tampered;    /* the file's size or last bytes are not what this writer left there */
    char fail_msg[TT_ERRLEN];
    uint64_t seq;           /* the chain (codec.h): records of the session so far */
    uint32_t last_crc;      /* the seal of the last object in the file */
    unsigned char tail[64]; /* the file's last bytes, as this writer knows them */
    size_t tail_len;
    char *head; /* the header's bytes, and every object this writer wrote: */
    size_t head_len;
    char *mine; /* a recovery copy when another hand changed the file */
    size_t mine_len, mine_cap;
    long mine_records;
    pthread_mutex_t mu; /* one record at a time, so a retried short write never interleaves */
};

/* write(2) until all of buf is out (EINTR and short writes continue from the
 * same buffer). On O_APPEND each piece lands at the end of the file. */
static int write_all(int fd, const char *buf, size_t len) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = LogIo_write(fd, buf + done, len - done);
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

/* Writes a new log's header (chained and sealed); *head receives its bytes
 * (malloc'd) on success. */
static Status write_header(int fd, const char *path, const char *target, char **head, size_t *head_len, char *err) {
    LogHeader h = {.version = LOG_FORMAT_VERSION, .created = clock_wall()};
    snprintf(h.target, sizeof h.target, "%s", target);
    char *bytes;
    size_t len;
    if (LogHeader_encode(&h, &bytes, &len, err)) return TT_ERR;
    if (Msgpack_chain(&bytes, &len, 0, 0, err) || Msgpack_seal(&bytes, &len, err)) {
        free(bytes);
        return TT_ERR;
    }
    int e = write_all(fd, bytes, len);
    *head = bytes;
    *head_len = len;
    if (e) {
        free(bytes);
        *head = NULL;
        if (LogIo_ftruncate(fd, 0) != 0) { /* nothing more to do: the error below is what matters */
        }
        return tt_fail(err, "cannot write the header of log %s: %s", path, strerror(e));
    }
    if (LogIo_fsync(fd) != 0) {
        free(bytes);
        *head = NULL;
        return tt_fail(err, "cannot sync log %s: %s", path, strerror(errno));
    }
    sync_parent_dir(path);
    return TT_OK;
}

/* What check_existing learns of an existing log for the writer. */
typedef struct Existing {
    off_t size;     /* where its good data ends */
    long records;   /* complete records */
    off_t head_len; /* the header's length */
    uint64_t seq;   /* the chain's state after the last object */
    uint32_t last_crc;
} Existing;

/* Checks an existing log and finds where its good data ends; truncates a torn tail. */
static Status check_existing(int fd, const char *path, const char *target, Existing *ex, off_t *truncated_at,
                             char *err) {
    LogReader *r;
    LogHeader h;
    char why[TT_ERRLEN];
    if (reader_new(fd, NULL, 0, false, path, &r, &h, why)) return tt_fail(err, "refusing to append: %s", why);
    if (strcmp(h.target, target) != 0) {
        LogReader_close(r);
        return tt_fail(err, "log %s holds records for target %s, not %s; use another log file", path, h.target, target);
    }
    Record rec;
    Record_init(&rec);
    LogReadStatus st;
    long n = 0;
    ex->head_len = r->good;
    while ((st = LogReader_next(r, &rec, why)) == LOG_RECORD)
        n++;
    Record_done(&rec);
    off_t good = LogReader_goodOffset(r);
    ex->seq = r->seq;
    ex->last_crc = r->last_crc;
    LogReader_close(r);
    if (st == LOG_DAMAGED)
        return tt_fail(err, "refusing to append to a damaged log: %s (the file was not modified)", why);
    ex->size = good;
    ex->records = n;
    if (st == LOG_TORN) {
        if (LogIo_ftruncate(fd, good) != 0)
            return tt_fail(err, "cannot truncate the torn tail of log %s: %s", path, strerror(errno));
        if (LogIo_fsync(fd) != 0) return tt_fail(err, "cannot sync log %s: %s", path, strerror(errno));
        *truncated_at = good;
    }
    return TT_OK;
}

/* The last bytes of the file up to this->size, as this writer knows them. */
static void remember_tail(LogWriter *this) {
    off_t from = this->size > (off_t)sizeof this->tail ? this->size - (off_t)sizeof this->tail : 0;
    ssize_t n = pread(this->fd, this->tail, (size_t)(this->size - from), from);
    this->tail_len = n > 0 ? (size_t)n : 0;
}

static LogWriter *writer_new(int fd, const char *path, const struct stat *st, const Existing *ex, char *head,
                             size_t head_len) {
    LogWriter *this = tt_calloc(1, sizeof *this);
    this->fd = fd;
    this->path = tt_strdup(path);
    this->dev = st->st_dev;
    this->ino = st->st_ino;
    this->size = ex->size;
    this->records = ex->records;
    this->seq = ex->seq;
    this->last_crc = ex->last_crc;
    this->head = head;
    this->head_len = head_len;
    remember_tail(this);
    pthread_mutex_init(&this->mu, NULL);
    return this;
}

Status LogWriter_open(const char *path, const char *target, LogWriter **out, off_t *truncated_at, char *err) {
    off_t trunc = -1;
    if (truncated_at) *truncated_at = -1;
    if (!target || !target[0] || strlen(target) >= sizeof((LogHeader *)0)->target)
        return tt_fail(err, "invalid target name for log %s", path);
    int fd = LogIo_open(path, O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) return tt_fail(err, "cannot open log %s for writing: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tt_fail(err, "%s is not a regular file", path);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
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
    Existing ex = {0};
    char *head = NULL;
    size_t head_len = 0;
    Status rc = st.st_size == 0 ? write_header(fd, path, target, &head, &head_len, err)
                                : check_existing(fd, path, target, &ex, &trunc, err);
    if (rc) {
        close(fd); /* releases the lock */
        return TT_ERR;
    }
    if (st.st_size == 0) {
        ex.size = (off_t)head_len;
        ex.last_crc = Msgpack_sealValue((const unsigned char *)head, head_len);
    } else {
        head_len = (size_t)ex.head_len;
        head = tt_malloc(head_len ? head_len : 1);
        if (pread(fd, head, head_len, 0) != (ssize_t)head_len) head_len = 0; /* a recovery copy then has none */
    }
    *out = writer_new(fd, path, &st, &ex, head, head_len);
    if (truncated_at) *truncated_at = trunc;
    return TT_OK;
}

/* The writer stops for good; the first failure's sentence is kept. */
static Status fail(LogWriter *this, char *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static Status fail(LogWriter *this, char *err, const char *fmt, ...) {
    if (!this->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(this->fail_msg, sizeof this->fail_msg, fmt, ap);
        va_end(ap);
        this->failed = true;
    }
    return tt_fail(err, "%s", this->fail_msg);
}

/* True when the file is still as this writer left it: its size is the
 * writer's own offset and its last bytes are the ones it wrote. Otherwise
 * another hand changed it (copied over it, cut it, appended to it): the
 * writer fails for good, and describes the change. Called with mu held. */
static bool still_mine(LogWriter *this, char *err) {
    struct stat st;
    if (this->tampered || fstat(this->fd, &st) != 0) return !this->tampered;
    char what[160] = "";
    if (st.st_size < this->size) {
        snprintf(what, sizeof what, "cut from %lld to %lld bytes", (long long)this->size, (long long)st.st_size);
    } else if (st.st_size > this->size) {
        snprintf(what, sizeof what, "grown from %lld to %lld bytes by another writer", (long long)this->size,
                 (long long)st.st_size);
    } else if (this->tail_len) {
        unsigned char now[sizeof this->tail];
        ssize_t n = pread(this->fd, now, this->tail_len, this->size - (off_t)this->tail_len);
        if (n != (ssize_t)this->tail_len || memcmp(now, this->tail, this->tail_len) != 0)
            snprintf(what, sizeof what, "overwritten (its last %zu bytes are not the ones this session wrote)",
                     this->tail_len);
    }
    if (!what[0]) return true;
    this->tampered = this->moved = true;
    this->failed = false; /* this sentence is the one to tell */
    fail(this, err, "log %s was changed by another program while this session was writing it: %s", this->path, what);
    return false;
}

/* Keeps the bytes of an object written (recovery copy, tail check). */
static void keep_written(LogWriter *this, const char *bytes, size_t len) {
    if (this->mine_len + len > this->mine_cap) {
        size_t cap = this->mine_cap ? this->mine_cap * 2 : 64 * 1024;
        while (cap < this->mine_len + len)
            cap *= 2;
        this->mine = tt_realloc(this->mine, cap);
        this->mine_cap = cap;
    }
    memcpy(this->mine + this->mine_len, bytes, len);
    this->mine_len += len;
    size_t keep = len < sizeof this->tail ? len : sizeof this->tail;
    if (keep < sizeof this->tail) { /* the tail is the end of the previous bytes and this object */
        size_t old = this->tail_len + keep > sizeof this->tail ? sizeof this->tail - keep : this->tail_len;
        memmove(this->tail, this->tail + this->tail_len - old, old);
        memcpy(this->tail + old, bytes, keep);
        this->tail_len = old + keep;
    } else {
        memcpy(this->tail, bytes + len - keep, keep);
        this->tail_len = keep;
    }
}

/* Appends an encoded map, chained to the object before it and sealed with
 * its checksum, with one write(2). kind: 0 a record, 1 a session object
 * (which starts the count again), 2 a steer object, 3 the close marker.
 * Called with mu held. */
static Status append_sealed(LogWriter *this, char *bytes, size_t len, int kind, char *err) {
    if (this->failed || !still_mine(this, err)) {
        free(bytes);
        return tt_fail(err, "%s", this->fail_msg);
    }
    uint64_t seq = kind == 1 ? 0 : kind == 0 ? this->seq + 1 : this->seq;
    if (Msgpack_chain(&bytes, &len, seq, this->last_crc, err) || Msgpack_seal(&bytes, &len, err)) {
        free(bytes);
        return TT_ERR;
    }
    int e = write_all(this->fd, bytes, len);
    if (e == 0) {
        this->size += (off_t)len;
        this->seq = seq;
        this->last_crc = Msgpack_sealValue((const unsigned char *)bytes, len);
        keep_written(this, bytes, len);
        free(bytes);
        if (kind == 0) {
            this->records++;
            this->mine_records++;
            this->unsynced++;
        }
        return TT_OK;
    }
    free(bytes);
    /* Cut a partial record off; if even that fails it stays at the end,
     * where a reader sees a torn tail and the next open cuts it. */
    if (LogIo_ftruncate(this->fd, this->size) != 0) {
    }
    return fail(this, err, "cannot append to log %s: %s", this->path, strerror(e));
}

Status LogWriter_append(LogWriter *this, const Record *rec, char *err) {
    char *bytes;
    size_t len;
    if (Record_encode(rec, &bytes, &len, err)) return TT_ERR; /* sealed by append_sealed */
    pthread_mutex_lock(&this->mu);
    Status st = append_sealed(this, bytes, len, 0, err);
    pthread_mutex_unlock(&this->mu);
    return st;
}

Status LogWriter_appendSession(LogWriter *this, const LogSession *s, char *err) {
    char *bytes;
    size_t len;
    if (LogSession_encode(s, &bytes, &len, err)) return TT_ERR;
    pthread_mutex_lock(&this->mu);
    Status st = append_sealed(this, bytes, len, 1, err);
    pthread_mutex_unlock(&this->mu);
    return st;
}

Status LogWriter_appendSteer(LogWriter *this, const LogSteer *s, char *err) {
    char *bytes;
    size_t len;
    if (LogSteer_encode(s, &bytes, &len, err)) return TT_ERR;
    pthread_mutex_lock(&this->mu);
    Status st = append_sealed(this, bytes, len, 2, err);
    pthread_mutex_unlock(&this->mu);
    return st;
}

Status LogWriter_sync(LogWriter *this, char *err) {
    pthread_mutex_lock(&this->mu);
    Status st = TT_OK;
    if (this->sync_failed || this->moved) {
        st = tt_fail(err, "%s", this->fail_msg);
    } else if (LogIo_fsync(this->fd) != 0) {
        /* final: after a failed fsync the kernel may have dropped the dirty
         * pages, so a later fsync that succeeds would prove nothing */
        int e = errno;
        this->sync_failed = true;
        st = fail(this, err, "cannot sync log %s: %s", this->path, strerror(e));
    } else {
        /* after a failed append the records before it still get synced */
        this->unsynced = 0;
        /* the path must still name this file: deleted, renamed or replaced,
         * every record written from now on would be lost with it */
        struct stat by_path, by_fd;
        bool gone = stat(this->path, &by_path) != 0;
        bool other = !gone && (by_path.st_dev != this->dev || by_path.st_ino != this->ino);
        bool unlinked = fstat(this->fd, &by_fd) == 0 && by_fd.st_nlink == 0;
        if (gone || other || unlinked) {
            this->moved = true;
            this->failed = false; /* this sentence is the one to tell */
            /* another file at the path: moved or copied over it, not deleted */
            st = fail(this, err, "log %s was %s while this session was writing it", this->path,
                      other      ? "replaced by another file (moved or renamed over it)"
                      : unlinked ? "deleted"
                                 : "renamed or deleted");
        } else if (!still_mine(this, err)) {
            st = TT_ERR;
        } else if (this->failed) {
            st = tt_fail(err, "%s", this->fail_msg);
        }
    }
    pthread_mutex_unlock(&this->mu);
    return st;
}

long LogWriter_records(LogWriter *this) {
    pthread_mutex_lock(&this->mu);
    long n = this->tampered ? this->mine_records : this->records;
    pthread_mutex_unlock(&this->mu);
    return n;
}

long LogWriter_unsynced(LogWriter *this) {
    pthread_mutex_lock(&this->mu);
    long n = this->unsynced;
    pthread_mutex_unlock(&this->mu);
    return n;
}

bool LogWriter_failed(LogWriter *this) {
    pthread_mutex_lock(&this->mu);
    bool f = this->failed;
    pthread_mutex_unlock(&this->mu);
    return f;
}

bool LogWriter_moved(LogWriter *this) {
    pthread_mutex_lock(&this->mu);
    bool m = this->moved;
    pthread_mutex_unlock(&this->mu);
    return m;
}

/* Copies the log's complete records (and header) from the open descriptor
 * into a new file at dest; TT_ERR (dest removed) when any step fails. */
static Status copy_to(LogWriter *this, const char *dest, char *err) {
    int out = LogIo_open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) return tt_fail(err, "%s: %s", dest, strerror(errno));
    char buf[64 * 1024];
    int e = 0;
    if (this->tampered) { /* the file is not ours any more: the header and what this session wrote */
        e = write_all(out, this->head ? this->head : "", this->head_len);
        if (!e) e = write_all(out, this->mine ? this->mine : "", this->mine_len);
    }
    for (off_t off = 0; off < this->size && !e && !this->tampered;) {
        size_t want = this->size - off < (off_t)sizeof buf ? (size_t)(this->size - off) : sizeof buf;
        ssize_t n = pread(this->fd, buf, want, off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            e = n < 0 ? errno : EIO;
            break;
        }
        e = write_all(out, buf, (size_t)n);
        off += n;
    }
    if (!e && LogIo_fsync(out) != 0) e = errno;
    close(out);
    if (e) {
        unlink(dest);
        return tt_fail(err, "%s: %s", dest, strerror(e));
    }
    sync_parent_dir(dest);
    return TT_OK;
}

Status LogWriter_saveCopy(LogWriter *this, char *dest, size_t dest_len, char *err) {
    pthread_mutex_lock(&this->mu);
    char why[TT_ERRLEN] = "";
    Status st = TT_ERR;
    /* beside the log first; its directory may be gone too, then the temp dir */
    for (int i = 0; i < 12 && st != TT_OK; i++) {
        if (i == 0)
            snprintf(dest, dest_len, "%s.recovered", this->path);
        else if (i < 10)
            snprintf(dest, dest_len, "%s.recovered.%d", this->path, i);
        else {
            const char *tmp = getenv("TMPDIR");
            snprintf(dest, dest_len, "%s/tunetop-%ld-%d.recovered.log", tmp && tmp[0] ? tmp : "/tmp", (long)getpid(),
                     i);
        }
        char e1[TT_ERRLEN];
        st = copy_to(this, dest, e1);
        if (st != TT_OK && !why[0]) snprintf(why, sizeof why, "%s", e1);
    }
    pthread_mutex_unlock(&this->mu);
    if (st != TT_OK) {
        dest[0] = '\0';
        return tt_fail(err, "cannot write a recovery copy of log %s (%s)", this->path, why);
    }
    return TT_OK;
}

Status LogWriter_closeMarked(LogWriter *this, char *err) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 2);
    msgpack_pack_str_with_body(&pk, "kind", 4); /* first: see Record_isPrefix */
    msgpack_pack_str_with_body(&pk, "close", 5);
    msgpack_pack_str_with_body(&pk, "ts", 2);
    msgpack_pack_double(&pk, clock_wall());
    size_t len = sb.size;
    char *bytes = msgpack_sbuffer_release(&sb);
    msgpack_sbuffer_destroy(&sb);
    pthread_mutex_lock(&this->mu);
    Status st = append_sealed(this, bytes, len, 3, err);
    if (st == TT_OK && LogIo_fsync(this->fd) != 0) {
        this->sync_failed = true;
        st = fail(this, err, "cannot sync log %s: %s", this->path, strerror(errno));
    }
    if (st == TT_OK) this->unsynced = 0;
    pthread_mutex_unlock(&this->mu);
    if (st == TT_OK) LogWriter_close(this);
    return st;
}

void LogWriter_close(LogWriter *this) {
    if (!this) return;
    if (!this->sync_failed && this->unsynced) LogIo_fsync(this->fd); /* what a caller did not sync yet */
    free(this->head);
    free(this->mine);
    flock(this->fd, LOCK_UN);
    close(this->fd);
    pthread_mutex_destroy(&this->mu);
    free(this->path);
    free(this);
}
