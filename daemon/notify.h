/*
 * Telling the service manager how csqd is doing (sd_notify): READY and
 * STATUS once it serves, RELOADING around a SIGHUP, STOPPING at a stop, and
 * WATCHDOG pings from the event loop, so that a hung loop gets csqd killed
 * and restarted. Without libsystemd at build time, or without
 * NOTIFY_SOCKET at run time, every call does nothing.
 */
#ifndef CSQD_NOTIFY_H
#define CSQD_NOTIFY_H

struct event_base;

/* Arms the watchdog timer when WatchdogSec= is set (half its interval). */
void notify_init(struct event_base *);
void notify_ready(const char *status);
void notify_reloading(void);
void notify_stopping(void);
void notify_close(void);

#endif
