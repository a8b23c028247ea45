/* records/codec.c: Record <-> msgpack map, the log header, and the JSON form. */
#include "records/codec.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/numfmt.h"
#include "base/strbuf.h"
#include "records/crc32c.h"

static const char TRUNC_MARK[] = "... [truncated]";

/* ---- encoding ---------------------------------------------------------------- */

static void pack_key(msgpack_packer *pk, const char *key) { msgpack_pack_str_with_body(pk, key, strlen(key)); }

static void pack_str(msgpack_packer *pk, const char *key, const char *s, size_t n) {
    pack_key(pk, key);
    msgpack_pack_str_with_body(pk, s, n);
}

static void pack_f64(msgpack_packer *pk, const char *key, double v) {
    pack_key(pk, key);
    msgpack_pack_double(pk, v);
}

static void pack_i64(msgpack_packer *pk, const char *key, int64_t v) {
    pack_key(pk, key);
    msgpack_pack_int64(pk, v);
}

/* A fixed char field must hold its NUL, else the struct was filled wrongly. */
static Status check_field(const char *s, size_t cap, const char *name, char *err) {
    if (strnlen(s, cap) >= cap) return tt_fail(err, "record field %s is not terminated within %zu bytes", name, cap);
    return TT_OK;
}

Status Record_encode(const Record *this, char **bytes, size_t *len, char *err) {
    if (check_field(this->task_key, sizeof this->task_key, "task", err) ||
        check_field(this->template_name, sizeof this->template_name, "tmpl", err) ||
        check_field(this->target, sizeof this->target, "target", err) ||
        check_field(this->config, sizeof this->config, "config", err))
        return TT_ERR;
    if (this->n_choice < 0 || this->n_choice > REC_MAX_KNOBS)
        return tt_fail(err, "record has %d knob choices (at most %d)", this->n_choice, REC_MAX_KNOBS);
    if (this->n_costs < 0 || this->n_costs > REC_MAX_COSTS)
        return tt_fail(err, "record has %d costs (at most %d)", this->n_costs, REC_MAX_COSTS);
    for (int i = 0; i < this->n_costs; i++) /* what a reader would call damage is never written */
        if (!(isfinite(this->costs[i]) && this->costs[i] > 0))
            return tt_fail(err, "record cost %d is %g s (a latency must be finite and positive)", i, this->costs[i]);

    uint32_t n_keys = 12;
    if (this->error_msg) n_keys++;
    if (this->regs >= 0) n_keys++;
    if (this->spills >= 0) n_keys++;
    if (this->shared_bytes >= 0) n_keys++;
    if (this->local_bytes >= 0) n_keys++;
    if (this->src[0]) n_keys += 2;
    bool roof = this->roof_gflops > 0;
    if (roof) n_keys += 3;
    if (this->host[0]) n_keys++;
    if (this->rank >= 0) n_keys++;
    if (this->device[0]) n_keys++;
    if (this->steps) n_keys++;

    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, n_keys);
    pack_str(&pk, "task", this->task_key, strlen(this->task_key));
    pack_str(&pk, "tmpl", this->template_name, strlen(this->template_name));
    pack_str(&pk, "target", this->target, strlen(this->target));
    pack_key(&pk, "index");
    msgpack_pack_uint64(&pk, this->index);
    pack_key(&pk, "choice");
    msgpack_pack_array(&pk, (size_t)this->n_choice);
    for (int i = 0; i < this->n_choice; i++)
        msgpack_pack_int32(&pk, this->choice[i]);
    pack_str(&pk, "config", this->config, strlen(this->config));
    pack_key(&pk, "costs");
    msgpack_pack_array(&pk, (size_t)this->n_costs);
    for (int i = 0; i < this->n_costs; i++)
        msgpack_pack_double(&pk, this->costs[i]);
    pack_i64(&pk, "err", this->error_no);
    if (this->error_msg) {
        size_t n = strlen(this->error_msg);
        if (n <= REC_MSG_MAX) {
            pack_str(&pk, "msg", this->error_msg, n);
        } else {
            /* keep the head of the message (the first compiler error) and mark the cut */
            size_t keep = REC_MSG_MAX - (sizeof TRUNC_MARK - 1);
            pack_key(&pk, "msg");
            msgpack_pack_str(&pk, REC_MSG_MAX);
            msgpack_pack_str_body(&pk, this->error_msg, keep);
            msgpack_pack_str_body(&pk, TRUNC_MARK, sizeof TRUNC_MARK - 1);
        }
    }
    pack_f64(&pk, "build_s", this->build_s);
    pack_f64(&pk, "run_s", this->run_s);
    pack_f64(&pk, "pack_s", this->pack_s);
    pack_f64(&pk, "ts", this->timestamp);
    if (this->regs >= 0) pack_i64(&pk, "regs", this->regs);
    if (this->spills >= 0) pack_i64(&pk, "spills", this->spills);
    if (this->shared_bytes >= 0) pack_i64(&pk, "smem", this->shared_bytes);
    if (this->local_bytes >= 0) pack_i64(&pk, "lmem", this->local_bytes);
    if (this->src[0]) {
        pack_str(&pk, "src", this->src, strlen(this->src));
        pack_f64(&pk, "src_cost", this->src_cost);
    }
    if (roof) {
        pack_f64(&pk, "roof", this->roof_gflops);
        pack_i64(&pk, "roof_mem", this->roof_bound);
        pack_str(&pk, "mkey", this->machine_key, strnlen(this->machine_key, sizeof this->machine_key - 1));
    }
    if (this->host[0]) pack_str(&pk, "host", this->host, strnlen(this->host, sizeof this->host - 1));
    if (this->rank >= 0) pack_i64(&pk, "rank", this->rank);
    if (this->device[0]) pack_str(&pk, "dev", this->device, strnlen(this->device, sizeof this->device - 1));
    if (this->steps) pack_str(&pk, "steps", this->steps, strlen(this->steps));

    *len = sb.size;
    *bytes = msgpack_sbuffer_release(&sb); /* malloc'd by the sbuffer: the caller frees */
    msgpack_sbuffer_destroy(&sb);
    return TT_OK;
}

