/* kernels/worker/framing.c: messages on the worker connection (see protocol.h). */
#include "kernels/worker/protocol.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/clock.h"

/* ---- framing ------------------------------------------------------------- */

/* Sends all bytes; MSG_NOSIGNAL so a dead peer is EPIPE, not a signal. */
static Status send_all(int fd, const void *buf, size_t n, char *err) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return tt_fail(err, "worker connection: send failed: %s", strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
    return TT_OK;
}

Status WorkerMsg_write(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen, char *err) {
    if (alen + blen > WORKER_MAX_PAYLOAD) return tt_fail(err, "worker message of %zu bytes is too long", alen + blen);
    WorkerMsgHeader h = {WORKER_MAGIC, type, (uint32_t)(alen + blen)};
    if (send_all(fd, &h, sizeof h, err) != TT_OK) return TT_ERR;
    if (alen && send_all(fd, a, alen, err) != TT_OK) return TT_ERR;
    if (blen && send_all(fd, b, blen, err) != TT_OK) return TT_ERR;
    return TT_OK;
}

/* Reads exactly n bytes before `deadline` (clock_mono seconds; < 0 = wait forever). */
static WorkerReadStatus recv_all(int fd, void *buf, size_t n, double deadline) {
    char *p = buf;
    while (n > 0) {
        if (deadline >= 0) {
            double left = deadline - clock_mono();
            if (left <= 0) return WORKER_READ_TIMEOUT;
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int ms = left > 1e6 ? 1000000000 : (int)ceil(left * 1000.0);
            int pr = poll(&pfd, 1, ms);
            if (pr < 0) {
                if (errno == EINTR) continue;
                return WORKER_READ_ERR;
            }
            if (pr == 0) continue; /* re-checks the deadline */
        }
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return errno == ECONNRESET ? WORKER_READ_EOF : WORKER_READ_ERR;
        }
        if (r == 0) return WORKER_READ_EOF;
        p += r;
        n -= (size_t)r;
    }
    return WORKER_READ_OK;
}

WorkerReadStatus WorkerMsg_readUntil(int fd, WorkerMsgHeader *h, char **payload, double deadline, char *err) {
    *payload = NULL;
    WorkerReadStatus rc = recv_all(fd, h, sizeof *h, deadline);
    if (rc != WORKER_READ_OK) {
        if (rc == WORKER_READ_EOF)
            tt_fail(err, "connection closed");
        else if (rc == WORKER_READ_ERR)
            tt_fail(err, "worker connection: receive failed: %s", strerror(errno));
        return rc;
    }
    if (h->magic != WORKER_MAGIC || h->len > WORKER_MAX_PAYLOAD) {
        tt_fail(err, "worker protocol error: bad header (magic %08x, length %u)", h->magic, h->len);
        return WORKER_READ_ERR;
    }
    char *p = malloc((size_t)h->len + 1);
    if (!p) {
        tt_fail(err, "out of memory for a worker message of %u bytes", h->len);
        return WORKER_READ_ERR;
    }
    rc = recv_all(fd, p, h->len, deadline);
    if (rc != WORKER_READ_OK) {
        free(p);
        if (rc == WORKER_READ_EOF)
            tt_fail(err, "connection closed");
        else if (rc == WORKER_READ_ERR)
            tt_fail(err, "worker connection: receive failed: %s", strerror(errno));
        return rc;
    }
    p[h->len] = '\0';
    *payload = p;
    return WORKER_READ_OK;
}

Status WorkerMsg_read(int fd, WorkerMsgHeader *h, char **payload, char *err) {
    return WorkerMsg_readUntil(fd, h, payload, -1, err) == WORKER_READ_OK ? TT_OK : TT_ERR;
}
