/* rx_check.h: the pure classifier of a received message (immediate x length x the connection's view): what it is, or which rule the peer broke. */
#ifndef EZ_WIRE_RX_CHECK_H
#define EZ_WIRE_RX_CHECK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Every successful receive completion goes through rx_check() before the
 * library acts on it. The function reads nothing but its arguments and
 * writes nothing but *out: the verdict is a code, and the message naming
 * what the peer did is formatted by rx_fault_format() only on a fault.
 * The caller applies an accepted message to its counters with rx_commit().
 */

/* What an accepted message is. */
enum rx_kind {
	RX_DATA,	/* a SEND for the application (takes a receive credit) */
	RX_WRITE_IMM,	/* an RDMA WRITE with immediate (takes a receive credit) */
	RX_CREDIT,	/* credit-only: hands back at least one credit */
	RX_BYE,		/* the peer is closing */
	RX_PATH_DOWN,	/* the peer took path out->path out */
	RX_AUTH_PROOF,	/* the client's shared-secret proof (AUTH_PROOF_LEN bytes) */
	RX_AUTH_OK,	/* the listener's verdict: accepted */
	RX_AUTH_REFUSED, /* the listener's verdict: refused, closing */
	RX_KA_PROBE,	/* a keepalive probe: out->answer says whether to answer it */
	RX_KA_REPLY,	/* the answer to one of our probes */
	RX_RNDV,	/* a large message's rendezvous header (takes a receive credit) */
	RX_RNDV_ACK,	/* the peer fetched one of our large messages */
	RX_PATH_UP,	/* a step of a failed path's rebuild (out->path; bytes: settle.h) */
	RX_EXPORTS,	/* the regions the peer gives with the connection (bytes: exports.h) */
};

/* Which rule the peer broke (RX_OK: none). */
enum rx_fault {
	RX_OK = 0,
	RX_F_NO_IMM,		/* a SEND without immediate data */
	RX_F_UNKNOWN_BITS,	/* immediate bits no easyrdma message uses */
	RX_F_FLAG_NOT_CONTROL,	/* AUTH, PATH_DOWN or BYE without IMM_CREDIT_ONLY */
	RX_F_PATH_BITS,		/* a path index without IMM_PATH_DOWN */
	RX_F_FLAG_MIX,		/* two of AUTH, PATH_DOWN, BYE (but the refusal) */
	RX_F_CONTROL_CREDITS,	/* credits on a goodbye, path or auth message */
	RX_F_CONTROL_PAYLOAD,	/* bytes on a credit-only message (but the proof) */
	RX_F_CREDIT_EMPTY,	/* a credit message that returns no credit */
	RX_F_NO_CREDIT,		/* a message while the peer holds no receive credit */
	RX_F_TOO_LONG,		/* more bytes than max_msg_size */
	RX_F_OVER_RETURN,	/* more credits back than this side could have used */
	RX_F_OVER_HOLD,		/* more credits than any pool can grant */
	RX_F_AUTH_NO_KEY,	/* an auth message on a connection without a key */
	RX_F_AUTH_LATE,		/* an auth message after the exchange */
	RX_F_AUTH_WRONG,	/* in the exchange, not the auth message expected */
	RX_F_AUTH_LEN,		/* a proof of the wrong length */
	RX_F_PATH_NONE,		/* a path-down naming a path the connection lacks */
	RX_F_PATH_AGAIN,	/* a path-down the peer sent for that path before */
	RX_F_PATH_LAST,		/* a path-down naming the last live path */
	RX_F_BYE_AGAIN,		/* more goodbyes than paths */
	RX_F_KA_OFF,		/* a keepalive message from a peer without HS_CAP_KEEPALIVE */
	RX_F_KA_UNASKED,	/* a keepalive answer with no probe of ours unanswered */
	RX_F_KA_FLOOD,		/* probes faster than this side's answers complete */
	RX_F_RNDV_OFF,		/* a rendezvous message from a peer without HS_CAP_RNDV */
	RX_F_RNDV_HDR_LEN,	/* a rendezvous header of the wrong length */
	RX_F_RNDV_ZERO,		/* a rendezvous header offering 0 bytes */
	RX_F_RNDV_TOO_LONG,	/* a rendezvous header above the large max_msg_size */
	RX_F_RNDV_SEQ,		/* a rendezvous header out of turn (its transfer id) */
	RX_F_RNDV_FLAGS,	/* a rendezvous header with flags no easyrdma sets */
	RX_F_RNDV_READ,		/* the offered key and address failed our RDMA READ */
	RX_F_RNDV_ACK_LEN,	/* an acknowledgement of the wrong length */
	RX_F_RNDV_ACK_NONE,	/* an acknowledgement with none of our transfers outstanding */
	RX_F_RNDV_ACK_UNKNOWN,	/* an acknowledgement of a transfer never offered */
	RX_F_RNDV_ACK_AGAIN,	/* a second acknowledgement of a transfer */
	RX_F_PATH_COUNT_LEN,	/* a path-down without its count (exact failover), or one with bytes (without) */
	RX_F_PATH_UP_OFF,	/* a path rebuild without exact failover */
	RX_F_PATH_UP_LEN,	/* a path rebuild message of the wrong length */
	RX_F_EXPORTS_UNASKED,	/* an exports message the peer's handshake did not announce, or a second */
	RX_F_EXPORTS_LEN,	/* an exports message shorter than its header or longer than its most */
	RX_NFAULTS
};