Status LogHeader_encode(const LogHeader *this, char **bytes, size_t *len, char *err) {
    if (check_field(this->target, sizeof this->target, "target", err)) return TT_ERR;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    pack_str(&pk, "format", LOG_FORMAT_NAME, strlen(LOG_FORMAT_NAME));
    pack_i64(&pk, "version", this->version);
    pack_f64(&pk, "created", this->created);
    pack_str(&pk, "target", this->target, strlen(this->target));
    *len = sb.size;
    *bytes = msgpack_sbuffer_release(&sb);
    msgpack_sbuffer_destroy(&sb);
    return TT_OK;
}

/* ---- scanning ---------------------------------------------------------------- */

static uint64_t be(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* The head of one value at p[*i] (its type byte and any length or count after
 * it), *i moved past it: *payload is the number of bytes that follow (a
 * string's or ext's body, a number's bytes), and for an array or map
 * *container is set and *elems is the number of values it holds (a map's keys
 * and values both count). SCAN_INVALID leaves *i at the bad type byte (0xc1). */
static ScanResult scan_head(const unsigned char *p, size_t n, size_t *i, uint64_t *payload, uint64_t *elems,
                            bool *container) {
    unsigned c = p[(*i)++];
    size_t hdr = 0; /* bytes of length/count after the type byte */
    int kind = 0;   /* 0 fixed, 1 length-prefixed bytes, 2 ext, 3 array, 4 map */
    *payload = 0, *elems = 0, *container = false;
    if (c <= 0x7f || c >= 0xe0) {
    } else if (c <= 0x8f) {
        *elems = 2 * (c & 0x0f), *container = true;
    } else if (c <= 0x9f) {
        *elems = c & 0x0f, *container = true;
    } else if (c <= 0xbf) {
        *payload = c & 0x1f;
    } else {
        switch (c) {
        case 0xc0:
        case 0xc2:
        case 0xc3:
            break;
        case 0xc4:
        case 0xd9:
            hdr = 1, kind = 1;
            break;
        case 0xc5:
        case 0xda:
            hdr = 2, kind = 1;
            break;
        case 0xc6:
        case 0xdb:
            hdr = 4, kind = 1;
            break;
        case 0xc7:
            hdr = 1, kind = 2;
            break;
        case 0xc8:
            hdr = 2, kind = 2;
            break;
        case 0xc9:
            hdr = 4, kind = 2;
            break;
        case 0xca:
        case 0xce:
        case 0xd2:
            *payload = 4;
            break;
        case 0xcb:
        case 0xcf:
        case 0xd3:
            *payload = 8;
            break;
        case 0xcc:
        case 0xd0:
            *payload = 1;
            break;
        case 0xcd:
        case 0xd1:
        case 0xd4:
            *payload = 2;
            break;
        case 0xd5:
            *payload = 3;
            break;
        case 0xd6:
            *payload = 5;
            break;
        case 0xd7:
            *payload = 9;
            break;
        case 0xd8:
            *payload = 17;
            break;
        case 0xdc:
            hdr = 2, kind = 3;
            break;
        case 0xdd:
            hdr = 4, kind = 3;
            break;
        case 0xde:
            hdr = 2, kind = 4;
            break;
        case 0xdf:
            hdr = 4, kind = 4;
            break;
        default:
            (*i)--;
            return SCAN_INVALID; /* 0xc1 */
        }
    }
    if (hdr) {
        if (hdr > n - *i) return SCAN_INCOMPLETE;
        uint64_t v = be(p + *i, hdr);
        *i += hdr;
        if (kind == 1)
            *payload = v;
        else if (kind == 2)
            *payload = v + 1; /* the ext type byte */
        else
            *elems = kind == 3 ? v : 2 * v, *container = true;
    }
    return SCAN_COMPLETE;
}

ScanResult Msgpack_scan(const unsigned char *p, size_t n, size_t *len) {
    uint64_t pending = 1; /* values still to walk: containers add their elements */
    size_t i = 0;
    while (pending) {
        /* every pending value takes at least one byte */
        if (pending > n - i) return SCAN_INCOMPLETE;
        pending--;
        uint64_t payload, elems;
        bool container;
        ScanResult r = scan_head(p, n, &i, &payload, &elems, &container);
        if (r != SCAN_COMPLETE) {
            if (r == SCAN_INVALID) *len = i;
            return r;
        }
        pending += elems;
        if (payload > n - i) return SCAN_INCOMPLETE;
        i += (size_t)payload;
    }
    *len = i;
    return SCAN_COMPLETE;
}

ScanResult Msgpack_scanDepth(const unsigned char *p, size_t n, size_t *len, int limit, int *depth) {
    uint64_t pending = 1;                 /* values still to walk: containers add their elements */
    uint64_t left[MSGPACK_MAX_DEPTH + 2]; /* of those, the ones at each nesting level */
    int d = 1, max = 0;
    bool deep = false; /* past limit: only the scan goes on */
    if (limit > MSGPACK_MAX_DEPTH) limit = MSGPACK_MAX_DEPTH;
    left[1] = 1;
    size_t i = 0;
    while (pending) {
        /* every pending value takes at least one byte */
        if (pending > n - i) return SCAN_INCOMPLETE;
        pending--;
        if (!deep) {
            while (left[d] == 0)
                d--;
            left[d]--;
        }
        uint64_t payload, elems;
        bool container;
        ScanResult r = scan_head(p, n, &i, &payload, &elems, &container);
        if (r != SCAN_COMPLETE) {
            if (r == SCAN_INVALID) *len = i;
            return r;
        }
        if (container) {
            pending += elems;
            if (!deep) {
                if (d == limit + 1) {
                    deep = true, max = limit + 1;
                } else {
                    if (d > max) max = d;
                    left[++d] = elems;
                }
            }
        }
        if (payload > n - i) return SCAN_INCOMPLETE;
        i += (size_t)payload;
    }
    *len = i;
    *depth = max;
    return SCAN_COMPLETE;
}

int Msgpack_depth(const unsigned char *p, size_t n, int limit) {
    uint64_t left[MSGPACK_MAX_DEPTH + 2];
    if (limit > MSGPACK_MAX_DEPTH) limit = MSGPACK_MAX_DEPTH;
    int d = 1, max = 0;
    size_t i = 0;
    left[1] = 1; /* level 1 holds the one top-level value */
    while (d > 0) {
        if (left[d] == 0) {
            d--;
            continue;
        }
        left[d]--;
        if (i >= n) return max; /* not a whole object: the scan reports that */
        unsigned c = p[i];
        uint64_t count;
        size_t hdr;
        if (c >= 0x80 && c <= 0x8f)
            count = 2 * (c & 0x0f), hdr = 0;
        else if (c >= 0x90 && c <= 0x9f)
            count = c & 0x0f, hdr = 0;
        else if (c == 0xdc || c == 0xde)
            hdr = 2, count = 0;
        else if (c == 0xdd || c == 0xdf)
            hdr = 4, count = 0;
        else {
            size_t len = 0;
            if (Msgpack_scan(p + i, n - i, &len) != SCAN_COMPLETE) return max;
            i += len;
            continue;
        }
        if (hdr) {
            if (hdr > n - i - 1) return max;
            count = be(p + i + 1, hdr);
            if (c == 0xde || c == 0xdf) count *= 2;
        }
        i += 1 + hdr;
        if (d == limit + 1) return limit + 1;
        if (d > max) max = d;
        left[++d] = count;
    }
    return max;
}

bool Record_isPrefix(const unsigned char *p, size_t n) {
    /* a record's first key is "task"; a session or steer object's is "kind" */
    static const unsigned char task[] = {0xa4, 't', 'a', 's', 'k'}, kind[] = {0xa4, 'k', 'i', 'n', 'd'};
    if (n == 0) return false;
    /* Record_encode writes a fixmap or a map16 of a few dozen keys at most */
    size_t hdr = p[0] >= 0x80 && p[0] <= 0x8f ? 1 : p[0] == 0xde ? 3 : 0;
    if (!hdr || (hdr == 3 && n > 1 && p[1] != 0)) return false;
    bool is_task = true, is_kind = true;
    for (size_t i = hdr; i < n && i < hdr + sizeof task; i++) {
        if (p[i] != task[i - hdr]) is_task = false;
        if (p[i] != kind[i - hdr]) is_kind = false;
    }
    return is_task || is_kind;
}

/* ---- checksums ------------------------------------------------------------- */

static const unsigned char SEAL_KEY[] = {0xa3, 'c', 'r', 'c', 0xce};

static bool is_map(const unsigned char *p, size_t n) {
    return n > 0 && ((p[0] >= 0x80 && p[0] <= 0x8f) || p[0] == 0xde || p[0] == 0xdf);
}

/* Adds `add` entries to the count of the map in *bytes (realloc'd with room
 * for `extra` more bytes at the end; a fixmap that outgrows 15 becomes a
 * map16). TT_ERR when it is not a map or cannot grow. */
static Status map_grow(unsigned char **bytes, size_t *len, unsigned add, size_t extra, char *err) {
    unsigned char *p = *bytes;
    size_t n = *len;
    if (!is_map(p, n)) return tt_fail(err, "only a map can carry a checksum");
    if ((p[0] == 0xde && n < 3) || (p[0] == 0xdf && n < 5)) return tt_fail(err, "map header cut short");
    if (p[0] == 0xde && ((unsigned)p[1] << 8 | p[2]) + add > 0xffff) return tt_fail(err, "map too large to seal");
    bool widen = p[0] <= 0x8f && (p[0] & 0x0f) + add > 15; /* the fixmap needs a map16 header */
    unsigned char *q = tt_realloc(p, n + extra + (widen ? 2 : 0));
    if (widen) {
        unsigned c = (q[0] & 0x0fu) + add;
        memmove(q + 3, q + 1, n - 1);
        q[0] = 0xde, q[1] = (unsigned char)(c >> 8), q[2] = (unsigned char)c;
        n += 2;
    } else if (q[0] <= 0x8f) {
        q[0] = (unsigned char)(q[0] + add);
    } else if (q[0] == 0xde) {
        unsigned c = ((unsigned)q[1] << 8 | q[2]) + add;
        q[1] = (unsigned char)(c >> 8), q[2] = (unsigned char)c;
    } else {
        uint32_t c = (uint32_t)be(q + 1, 4) + add;
        q[1] = (unsigned char)(c >> 24), q[2] = (unsigned char)(c >> 16), q[3] = (unsigned char)(c >> 8),
        q[4] = (unsigned char)c;
    }
    *bytes = q;
    *len = n;
    return TT_OK;
}

static void put_be(unsigned char *q, uint64_t v, int n) {
    for (int i = 0; i < n; i++)
        q[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

Status Msgpack_seal(char **bytes, size_t *len, char *err) {
    unsigned char *q = (unsigned char *)*bytes;
    size_t n = *len;
    if (map_grow(&q, &n, 1, SEAL_LEN, err)) return TT_ERR;
    memcpy(q + n, SEAL_KEY, sizeof SEAL_KEY);
    n += sizeof SEAL_KEY;
    put_be(q + n, Crc32c_update(0, q, n), 4);
    *bytes = (char *)q;
    *len = n + 4;
    return TT_OK;
}

static const unsigned char SEQ_KEY[] = {0xa3, 's', 'e', 'q', 0xcf}, PREV_KEY[] = {0xa4, 'p', 'r', 'e', 'v', 0xce};

Status Msgpack_chain(char **bytes, size_t *len, uint64_t seq, uint32_t prev, char *err) {
    unsigned char *q = (unsigned char *)*bytes;
    size_t n = *len;
    if (map_grow(&q, &n, 2, CHAIN_LEN, err)) return TT_ERR;
    memcpy(q + n, SEQ_KEY, sizeof SEQ_KEY);
    put_be(q + n + sizeof SEQ_KEY, seq, 8);
    n += sizeof SEQ_KEY + 8;
    memcpy(q + n, PREV_KEY, sizeof PREV_KEY);
    put_be(q + n + sizeof PREV_KEY, prev, 4);
    *bytes = (char *)q;
    *len = n + sizeof PREV_KEY + 4;
    return TT_OK;
}

bool Msgpack_chainOf(const unsigned char *p, size_t len, uint64_t *seq, uint32_t *prev) {
    if (!Msgpack_endsWithSeal(p, len) || len < SEAL_LEN + CHAIN_LEN + 1) return false;
    const unsigned char *c = p + len - SEAL_LEN - CHAIN_LEN;
    if (memcmp(c, SEQ_KEY, sizeof SEQ_KEY) != 0 || memcmp(c + 13, PREV_KEY, sizeof PREV_KEY) != 0) return false;
    *seq = be(c + sizeof SEQ_KEY, 8);
    *prev = (uint32_t)be(c + 13 + sizeof PREV_KEY, 4);
    return true;
}

uint32_t Msgpack_sealValue(const unsigned char *p, size_t len) {
    return Msgpack_endsWithSeal(p, len) ? (uint32_t)be(p + len - 4, 4) : 0;
}

int Msgpack_kindOf(const unsigned char *p, size_t n) {
    static const unsigned char kind[] = {0xa4, 'k', 'i', 'n', 'd'};
    static const char *const names[] = {"session", "steer", "close"};
    size_t hdr = n > 0 && p[0] >= 0x80 && p[0] <= 0x8f ? 1 : n > 0 && p[0] == 0xde ? 3 : 0;
    if (!hdr || n < hdr + sizeof kind + 1 || memcmp(p + hdr, kind, sizeof kind) != 0) return 0;
    const unsigned char *v = p + hdr + sizeof kind;
    if (v[0] < 0xa0 || v[0] > 0xbf) return 0;
    size_t vl = v[0] & 0x1f;
    if (n < hdr + sizeof kind + 1 + vl) return 0;
    for (int i = 0; i < 3; i++)
        if (strlen(names[i]) == vl && memcmp(v + 1, names[i], vl) == 0) return i + 1;
    return 0;
}

Status Record_encodeSealed(const Record *this, char **bytes, size_t *len, char *err) {
    if (Record_encode(this, bytes, len, err)) return TT_ERR;
    if (Msgpack_seal(bytes, len, err)) {
        free(*bytes);
        *bytes = NULL;
        return TT_ERR;
    }
    return TT_OK;
}

bool Msgpack_endsWithSeal(const unsigned char *p, size_t n) {
    return n >= SEAL_LEN + 1 && memcmp(p + n - SEAL_LEN, SEAL_KEY, sizeof SEAL_KEY) == 0;
}

bool Msgpack_endsNearSeal(const unsigned char *p, size_t n) {
    if (n < SEAL_LEN + 1) return false;
    int same = 0;
    for (size_t i = 0; i < sizeof SEAL_KEY; i++)
        same += p[n - SEAL_LEN + i] == SEAL_KEY[i];
    return same >= (int)sizeof SEAL_KEY - 1;
}

SealState Msgpack_checkSeal(const unsigned char *p, size_t len, uint32_t *stored, uint32_t *computed) {
    if (!is_map(p, len)) return SEAL_NONE;
    if (!Msgpack_endsWithSeal(p, len)) {
        /* a seal whose key or type byte was flipped: damage, not an object
         * written before checksums (whose last entry is never this close) */
        if (!Msgpack_endsNearSeal(p, len)) return SEAL_NONE;
        if (stored) *stored = (uint32_t)be(p + len - 4, 4);
        if (computed) *computed = Crc32c_update(0, p, len - 4);
        return SEAL_BAD;
    }
    uint32_t want = (uint32_t)be(p + len - 4, 4), got = Crc32c_update(0, p, len - 4);
    if (want == got) return SEAL_OK;
    if (stored) *stored = want;
    if (computed) *computed = got;
    return SEAL_BAD;
}

/* ---- decoding ---------------------------------------------------------------- */

static bool key_is(const msgpack_object *k, const char *name) {
    size_t n = strlen(name);
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && memcmp(k->via.str.ptr, name, n) == 0;
}

Status Msgpack_number(const msgpack_object *o, const char *name, double *out, char *err) {
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *out = o->via.f64;
        return TT_OK;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        *out = (double)o->via.u64;
        return TT_OK;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *out = (double)o->via.i64;
        return TT_OK;
    default:
        return tt_fail(err, "key \"%s\" is not a number", name);
    }
}

static Status get_int(const msgpack_object *o, const char *name, int64_t lo, int64_t hi, int64_t *out, char *err) {
    int64_t v;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > (uint64_t)INT64_MAX) return tt_fail(err, "key \"%s\" is out of range", name);
        v = (int64_t)o->via.u64;
    } else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        v = o->via.i64;
    } else {
        return tt_fail(err, "key \"%s\" is not an integer", name);
    }
    if (v < lo || v > hi) return tt_fail(err, "key \"%s\" is out of range (%" PRId64 ")", name, v);
    *out = v;
    return TT_OK;
}

