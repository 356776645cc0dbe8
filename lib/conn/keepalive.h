/* keepalive.h: a connection's liveness (keepalive.c): idle probes the peer's library answers, and the per-operation deadline. */
#ifndef EZ_CONN_KEEPALIVE_H
#define EZ_CONN_KEEPALIVE_H

#include <stdint.h>

#include "conn_types.h"

/* op->aged of an op whose deadline passed: its flushed completion reports
 * -ETIMEDOUT instead of -ECANCELED. */
#define OP_EXPIRED 0xffu

/* Send-queue and CQ room of the keepalive's own ops: a probe, an answer. */
#define CONN_LIVE_WRS 2

/* The peer's handshake capabilities (HS_CAP_KEEPALIVE: it answers probes). */
void conn_live_peer_caps(struct ez_conn *conn, uint16_t caps);
/* CONNECTED: the keepalive and deadline timers start (those the options ask for). */
void conn_live_start(struct ez_conn *conn);
/* Ended: both stop. */
void conn_live_stop(struct ez_conn *conn);
/* The peer probed (rx_check's verdict: answer it or not). */
void conn_live_on_probe(struct ez_conn *conn, int answer);
/* A probe or an answer of ours completed with status. */
void conn_live_sent(struct ez_conn *conn, struct op *op, int status);
/* The rx_view fields that are the keepalive's. */
static inline void conn_live_view(const struct ez_conn *conn, struct rx_view *v)
{
	v->ka = conn->ka.peer;
	v->ka_answer_busy = conn->ka.answer_busy;
}

#endif
