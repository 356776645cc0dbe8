/* rawcm.h: a raw rdma_cm peer for the fault suite: what easyrdma meets on the wire from a program that does not use it. */
#ifndef EZ_RAWCM_H
#define EZ_RAWCM_H

#include <stdint.h>
#include <sys/socket.h>
#include <rdma/rdma_cma.h>

#include "fault.h"

/* A raw rdma_cm endpoint with its own channel, PD, CQ, MR and QP. */
struct raw {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id, *conn_id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[256];	/* [0, 128): send, [128, 256): receive */
	uint8_t pdata[256];	/* private data of the last event kept */
	int pdata_len;
	uint32_t recv_len;
	int status;		/* of a REJECTED event (raw_connect_result) */
	enum rdma_cm_event_type last;
	/* A raw easyrdma peer (raw_ez_connect): sends of up to xlen bytes
	 * from xbuf, depth WRs each way, what the reply granted, what came
	 * back. */
	uint8_t *xbuf;
	struct ibv_mr *xmr;
	uint32_t xlen;
	int depth;
	uint32_t rep_credits, rep_max_msg;
	uint16_t rep_caps;		/* the reply's capabilities */
	uint64_t sent, sends_ok, recvs, credits_in;
	int sends_out;
	enum ibv_wc_status send_err;	/* the first failed send's status (0: none yet) */
	int disconnected;		/* RDMA_CM_EVENT_DISCONNECTED seen */
};

/* The raw channel's next event while the easyrdma loop turns: 0 or -ETIMEDOUT. */
int raw_event(struct fb *b, struct raw *r, struct rdma_cm_event **ev, double secs);
/* Waits for an event of type want (a test failure otherwise), keeping its
 * private data in r->pdata and its id in *id. */
void raw_expect(struct fb *b, struct raw *r, enum rdma_cm_event_type want,
		struct rdma_cm_id **id);
/* A QP on id (RC, 2 WRs each way) with its PD, CQ and MR; one receive of
 * 128 bytes at r->buf + 128 is posted. */
void raw_qp(struct raw *r, struct rdma_cm_id *id);
void raw_free(struct raw *r);
/* A listener on test_addr(), any port; its number in port. */
void raw_listen(struct raw *r, char *port, size_t len);
/* Resolves test_addr():port, makes the QP and sends a REQ with pdata
 * (librdmacm moves the QP and sends the RTU itself). */
void raw_start_connect(struct fb *b, struct raw *r, const char *port, const void *pdata, int len);
/* raw_start_connect() then waits for ESTABLISHED; r->pdata holds the reply. */
void raw_connect(struct fb *b, struct raw *r, const char *port, const void *pdata, int len);
/* raw_start_connect() then the next event: a REJECTED's status (the reason
 * in r->pdata), or -1 for any other event (in r->last). */
int raw_connect_result(struct fb *b, struct raw *r, const char *port, const void *pdata, int len);
/* A SEND with immediate of len bytes (0: none) from r->buf. */
void raw_send(struct raw *r, uint32_t imm, const void *data, uint32_t len);
/* The first receive completion: its immediate value (its bytes are at
 * r->buf + 128, r->recv_len of them). */
uint32_t raw_recv_imm(struct fb *b, struct raw *r, double secs);

/* Connects to an easyrdma listener the way an easyrdma client does, on raw
 * verbs: a REQ advertising credits and max_msg (no key, one path), a QP of
 * depth WRs each way, depth receives posted, a send buffer of len bytes.
 * Returns once ESTABLISHED, with the reply's credits and max_msg in r. */
void raw_ez_connect(struct fb *b, struct raw *r, const char *port, uint16_t credits,
		    uint32_t max_msg, int depth, uint32_t len);
/* One more receive of 128 bytes posted (each raw_ez_connect() receive is
 * used once): ibv_post_recv's result. */
int raw_repost_recv(struct raw *r);
/* One signalled SEND with immediate imm of len bytes (the byte at offset i
 * is (uint8_t)i); ibv_post_send's result. */
int raw_ez_send(struct raw *r, uint32_t imm, uint32_t len);
/* The capabilities raw_ez_connect() announces [HS_CAP_CREDITS: a peer
 * older than keepalive]. */
extern uint16_t raw_ez_caps;
/* With HS_CAP_RNDV in raw_ez_caps: the large maximum's shift announced [0]. */
extern uint8_t raw_ez_rndv_shift;
/* Polls the raw CQ: counts sends done and failed, receives and the credits
 * their immediates carry (each receive is posted again); also notes a
 * DISCONNECTED event and then moves the QP to ERR (rdma_disconnect), as
 * an application would. Returns the completions seen. */