static Status get_str(const msgpack_object *o, const char *name, char *dst, size_t cap, char *err) {
    if (o->type != MSGPACK_OBJECT_STR) return tt_fail(err, "key \"%s\" is not a string", name);
    if (o->via.str.size >= cap)
        return tt_fail(err, "key \"%s\" is %u bytes long (at most %zu)", name, o->via.str.size, cap - 1);
    if (memchr(o->via.str.ptr, '\0', o->via.str.size)) return tt_fail(err, "key \"%s\" holds a NUL byte", name);
    memcpy(dst, o->via.str.ptr, o->via.str.size);
    dst[o->via.str.size] = '\0';
    return TT_OK;
}

enum { HAVE_TASK = 1, HAVE_TMPL = 2, HAVE_TARGET = 4, HAVE_INDEX = 8, HAVE_ERR = 16, HAVE_COSTS = 32 };
#define HAVE_REQUIRED (HAVE_TASK | HAVE_TMPL | HAVE_TARGET | HAVE_INDEX | HAVE_ERR | HAVE_COSTS)

/* One key of a record map; unknown keys are ignored (later versions may add some). */
static Status decode_field(const msgpack_object *k, const msgpack_object *v, Record *rec, int *have, char *err) {
    int64_t i = 0;
    if (key_is(k, "task")) {
        *have |= HAVE_TASK;
        return get_str(v, "task", rec->task_key, sizeof rec->task_key, err);
    }
    if (key_is(k, "tmpl")) {
        *have |= HAVE_TMPL;
        return get_str(v, "tmpl", rec->template_name, sizeof rec->template_name, err);
    }
    if (key_is(k, "target")) {
        *have |= HAVE_TARGET;
        return get_str(v, "target", rec->target, sizeof rec->target, err);
    }
    if (key_is(k, "config")) return get_str(v, "config", rec->config, sizeof rec->config, err);
    if (key_is(k, "index")) {
        *have |= HAVE_INDEX;
        if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER) return tt_fail(err, "key \"index\" is not an unsigned integer");
        rec->index = v->via.u64;
        return TT_OK;
    }
    if (key_is(k, "choice")) {
        if (v->type != MSGPACK_OBJECT_ARRAY) return tt_fail(err, "key \"choice\" is not an array");
        if (v->via.array.size > REC_MAX_KNOBS)
            return tt_fail(err, "key \"choice\" has %u values (at most %d)", v->via.array.size, REC_MAX_KNOBS);
        for (uint32_t j = 0; j < v->via.array.size; j++) {
            if (get_int(&v->via.array.ptr[j], "choice", INT32_MIN, INT32_MAX, &i, err)) return TT_ERR;
            rec->choice[j] = (int32_t)i;
        }
        rec->n_choice = (int)v->via.array.size;
        return TT_OK;
    }
    if (key_is(k, "costs")) {
        *have |= HAVE_COSTS;
        if (v->type != MSGPACK_OBJECT_ARRAY) return tt_fail(err, "key \"costs\" is not an array");
        if (v->via.array.size > REC_MAX_COSTS)
            return tt_fail(err, "key \"costs\" has %u values (at most %d)", v->via.array.size, REC_MAX_COSTS);
        for (uint32_t j = 0; j < v->via.array.size; j++) {
            if (Msgpack_number(&v->via.array.ptr[j], "costs", &rec->costs[j], err)) return TT_ERR;
            /* a latency is a positive, finite number of seconds: anything else is damage, never a best */
            if (!(isfinite(rec->costs[j]) && rec->costs[j] > 0))
                return tt_fail(err, "cost %u is %g s (a latency must be finite and positive)", j, rec->costs[j]);
        }
        rec->n_costs = (int)v->via.array.size;
        return TT_OK;
    }
    if (key_is(k, "err")) {
        *have |= HAVE_ERR;
        if (get_int(v, "err", 0, INT32_MAX, &i, err)) return TT_ERR;
        rec->error_no = (int)i;
        return TT_OK;
    }
    if (key_is(k, "steps")) {
        if (v->type != MSGPACK_OBJECT_STR) return tt_fail(err, "key \"steps\" is not a string");
        free(rec->steps);
        rec->steps = tt_strndup(v->via.str.ptr, v->via.str.size);
        return TT_OK;
    }
    if (key_is(k, "msg")) {
        if (v->type == MSGPACK_OBJECT_NIL) return TT_OK;
        if (v->type != MSGPACK_OBJECT_STR) return tt_fail(err, "key \"msg\" is not a string");
        free(rec->error_msg);
        rec->error_msg = tt_strndup(v->via.str.ptr, v->via.str.size);
        return TT_OK;
    }
    if (key_is(k, "build_s")) return Msgpack_number(v, "build_s", &rec->build_s, err);
    if (key_is(k, "run_s")) return Msgpack_number(v, "run_s", &rec->run_s, err);
    if (key_is(k, "pack_s")) return Msgpack_number(v, "pack_s", &rec->pack_s, err);
    if (key_is(k, "ts")) return Msgpack_number(v, "ts", &rec->timestamp, err);
    if (key_is(k, "regs")) {
        if (get_int(v, "regs", -1, INT32_MAX, &i, err)) return TT_ERR;
        rec->regs = (int)i;
        return TT_OK;
    }
    if (key_is(k, "spills")) {
        if (get_int(v, "spills", -1, INT32_MAX, &i, err)) return TT_ERR;
        rec->spills = (int)i;
        return TT_OK;
    }
    if (key_is(k, "smem")) return get_int(v, "smem", -1, INT64_MAX, &rec->shared_bytes, err);
    if (key_is(k, "lmem")) return get_int(v, "lmem", -1, INT64_MAX, &rec->local_bytes, err);
    if (key_is(k, "src")) return get_str(v, "src", rec->src, sizeof rec->src, err);
    if (key_is(k, "src_cost")) return Msgpack_number(v, "src_cost", &rec->src_cost, err);
    if (key_is(k, "roof")) return Msgpack_number(v, "roof", &rec->roof_gflops, err);
    if (key_is(k, "roof_mem")) {
        if (get_int(v, "roof_mem", 0, 15, &i, err)) return TT_ERR;
        rec->roof_bound = (int)i;
        return TT_OK;
    }
    if (key_is(k, "mkey")) {
        if (v->type != MSGPACK_OBJECT_STR || v->via.str.size >= sizeof rec->machine_key)
            return tt_fail(err, "key \"mkey\" is not a machine key");
        memcpy(rec->machine_key, v->via.str.ptr, v->via.str.size);
        rec->machine_key[v->via.str.size] = '\0';
        return TT_OK;
    }
    if (key_is(k, "host")) return get_str(v, "host", rec->host, sizeof rec->host, err);
    if (key_is(k, "dev")) return get_str(v, "dev", rec->device, sizeof rec->device, err);
    if (key_is(k, "rank")) {
        if (get_int(v, "rank", 0, INT32_MAX, &i, err)) return TT_ERR;
        rec->rank = (int)i;
        return TT_OK;
    }
    return TT_OK;
}

