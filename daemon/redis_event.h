#ifndef CSQD_REDIS_EVENT_H
#define CSQD_REDIS_EVENT_H

#include <event2/event.h>
#include <hiredis/async.h>

/* Attaches ac to evb (redis_event.c); REDIS_ERR if it has an event loop. */
int redis_event_attach(redisAsyncContext *, struct event_base *);
/* Writes now what waits for the end of the loop turn (redis_event.c). */
void redis_event_write_now(redisAsyncContext *);

#endif
