/*
 * sd_notify, when csqd is built with libsystemd (CSQ_HAVE_SYSTEMD). The
 * watchdog pings come from a timer of the event loop itself: a loop stuck
 * in a callback sends none, and systemd restarts csqd after WatchdogSec.
 */
#include "notify.h"

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <event2/event.h>

#ifdef CSQ_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "log.h"

#define NOTIFY_STATUS_MAX 256

static struct event *notify_watchdog_ev;

#ifdef CSQ_HAVE_SYSTEMD
static void
notify_send(const char *state)
{
	int rc;

	/* 0: no NOTIFY_SOCKET, not under systemd; not an error. */
	if ((rc = sd_notify(0, state)) < 0)
		log_debug("sd_notify: error %d", rc);
}

static void
notify_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	notify_send("WATCHDOG=1");
}
#else
static void
notify_send(const char *state)
{
	(void)state;
}
#endif

void
notify_init(struct event_base *base)
{
#ifdef CSQ_HAVE_SYSTEMD
	struct timeval tv;
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return;
	/* Half the interval, as sd_watchdog_enabled(3) advises: one late
	 * turn of the loop does not get csqd killed. */
	usec /= 2;
	tv.tv_sec = (time_t)(usec / 1000000);
	tv.tv_usec = (suseconds_t)(usec % 1000000);
	notify_watchdog_ev =
	    event_new(base, -1, EV_PERSIST, notify_watchdog_cb, NULL);
	event_add(notify_watchdog_ev, &tv);
	notify_send("WATCHDOG=1");
	log_info("watchdog: pinging systemd every %llu ms",
	         (unsigned long long)(usec / 1000));
#else
	(void)base;
#endif
}

void
notify_ready(const char *status)
{
	char msg[NOTIFY_STATUS_MAX + 32];

	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%.*s", NOTIFY_STATUS_MAX,
	         status);
	notify_send(msg);
}

/*
 * With the time of the reload on CLOCK_MONOTONIC: systemd 252 ignores it,
 * but Type=notify-reload (systemd 253 and later) needs it to tell this
 * reload from an earlier one.
 */
void
notify_reloading(void)
{
	char msg[128];
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg),
	         "RELOADING=1\nMONOTONIC_USEC=%llu\n"
	         "STATUS=reloading the configuration",
	         (unsigned long long)ts.tv_sec * 1000000ULL +
	             (unsigned long long)ts.tv_nsec / 1000ULL);
	notify_send(msg);
}

void
notify_stopping(void)
{
	notify_send("STOPPING=1\nSTATUS=stopping");
}

void
notify_close(void)
{
	if (notify_watchdog_ev != NULL) {
		event_free(notify_watchdog_ev);
		notify_watchdog_ev = NULL;
	}
}