Status Record_fromObject(const msgpack_object *obj, Record *rec, char *err) {
    Record_done(rec);
    Record_init(rec);
    if (obj->type != MSGPACK_OBJECT_MAP) return tt_fail(err, "object is not a record (not a map)");
    int have = 0;
    for (uint32_t j = 0; j < obj->via.map.size; j++) {
        const msgpack_object_kv *kv = &obj->via.map.ptr[j];
        if (kv->key.type != MSGPACK_OBJECT_STR) return tt_fail(err, "object is not a record (a key is not a string)");
        if (decode_field(&kv->key, &kv->val, rec, &have, err)) return TT_ERR;
    }
    if ((have & HAVE_REQUIRED) != HAVE_REQUIRED) {
        static const char *names[] = {"task", "tmpl", "target", "index", "err", "costs"};
        for (int b = 0; b < 6; b++)
            if (!(have & (1 << b))) return tt_fail(err, "object is not a record (no \"%s\" key)", names[b]);
    }
    return TT_OK;
}

/* ---- decoding straight from the bytes --------------------------------------- */

/* The value at p (inside a whole, valid object: Msgpack_scan said so) as the
 * unpacker would give it, without allocating: scalars and strings in full
 * (strings point into p), arrays and maps with their type and size only
 * (ptr NULL). Returns its length in bytes (containers included). */