/* Where the shared-secret exchange stands, as the receiver sees it. */
enum rx_auth {
	RX_AUTH_NOKEY,		/* no key: no auth message ever */
	RX_AUTH_DONE,		/* keyed, the proof is settled */
	RX_AUTH_AWAIT_PROOF,	/* keyed listener: only the proof may come */
	RX_AUTH_AWAIT_VERDICT,	/* keyed client: only the verdict may come */
};

/* The completion, reduced to what the wire says. */
struct rx_in {
	uint8_t write_imm;	/* IBV_WC_RECV_RDMA_WITH_IMM: the immediate is the application's */
	uint8_t has_imm;	/* IBV_WC_WITH_IMM */
	uint32_t imm;		/* host order */
	uint32_t byte_len;
};

/* The receiver's running counts, kept per connection; changed by
 * rx_commit() alone (and rx_note_* by the sender's side). */
struct rx_track {
	uint64_t sent;		/* our messages that took one of the peer's receive credits */
	uint64_t returned;	/* credits the peer handed back to us */
	uint64_t return_slack;	/* credits the peer may hand back twice (its path failures) */
	uint64_t granted;	/* credits we ever granted the peer (handshake and returns) */
	uint64_t used;		/* credited messages the peer sent us */
	uint32_t recv_slack;	/* messages the peer may send beyond what we count it holds */
	uint8_t peer_down;	/* paths the peer said it took out (bit per path) */
	uint8_t byes;		/* goodbyes received */
	uint32_t ka_early;	/* probes that came while our answer was outstanding */
	uint64_t rx_msgs;	/* messages accepted: the keepalive's sign of life */
	uint64_t ka_probes;	/* keepalive probes we sent */
	uint64_t ka_answers;	/* answers to them received */
	uint32_t rndv_sent;	/* rendezvous headers we posted (the next transfer id) */
	uint32_t rndv_acked;	/* acknowledgements of ours received */
	uint32_t rndv_recv;	/* rendezvous headers received (the id the next must carry) */
};

/* The connection's view for one message; built by the caller each time. */
struct rx_view {
	const struct rx_track *t;
	uint32_t max_msg;	/* the max_msg_size this side advertised */
	uint32_t recv_granted;	/* receive credits the peer holds now */
	uint32_t recv_max_granted; /* the most it ever held */
	uint32_t send_credits;	/* credits we hold now */
	uint32_t max_send_credits; /* the most a peer can grant (a pool's share's bound) */
	uint8_t npaths;		/* 1..8 */
	uint8_t live;		/* live paths, bit per path */
	uint8_t auth;		/* enum rx_auth */
	uint8_t ka;		/* the peer announced HS_CAP_KEEPALIVE */
	uint8_t ka_answer_busy;	/* our answer to its last probe is not complete yet */
	uint8_t rndv;		/* both sides announced HS_CAP_RNDV */
	uint8_t exact;		/* both sides announced HS_CAP_FAILOVER (several paths) */
	uint32_t rndv_max;	/* the largest message this side takes by rendezvous */
	uint8_t exports_due;	/* the peer announced HS_CAP_EXPORTS_SENT and it has not come */
};

