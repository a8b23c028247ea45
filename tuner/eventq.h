/* tuner/eventq.h: the bounded queue of engine events and its wake-up
 * descriptor (an eventfd that the UI polls). Producers never block: when the
 * queue is full the event is dropped (and its record freed) and counted. */
#ifndef TT_TUNER_EVENTQ_H
#define TT_TUNER_EVENTQ_H

#include <pthread.h>
#include <stdint.h>

#include "tuner/event.h"

typedef struct EventQueue {
    pthread_mutex_t lock;
    EngineEvent *ring;
    int cap, head, count;
    uint64_t dropped;
    int fd; /* eventfd: readable while events are queued */
} EventQueue;

void EventQueue_init(EventQueue *this, int cap);
void EventQueue_done(EventQueue *this); /* frees queued events' records */
/* Takes ownership of ev->record. */
void EventQueue_push(EventQueue *this, EngineEvent *ev);
int EventQueue_drain(EventQueue *this, EngineEvent *out, int max);

#endif