static size_t peek_value(const unsigned char *p, size_t n, msgpack_object *o) {
    unsigned c = p[0];
    memset(o, 0, sizeof *o);
    if (c <= 0x7f) {
        o->type = MSGPACK_OBJECT_POSITIVE_INTEGER, o->via.u64 = c;
        return 1;
    }
    if (c >= 0xe0) {
        o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER, o->via.i64 = (int8_t)c;
        return 1;
    }
    if (c >= 0xa0 && c <= 0xbf) {
        o->type = MSGPACK_OBJECT_STR, o->via.str.size = c & 0x1f, o->via.str.ptr = (const char *)p + 1;
        return 1 + (c & 0x1f);
    }
    size_t len = 0;
    switch (c) {
    case 0xc0:
        o->type = MSGPACK_OBJECT_NIL;
        return 1;
    case 0xc2:
    case 0xc3:
        o->type = MSGPACK_OBJECT_BOOLEAN, o->via.boolean = c == 0xc3;
        return 1;
    case 0xca: {
        uint32_t u = (uint32_t)be(p + 1, 4);
        float f;
        memcpy(&f, &u, 4);
        o->type = MSGPACK_OBJECT_FLOAT32, o->via.f64 = f;
        return 5;
    }
    case 0xcb: {
        uint64_t u = be(p + 1, 8);
        double d;
        memcpy(&d, &u, 8);
        o->type = MSGPACK_OBJECT_FLOAT64, o->via.f64 = d;
        return 9;
    }
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: {
        size_t k = (size_t)1 << (c - 0xcc);
        o->type = MSGPACK_OBJECT_POSITIVE_INTEGER, o->via.u64 = be(p + 1, k);
        return 1 + k;
    }
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3: {
        size_t k = (size_t)1 << (c - 0xd0);
        uint64_t u = be(p + 1, k);
        int64_t v = k == 8 ? (int64_t)u : (int64_t)(u ^ ((uint64_t)1 << (8 * k - 1))) - ((int64_t)1 << (8 * k - 1));
        if (v >= 0)
            o->type = MSGPACK_OBJECT_POSITIVE_INTEGER, o->via.u64 = (uint64_t)v;
        else
            o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER, o->via.i64 = v;
        return 1 + k;
    }
    case 0xd9:
    case 0xda:
    case 0xdb: {
        size_t k = (size_t)1 << (c - 0xd9);
        o->type = MSGPACK_OBJECT_STR, o->via.str.size = (uint32_t)be(p + 1, k),
        o->via.str.ptr = (const char *)p + 1 + k;
        return 1 + k + o->via.str.size;
    }
    default:
        break;
    }
    if (c <= 0x8f)
        o->type = MSGPACK_OBJECT_MAP, o->via.map.size = c & 0x0f;
    else if (c <= 0x9f)
        o->type = MSGPACK_OBJECT_ARRAY, o->via.array.size = c & 0x0f;
    else if (c == 0xdc || c == 0xdd)
        o->type = MSGPACK_OBJECT_ARRAY, o->via.array.size = (uint32_t)be(p + 1, c == 0xdc ? 2 : 4);
    else if (c == 0xde || c == 0xdf)
        o->type = MSGPACK_OBJECT_MAP, o->via.map.size = (uint32_t)be(p + 1, c == 0xde ? 2 : 4);
    else if (c >= 0xc4 && c <= 0xc6)
        o->type = MSGPACK_OBJECT_BIN;
    else
        o->type = MSGPACK_OBJECT_EXT;                        /* 0xc7..0xc9, 0xd4..0xd8 */
    if (Msgpack_scan(p, n, &len) != SCAN_COMPLETE) return n; /* cannot happen inside a scanned object */
    return len;
}

