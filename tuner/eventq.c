/* tuner/eventq.c: see eventq.h. */
#include "tuner/eventq.h"

#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

void EventQueue_init(EventQueue *this, int cap) {
    pthread_mutex_init(&this->lock, NULL);
    this->ring = calloc((size_t)cap, sizeof(EngineEvent));
    if (!this->ring) abort();
    this->cap = cap;
    this->head = this->count = 0;
    this->dropped = 0;
    this->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void EventQueue_done(EventQueue *this) {
    for (int i = 0; i < this->count; i++)
        EngineEvent_done(&this->ring[(this->head + i) % this->cap]);
    free(this->ring);
    this->ring = NULL;
    if (this->fd >= 0) close(this->fd);
    this->fd = -1;
    pthread_mutex_destroy(&this->lock);
}

void EventQueue_push(EventQueue *this, EngineEvent *ev) {
    pthread_mutex_lock(&this->lock);
    if (this->count == this->cap) {
        __atomic_fetch_add(&this->dropped, 1, __ATOMIC_RELAXED); /* read without the lock (Engine_droppedEvents) */
        pthread_mutex_unlock(&this->lock);
        EngineEvent_done(ev);
        return;
    }
    this->ring[(this->head + this->count) % this->cap] = *ev;
    this->count++;
    pthread_mutex_unlock(&this->lock);
    ev->record = NULL;
    uint64_t one = 1;
    if (write(this->fd, &one, sizeof one) < 0) { /* counter saturated: already readable */
    }
}

int EventQueue_drain(EventQueue *this, EngineEvent *out, int max) {
    uint64_t v;
    if (read(this->fd, &v, sizeof v) < 0) { /* nothing pending: fine */
    }
    pthread_mutex_lock(&this->lock);
    int n = this->count < max ? this->count : max;
    for (int i = 0; i < n; i++)
        out[i] = this->ring[(this->head + i) % this->cap];
    this->head = (this->head + n) % this->cap;
    this->count -= n;
    int left = this->count;
    pthread_mutex_unlock(&this->lock);
    if (left > 0) { /* keep the descriptor readable for the rest */
        uint64_t one = 1;
        if (write(this->fd, &one, sizeof one) < 0) {
        }
    }
    return n;
}
