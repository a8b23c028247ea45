/* records/session.c: the session and steer objects of the log (see session.h). */
#include "records/session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "records/codec.h"

void LogSession_init(LogSession *this) { memset(this, 0, sizeof *this); }

void LogSession_done(LogSession *this) {
    free(this->tasks);
    LogSession_init(this);
}

void LogSession_copy(LogSession *dst, const LogSession *src) {
    free(dst->tasks);
    *dst = *src;
    dst->tasks = NULL;
    if (src->n_tasks) {
        dst->tasks = malloc((size_t)src->n_tasks * sizeof *dst->tasks);
        if (!dst->tasks) abort();
        memcpy(dst->tasks, src->tasks, (size_t)src->n_tasks * sizeof *dst->tasks);
    }
}

bool LogSession_order(const LogSession *this, const KeyIndex *index, const void *entries, int n_entries, int **order,
                      int **from) {
    if (!this->n_tasks) return false;
    int *o = tt_calloc((size_t)n_entries + 1, sizeof *o), *f = tt_calloc((size_t)n_entries + 1, sizeof *f);
    bool *taken = tt_calloc((size_t)n_entries + 1, sizeof *taken);
    int n = 0;
    for (int i = 0; i < this->n_tasks; i++) {
        int at = KeyIndex_findPair(index, entries, this->tasks[i].key, this->tasks[i].template_name);
        if (at < 0 || taken[at]) continue;
        taken[at] = true;
        o[n] = at;
        f[n++] = i;
    }
    for (int t = 0; t < n_entries; t++)
        if (!taken[t]) {
            o[n] = t;
            f[n++] = -1;
        }
    free(taken);
    *order = o;
    *from = f;
    return true;
}

void LogSession_addTask(LogSession *this, const char *key, const char *tmpl, double weight, const char *network) {
    LogSessionTask *n = realloc(this->tasks, (size_t)(this->n_tasks + 1) * sizeof *n);
    if (!n) abort();
    this->tasks = n;
    LogSessionTask *t = &this->tasks[this->n_tasks++];
    memset(t, 0, sizeof *t);
    snprintf(t->key, sizeof t->key, "%s", key ? key : "");
    snprintf(t->template_name, sizeof t->template_name, "%s", tmpl ? tmpl : "");
    snprintf(t->network, sizeof t->network, "%s", network ? network : "");
    t->weight = weight;
}

void LogEntry_init(LogEntry *this) {
    memset(this, 0, sizeof *this);
    Record_init(&this->rec);
    LogSession_init(&this->session);
}

void LogEntry_done(LogEntry *this) {
    Record_done(&this->rec);
    LogSession_done(&this->session);
}

/* ---- encoding ---------------------------------------------------------------- */

static void put_str(msgpack_packer *pk, const char *key, const char *s) {
    msgpack_pack_str_with_body(pk, key, strlen(key));
    msgpack_pack_str_with_body(pk, s, strlen(s));
}

static void put_key(msgpack_packer *pk, const char *key) { msgpack_pack_str_with_body(pk, key, strlen(key)); }

static void release(msgpack_sbuffer *sb, char **bytes, size_t *len) {
    *len = sb->size;
    *bytes = msgpack_sbuffer_release(sb);
    msgpack_sbuffer_destroy(sb);
}

Status LogSession_encode(const LogSession *this, char **bytes, size_t *len, char *err) {
    if (this->n_tasks < 0 || this->n_tasks > LOG_MAX_SESSION_TASKS)
        return tt_fail(err, "a session of %d tasks (at most %d)", this->n_tasks, LOG_MAX_SESSION_TASKS);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    put_str(&pk, "kind", "session"); /* first: see Record_isPrefix */
    put_key(&pk, "ts");
    msgpack_pack_double(&pk, this->timestamp);
    put_str(&pk, "network", this->network);
    put_key(&pk, "tasks");
    msgpack_pack_array(&pk, (size_t)this->n_tasks);
    for (int i = 0; i < this->n_tasks; i++) {
        const LogSessionTask *t = &this->tasks[i];
        msgpack_pack_map(&pk, 4);
        put_str(&pk, "task", t->key);
        put_str(&pk, "tmpl", t->template_name);
        put_key(&pk, "weight");
        msgpack_pack_double(&pk, t->weight);
        put_str(&pk, "net", t->network);
    }
    release(&sb, bytes, len);
    return TT_OK;
}

Status LogSteer_encode(const LogSteer *this, char **bytes, size_t *len, char *err) {
    (void)err;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 7);
    put_str(&pk, "kind", "steer");
    put_key(&pk, "ts");
    msgpack_pack_double(&pk, this->timestamp);
    put_str(&pk, "task", this->key);
    put_str(&pk, "tmpl", this->template_name);
    put_key(&pk, "paused");
    this->paused ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
    put_key(&pk, "priority");
    msgpack_pack_int64(&pk, this->priority);
    put_key(&pk, "stopped");
    this->stopped ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
    release(&sb, bytes, len);
    return TT_OK;
}

/* ---- decoding ---------------------------------------------------------------- */

static bool is_key(const msgpack_object *k, const char *name) {
    size_t n = strlen(name);
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && memcmp(k->via.str.ptr, name, n) == 0;
}

static Status str_of(const msgpack_object *o, const char *name, char *dst, size_t cap, char *err) {
    if (o->type != MSGPACK_OBJECT_STR) return tt_fail(err, "key \"%s\" is not a string", name);
    if (o->via.str.size >= cap)
        return tt_fail(err, "key \"%s\" is %u bytes long (at most %zu)", name, o->via.str.size, cap - 1);
    if (memchr(o->via.str.ptr, '\0', o->via.str.size)) return tt_fail(err, "key \"%s\" holds a NUL byte", name);
    memcpy(dst, o->via.str.ptr, o->via.str.size);
    dst[o->via.str.size] = '\0';
    return TT_OK;
}