Status Record_fromBytes(const unsigned char *p, size_t n, Record *rec, bool *has_kind, char *err) {
    *has_kind = false;
    Record_done(rec);
    Record_init(rec);
    msgpack_object top;
    size_t i = 0;
    peek_value(p, n, &top);
    if (top.type != MSGPACK_OBJECT_MAP) return tt_fail(err, "object is not a record (not a map)");
    i = p[0] <= 0x8f ? 1 : p[0] == 0xde ? 3 : 5;
    int have = 0;
    Status bad = TT_OK;
    msgpack_object_kv kv;
    msgpack_object elems[REC_MAX_COSTS > REC_MAX_KNOBS ? REC_MAX_COSTS : REC_MAX_KNOBS];
    for (uint32_t j = 0; j < top.via.map.size; j++) {
        i += peek_value(p + i, n - i, &kv.key);
        size_t at = i;
        i += peek_value(p + i, n - i, &kv.val);
        if (kv.key.type == MSGPACK_OBJECT_STR && kv.key.via.str.size == 4 &&
            memcmp(kv.key.via.str.ptr, "kind", 4) == 0) {
            *has_kind = true; /* a session or steer object (records/session.h): not decoded here */
            return TT_OK;
        }
        if (bad) continue; /* after an error, only looking for a "kind" key */
        if (kv.key.type != MSGPACK_OBJECT_STR) {
            bad = tt_fail(err, "object is not a record (a key is not a string)");
            continue;
        }
        if (kv.val.type == MSGPACK_OBJECT_ARRAY && kv.val.via.array.size <= sizeof elems / sizeof elems[0]) {
            size_t e = at + (p[at] <= 0x9f ? 1 : p[at] == 0xdc ? 3 : 5);
            for (uint32_t k = 0; k < kv.val.via.array.size; k++)
                e += peek_value(p + e, n - e, &elems[k]);
            kv.val.via.array.ptr = elems;
        }
        bad = decode_field(&kv.key, &kv.val, rec, &have, err);
    }
    if (bad) return TT_ERR;
    if ((have & HAVE_REQUIRED) != HAVE_REQUIRED) {
        static const char *names[] = {"task", "tmpl", "target", "index", "err", "costs"};
        for (int b = 0; b < 6; b++)
            if (!(have & (1 << b))) return tt_fail(err, "object is not a record (no \"%s\" key)", names[b]);
    }
    return TT_OK;
}

