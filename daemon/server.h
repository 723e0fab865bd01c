/*
 * The server: the event loop and everything hanging off it (listeners,
 * clients, the engine, pub/sub, the deadline timer, signals).
 */
#ifndef CSQD_SERVER_H
#define CSQD_SERVER_H

#include <stdint.h>

#include "client.h"
#include "config.h"
#include "engine.h"

struct listener;
struct http;
struct metrics;
struct tls;

struct server_stats {
	uint64_t connections_total;
	uint64_t rejected_total; /* over max_clients */
	uint64_t commands_total;
	uint64_t errors_total;
	/* closed for their output: a limit of one client, or all clients'
	 * (max_output_memory) */
	uint64_t output_closed_total;
	/* closed for all clients' input over max_input_memory */
	uint64_t input_closed_total;
};

struct server {
	struct event_base *base;
	struct config cfg;
	const char *config_path; /* NULL: built-in defaults */
	struct csq_engine *engine;
	struct journal *journal;     /* memory engine with memory.journal */
	struct event_record *record; /* record.path: the record of the day */
	struct client **held; /* output waiting for the journal's fsync, or
	                         the record's write */
	size_t nheld, capheld;
	struct pubsub *pubsub;
	struct listener *listeners;
	struct client_list clients;
	/* Clients with pushed messages not yet written (client.c). */
	struct client_list pushed;
	uint64_t nclients;
	uint64_t input_total; /* input all clients hold (max_input_memory) */
	uint64_t next_client_id;
	struct event *deadline_ev;
	uint64_t deadline_armed; /* UINT64_MAX: not armed */
	struct event *sig_term, *sig_int, *sig_hup, *stop_ev;
	struct event *trim_ev;  /* gives the heap back after big clients */
	struct event *weigh_ev; /* all clients' output, max_output_memory */
	int stopping;
	uint64_t started_ms;
	struct server_stats stats;
	struct metrics *metrics; /* what /metrics shows beside the engine's */
	struct http *http;       /* NULL when http.listen is "" */
	struct tls *tls;         /* NULL without tls.listen and http.tls */
	/* NULL without webhooks (webhook.h). */
	struct webhooks *webhooks;
	/* The address of the client whose command runs now, for the log
	 * lines of the events it causes (command.c); NULL outside one. */
	const char *log_peer;
};

/* Runs csqd until SIGTERM/SIGINT; returns the exit status. */
int server_run(const struct config *, const char *config_path);
/* Wall clock in Unix milliseconds, never going backwards. */
uint64_t server_now_ms(void);
/* Arms the timer for the engine's earliest deadline if it moved. */
void server_arm_deadline(struct server *);
/*
 * Output of c that tells of journal records not yet synced (fsync =
 * "always"), or of events not yet in the record of the day, stays in its
 * buffer until the group commit and the record's write; no-op otherwise.
 */
void server_hold_output(struct server *, struct client *);
/* A client went away (for a stop waiting on the last one). */
void server_client_gone(struct server *);

#endif