int raw_ez_poll(struct raw *r);
/* The easyrdma handshake as a raw client speaks it: a 16-byte request
 * header (magic, version 1, kind REQ, caps CREDITS, credits, max_msg) with
 * no user bytes, written by hand (the test must not trust the codec). */
int raw_ez_req(uint8_t *p, uint16_t credits, uint32_t max_msg);
/* Connects to an easyrdma listener with raw_ez_req(): ESTABLISHED. */
void raw_ez_dial(struct fb *b, struct raw *r, const char *port);
/* The same, returning raw_connect_result()'s value (a REJECTED's status,
 * its reason in r->pdata; -1 for another event, in r->last). */
int raw_ez_dial_result(struct fb *b, struct raw *r, const char *port);
/* One signalled RDMA READ or WRITE of len bytes between r->buf + off and
 * (raddr, rkey); the status of its completion (the loop turns while it
 * waits, up to secs). */
enum ibv_wc_status raw_rdma(struct fb *b, struct raw *r, enum ibv_wr_opcode opcode, uint32_t off,
			    uint32_t len, uint64_t raddr, uint32_t rkey, double secs);
/* The reason of an easyrdma REJECT kept in r->pdata ("" if none). */
const char *raw_reject_reason(const struct raw *r, char *text, size_t size);
/* A raw dial from test_addr() after failures counted against it: refused
 * (REJECTED, status 28) with "refused: N failures (...) from ADDR; try
 * again in ..."; the whole reason in why. */
void raw_expect_penalized(struct fb *b, const char *port, int failures, char *why, size_t size);
/* An RDMA READ or WRITE of len bytes (<= 128) between r->buf and
 * raddr/rkey: the work completion's status, or -ETIMEDOUT. */
int raw_rdma_try(struct fb *b, struct raw *r, enum ibv_wr_opcode op, uint64_t raddr,
		 uint32_t rkey, uint32_t len, double secs);

/* The bench of the hostile-peer tests (test_hostile_*.c): a server on a
 * shared pool of 128 buffers of 4 KiB accepting up to cap connections with
 * max_msg_size mms, and an honest client that has echoed once; raw peers
 * join it, and the honest client shows the server unharmed. */
struct hbench {
	struct fb b;
	struct srv s;
	struct ez_srqpool *pool;
	struct ep honest;
	uint64_t seq;
};

void hbench_start(struct hbench *t, uint32_t mms, int cap);
/* The same, the listener refusing an address after fail_limit failures
 * (ez_listen_opts.access_fail_limit) for ban_ms. */
void hbench_start_penalized(struct hbench *t, uint32_t mms, int cap, uint32_t fail_limit,
			    uint32_t ban_ms);
/* n messages of the honest client all come back, in order; neither side
 * of it ended. */
void hbench_echo(struct hbench *t, int n);
void hbench_stop(struct hbench *t);
/* The raw peer is told by the disconnect (its QP goes to ERR) within
 * secs while the easyrdma loop turns: a test failure otherwise. */
void raw_ez_wait_disconnect(struct fb *b, struct raw *r, double secs);

/*
 * Requests with nothing behind them: each an rdma_cm id with no QP (the
 * request names a made-up QP number) that never answers the reply, as a
 * flood of half-open handshakes costs its sender. All on one channel,
 * driven by rflood_poll() while the easyrdma loop turns.
 */
#define RFLOOD_MAX 4096

struct rflood {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *ids[RFLOOD_MAX];
	uint8_t replied_to[RFLOOD_MAX];	/* per id: a reply came */
	int n;			/* ids made */
	int sent;		/* requests sent (rdma_connect) */
	int replied;		/* CONNECT_RESPONSE: accepted, left half-open */
	int rejected;		/* REJECTED instead of a reply */
	int ended;		/* REJECTED or DISCONNECTED after a reply (the server gave up) */
	int other;		/* any other end (unreachable, errors) */
	uint8_t pdata[256];	/* the request to send */
	int pdata_len;
	char last_reason[160];	/* the last REJECT's reason (an easyrdma reject's text) */
	int reason_count;	/* REJECTs carrying exactly last_reason */
	char want_reason[160];	/* if set: rejects with another reason go to other_reasons */
	int other_reasons;
	struct sockaddr_storage src, dst;	/* resolved on the first send */
	char src_name[64], dst_name[64], port[8];
};

void rflood_init(struct rflood *f, const void *pdata, int len);
/* Starts one more request from src (NULL: the kernel's choice) to dst:port. */
void rflood_send(struct rflood *f, const char *src, const char *dst, const char *port);
/* Handles the events that are there (never waits). */
void rflood_poll(struct rflood *f);
void rflood_free(struct rflood *f);

#endif