Status Record_decode(const char *bytes, size_t len, Record *rec, char *err) {
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    msgpack_unpack_return r = msgpack_unpack_next(&up, bytes, len, &off);
    Status st;
    if (r == MSGPACK_UNPACK_CONTINUE)
        st = tt_fail(err, "record ends early (%zu bytes)", len);
    else if (r < 0)
        st = tt_fail(err, "invalid msgpack");
    else if (off != len)
        st = tt_fail(err, "%zu extra bytes after the record", len - off);
    else
        st = Record_fromObject(&up.data, rec, err);
    msgpack_unpacked_destroy(&up);
    return st;
}

Status LogHeader_fromObject(const msgpack_object *obj, LogHeader *out, char *err) {
    memset(out, 0, sizeof *out);
    if (obj->type != MSGPACK_OBJECT_MAP) return tt_fail(err, "it does not start with a tunetop log header");
    bool format = false, target = false;
    int64_t version = -1;
    for (uint32_t j = 0; j < obj->via.map.size; j++) {
        const msgpack_object *k = &obj->via.map.ptr[j].key, *v = &obj->via.map.ptr[j].val;
        if (key_is(k, "format")) {
            size_t n = strlen(LOG_FORMAT_NAME);
            format = v->type == MSGPACK_OBJECT_STR && v->via.str.size == n &&
                     memcmp(v->via.str.ptr, LOG_FORMAT_NAME, n) == 0;
        } else if (key_is(k, "version")) {
            if (get_int(v, "version", 1, INT32_MAX, &version, err)) return TT_ERR;
        } else if (key_is(k, "created")) {
            if (Msgpack_number(v, "created", &out->created, err)) return TT_ERR;
        } else if (key_is(k, "target")) {
            if (get_str(v, "target", out->target, sizeof out->target, err)) return TT_ERR;
            target = true;
        }
    }
    if (!format) return tt_fail(err, "it does not start with a tunetop log header");
    if (version < 1) return tt_fail(err, "its header has no format version");
    if (version > LOG_FORMAT_VERSION)
        return tt_fail(err, "it is format version %" PRId64 ", newer than this tunetop reads (%d)", version,
                       LOG_FORMAT_VERSION);
    if (!target) return tt_fail(err, "its header names no target");
    out->version = (int)version;
    return TT_OK;
}

/* ---- JSON -------------------------------------------------------------------- */

/* a string literal, without strlen */
#define APPEND_LIT(b, lit) StrBuf_appendn((b), (lit), sizeof(lit) - 1)

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and values past U+10FFFF are not valid UTF-8 */
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* A JSON string; bytes that are not valid UTF-8 (compiler output can hold
 * anything) become U+FFFD so that the line is always valid JSON. */