static Status bool_of(const msgpack_object *o, const char *name, bool *out, char *err) {
    if (o->type != MSGPACK_OBJECT_BOOLEAN) return tt_fail(err, "key \"%s\" is not a boolean", name);
    *out = o->via.boolean;
    return TT_OK;
}

Status LogObject_kind(const msgpack_object *obj, LogObjectKind *kind, char *err) {
    *kind = LOG_OBJ_RECORD;
    if (obj->type != MSGPACK_OBJECT_MAP) return TT_OK; /* the record decoder says what is wrong */
    for (uint32_t j = 0; j < obj->via.map.size; j++) {
        const msgpack_object *k = &obj->via.map.ptr[j].key, *v = &obj->via.map.ptr[j].val;
        if (!is_key(k, "kind")) continue;
        char name[32];
        if (str_of(v, "kind", name, sizeof name, err)) return TT_ERR;
        if (strcmp(name, "session") == 0)
            *kind = LOG_OBJ_SESSION;
        else if (strcmp(name, "steer") == 0)
            *kind = LOG_OBJ_STEER;
        else
            return tt_fail(err, "an object of kind \"%s\", unknown to this version", name);
        return TT_OK;
    }
    return TT_OK;
}

static Status session_task(const msgpack_object *o, LogSessionTask *t, char *err) {
    memset(t, 0, sizeof *t);
    t->weight = 1;
    if (o->type != MSGPACK_OBJECT_MAP) return tt_fail(err, "a session task is not a map");
    bool have_key = false;
    for (uint32_t j = 0; j < o->via.map.size; j++) {
        const msgpack_object *k = &o->via.map.ptr[j].key, *v = &o->via.map.ptr[j].val;
        Status st = TT_OK;
        if (is_key(k, "task")) {
            st = str_of(v, "task", t->key, sizeof t->key, err);
            have_key = true;
        } else if (is_key(k, "tmpl")) {
            st = str_of(v, "tmpl", t->template_name, sizeof t->template_name, err);
        } else if (is_key(k, "weight")) {
            st = Msgpack_number(v, "weight", &t->weight, err);
        } else if (is_key(k, "net")) {
            st = str_of(v, "net", t->network, sizeof t->network, err);
        }
        if (st) return TT_ERR;
    }
    if (!have_key) return tt_fail(err, "a session task has no \"task\" key");
    return TT_OK;
}

Status LogSession_fromObject(const msgpack_object *obj, LogSession *out, char *err) {
    LogSession_done(out);
    bool have_tasks = false;
    for (uint32_t j = 0; j < obj->via.map.size; j++) {
        const msgpack_object *k = &obj->via.map.ptr[j].key, *v = &obj->via.map.ptr[j].val;
        if (is_key(k, "ts")) {
            if (Msgpack_number(v, "ts", &out->timestamp, err)) return TT_ERR;
        } else if (is_key(k, "network")) {
            if (str_of(v, "network", out->network, sizeof out->network, err)) return TT_ERR;
        } else if (is_key(k, "tasks")) {
            if (v->type != MSGPACK_OBJECT_ARRAY) return tt_fail(err, "key \"tasks\" is not an array");
            if (v->via.array.size > LOG_MAX_SESSION_TASKS)
                return tt_fail(err, "a session of %u tasks (at most %d)", v->via.array.size, LOG_MAX_SESSION_TASKS);
            free(out->tasks);
            out->n_tasks = 0;
            out->tasks = calloc(v->via.array.size ? v->via.array.size : 1, sizeof *out->tasks);
            if (!out->tasks) abort();
            for (uint32_t i = 0; i < v->via.array.size; i++) {
                if (session_task(&v->via.array.ptr[i], &out->tasks[i], err)) return TT_ERR;
                out->n_tasks++;
            }
            have_tasks = true;
        }
    }
    if (!have_tasks) return tt_fail(err, "a session object without \"tasks\"");
    return TT_OK;
}

Status LogSteer_fromObject(const msgpack_object *obj, LogSteer *out, char *err) {
    memset(out, 0, sizeof *out);
    bool have_key = false;
    for (uint32_t j = 0; j < obj->via.map.size; j++) {
        const msgpack_object *k = &obj->via.map.ptr[j].key, *v = &obj->via.map.ptr[j].val;
        Status st = TT_OK;
        double p = 0;
        if (is_key(k, "ts")) {
            st = Msgpack_number(v, "ts", &out->timestamp, err);
        } else if (is_key(k, "task")) {
            st = str_of(v, "task", out->key, sizeof out->key, err);
            have_key = true;
        } else if (is_key(k, "tmpl")) {
            st = str_of(v, "tmpl", out->template_name, sizeof out->template_name, err);
        } else if (is_key(k, "paused")) {
            st = bool_of(v, "paused", &out->paused, err);
        } else if (is_key(k, "stopped")) {
            st = bool_of(v, "stopped", &out->stopped, err);
        } else if (is_key(k, "priority")) {
            st = Msgpack_number(v, "priority", &p, err);
            if (!st && (p < -3 || p > 3)) st = tt_fail(err, "key \"priority\" is out of range (%g)", p);
            out->priority = (int)p;
        }
        if (st) return TT_ERR;
    }
    if (!have_key) return tt_fail(err, "a steer object without \"task\"");
    return TT_OK;
}