/* Every bit an easyrdma SEND's immediate may have. */
#define RX_IMM_KNOWN 0xff87ffffu

/* A peer's receive window can never exceed what the handshake and the
 * immediate carry (16 bits), which is also the largest share a pool gives. */
#define RX_MAX_CREDITS 0xffffu

/* An honest prober sends at most keepalive_probes (<= 255) probes before
 * an answer or its end; they may all be in our receive queue when our loop
 * was stalled, and get one answer. */
#define RX_KA_MAX_UNANSWERED 255u

struct rx_msg {
	uint8_t kind;		/* enum rx_kind */
	uint8_t path;		/* RX_PATH_DOWN: the path */
	uint8_t slack;		/* a credited message taken from recv_slack */
	uint8_t answer;		/* RX_KA_PROBE: answer it (0: our outstanding answer covers it) */
	uint32_t credits;	/* credits handed back to us */
};

/* Classifies the message. RX_OK with *out filled, or the fault. */
enum rx_fault rx_check(const struct rx_in *in, const struct rx_view *v, struct rx_msg *out);

struct rndv_hdr;

/* A rendezvous header's contents (an RX_RNDV message's bytes): a length
 * within 1..rndv_max, the transfer id expected next, no flags. */
enum rx_fault rx_check_rndv(const struct rndv_hdr *h, const struct rx_view *v);

/* An acknowledgement of transfer id: one we offered (id < rndv_sent) and
 * still outstanding (the sender's table says). */
enum rx_fault rx_check_rndv_ack(const struct rx_view *v, uint32_t id, int outstanding);

/* The message of a rendezvous fault (header h, or ack id in h->id). */
char *rx_rndv_fault_format(enum rx_fault f, const struct rndv_hdr *h, const struct rx_view *v,
			   char *buf, size_t len);

/* The credits of the most a peer may hand back now. */
uint64_t rx_return_room(const struct rx_track *t);

/* Applies an accepted message to the counts. */
void rx_commit(struct rx_track *t, const struct rx_view *v, const struct rx_msg *m);

/* A stream's message, judged without building a view: a SEND whose
 * immediate is 0 (data handing back no credit), of at most max_msg bytes,
 * on a credit the peer holds (recv_granted), while we hold no more than a
 * pool can grant, on a connection past its shared-secret exchange (the
 * caller's test). For it rx_check() gives RX_OK, RX_DATA, no credits, no
 * slack (test_rx_check holds them to it), and rx_commit_plain() counts
 * what rx_commit() would; anything else goes to rx_check(). */
static inline int rx_plain_data(const struct rx_in *in, uint32_t max_msg, uint32_t recv_granted,
				uint32_t send_credits)
{
	return in->imm == 0 && in->has_imm && !in->write_imm && in->byte_len <= max_msg &&
	       recv_granted && send_credits <= RX_MAX_CREDITS;
}

static inline void rx_commit_plain(struct rx_track *t)
{
	t->rx_msgs++;
	t->used++;
}

/* Sender's side: a message that takes a peer credit is posted (or one
 * that was is taken back: its post failed). */
static inline void rx_note_sent(struct rx_track *t)
{
	t->sent++;
}

static inline void rx_note_unsent(struct rx_track *t)
{
	if (t->sent)
		t->sent--;
}

/* We handed the peer n credits (handshake, a message's immediate), or took
 * back n whose message failed: the peer may have them all the same, so it
 * may send that many beyond what we count. */
static inline void rx_note_granted(struct rx_track *t, uint32_t n)
{
	t->granted += n;
}

static inline void rx_note_ungranted(struct rx_track *t, uint32_t n, int maybe_delivered)
{
	t->granted -= n <= t->granted ? n : t->granted;
	if (maybe_delivered)
		t->recv_slack += n;
}

/* Sender's side: a keepalive probe is posted (its answer may come). */
static inline void rx_note_ka_probe(struct rx_track *t)
{
	t->ka_probes++;
}

/* The fault's name, a static string ("no receive credit"). */
const char *rx_fault_name(enum rx_fault f);

/* The message naming what the peer did and the values, e.g. "peer sent
 * 3000 bytes, max_msg_size 1024". Returns buf. For failures only. */
char *rx_fault_format(enum rx_fault f, const struct rx_in *in, const struct rx_view *v,
		      char *buf, size_t len);

#endif