static void json_str(StrBuf *b, const char *s, size_t cap) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strnlen(s, cap);
    APPEND_LIT(b, "\"");
    for (size_t i = 0; i < n;) {
        size_t run = i; /* printable ASCII other than the quote and backslash goes as it is, a run at a time */
        while (run < n && p[run] >= 0x20 && p[run] < 0x7f && p[run] != '"' && p[run] != '\\')
            run++;
        if (run > i) {
            StrBuf_appendn(b, s + i, run - i);
            i = run;
            continue;
        }
        unsigned c = p[i];
        if (c == '"')
            APPEND_LIT(b, "\\\"");
        else if (c == '\\')
            APPEND_LIT(b, "\\\\");
        else if (c == '\n')
            APPEND_LIT(b, "\\n");
        else if (c == '\r')
            APPEND_LIT(b, "\\r");
        else if (c == '\t')
            APPEND_LIT(b, "\\t");
        else if (c == '\b')
            APPEND_LIT(b, "\\b");
        else if (c == '\f')
            APPEND_LIT(b, "\\f");
        else if (c < 0x20 || c == 0x7f)
            StrBuf_printf(b, "\\u%04x", c);
        else if (c < 0x80)
            StrBuf_appendn(b, (const char *)p + i, 1);
        else {
            size_t len = utf8_len(p + i, n - i);
            if (len == 0) {
                APPEND_LIT(b, "\\ufffd");
                i++;
            } else {
                StrBuf_appendn(b, (const char *)p + i, len);
                i += len;
            }
            continue;
        }
        i++;
    }
    APPEND_LIT(b, "\"");
}

/* Shortest of %.15g/%.17g that reads back exactly; JSON has no inf/nan: null. */
static void json_num(StrBuf *b, double v) {
    if (!isfinite(v)) {
        APPEND_LIT(b, "null");
        return;
    }
    char tmp[32];
    StrBuf_appendn(b, tmp, NumFmt_double(tmp, v));
}

static void json_int(StrBuf *b, int64_t v) {
    char tmp[24];
    StrBuf_appendn(b, tmp, NumFmt_i64(tmp, v));
}

static void json_opt_int(StrBuf *b, const char *key, int64_t v) {
    APPEND_LIT(b, ",\"");
    StrBuf_append(b, key);
    APPEND_LIT(b, "\":");
    if (v < 0)
        APPEND_LIT(b, "null");
    else
        json_int(b, v);
}

void Record_appendJson(const Record *this, StrBuf *out) {
    StrBuf *b = out;
    APPEND_LIT(b, "{\"task\":");
    json_str(b, this->task_key, sizeof this->task_key);
    APPEND_LIT(b, ",\"tmpl\":");
    json_str(b, this->template_name, sizeof this->template_name);
    APPEND_LIT(b, ",\"target\":");
    json_str(b, this->target, sizeof this->target);
    char num[24];
    APPEND_LIT(b, ",\"index\":");
    StrBuf_appendn(b, num, NumFmt_u64(num, this->index));
    APPEND_LIT(b, ",\"choice\":[");
    for (int i = 0; i < this->n_choice && i < REC_MAX_KNOBS; i++) {
        if (i) APPEND_LIT(b, ",");
        json_int(b, this->choice[i]);
    }
    APPEND_LIT(b, "],\"config\":");
    json_str(b, this->config, sizeof this->config);
    APPEND_LIT(b, ",\"costs\":[");
    for (int i = 0; i < this->n_costs && i < REC_MAX_COSTS; i++) {
        if (i) APPEND_LIT(b, ",");
        json_num(b, this->costs[i]);
    }
    APPEND_LIT(b, "],\"err\":");
    json_int(b, this->error_no);
    APPEND_LIT(b, ",\"msg\":");
    if (this->error_msg)
        json_str(b, this->error_msg, SIZE_MAX);
    else
        APPEND_LIT(b, "null");
    APPEND_LIT(b, ",\"build_s\":");
    json_num(b, this->build_s);
    APPEND_LIT(b, ",\"run_s\":");
    json_num(b, this->run_s);
    APPEND_LIT(b, ",\"pack_s\":");
    json_num(b, this->pack_s);
    APPEND_LIT(b, ",\"ts\":");
    json_num(b, this->timestamp);
    json_opt_int(b, "regs", this->regs);
    json_opt_int(b, "spills", this->spills);
    json_opt_int(b, "smem", this->shared_bytes);
    json_opt_int(b, "lmem", this->local_bytes);
    if (this->src[0]) {
        APPEND_LIT(b, ",\"src\":");
        json_str(b, this->src, sizeof this->src);
        APPEND_LIT(b, ",\"src_cost\":");
        json_num(b, this->src_cost);
    }
    if (this->roof_gflops > 0) {
        APPEND_LIT(b, ",\"roof\":");
        json_num(b, this->roof_gflops);
        APPEND_LIT(b, ",\"roof_mem\":");
        json_int(b, this->roof_bound);
        APPEND_LIT(b, ",\"mkey\":");
        json_str(b, this->machine_key, sizeof this->machine_key);
    }
    if (this->host[0]) {
        APPEND_LIT(b, ",\"host\":");
        json_str(b, this->host, sizeof this->host);
    }
    if (this->rank >= 0) {
        APPEND_LIT(b, ",\"rank\":");
        json_int(b, this->rank);
    }
    if (this->device[0]) {
        APPEND_LIT(b, ",\"dev\":");
        json_str(b, this->device, sizeof this->device);
    }
    if (this->steps) {
        APPEND_LIT(b, ",\"steps\":");
        json_str(b, this->steps, SIZE_MAX);
    }
    APPEND_LIT(b, "}");
}

char *Record_toJson(const Record *this) {
    StrBuf b;
    StrBuf_init(&b);
    Record_appendJson(this, &b);
    return StrBuf_take(&b);
}
