/* test_qpfsm.c: the QP state machine without a device: cases generated from the transition table, names, sport math, ladder plans. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "easyrdma.h"
#include "qpfsm/qpfsm.h"

static long ncases;  /* validator cases run, printed at the end */
static long nsports; /* source ports round-tripped */

/* An IB-like device: one port, no GRH needed, every optional feature on, so
 * that every row of the table can be accepted. */
static void ib_limits(struct qpfsm_limits *l)
{
	memset(l, 0, sizeof(*l));
	l->phys_port_cnt = 1;
	l->device_cap_flags = IBV_DEVICE_RESIZE_MAX_WR | IBV_DEVICE_AUTO_PATH_MIG;
	l->max_qp_rd_atom = 16;
	l->max_qp_init_rd_atom = 16;
	l->rate_limit_min = 1000;
	l->rate_limit_max = 100000;
	l->pacing_qpts = 1u << IBV_QPT_RAW_PACKET;
	l->port[1].present = 1;
	l->port[1].link_layer = IBV_LINK_LAYER_INFINIBAND;
	l->port[1].active_mtu = IBV_MTU_1024;
	l->port[1].max_mtu = IBV_MTU_4096;
	l->port[1].pkey_tbl_len = 16;
	l->port[1].gid_tbl_len = 16;
}

/* rxe-like: Ethernet, no APM, no resize, no pacing. */
static void eth_limits(struct qpfsm_limits *l)
{
	ib_limits(l);
	l->device_cap_flags = 0;
	l->rate_limit_min = l->rate_limit_max = 0;
	l->pacing_qpts = 0;
	l->port[1].link_layer = IBV_LINK_LAYER_ETHERNET;
	l->port[1].pkey_tbl_len = 1;
}

/* A value every bit accepts on ib_limits(). */
static void valid_attr(struct ibv_qp_attr *a, enum ibv_qp_state from, enum ibv_qp_state to)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = to;
	a->cur_qp_state = from;
	a->en_sqd_async_notify = 1;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	a->pkey_index = 0;
	a->port_num = 1;
	a->qkey = 0x11111111;
	a->ah_attr.port_num = 1;
	a->ah_attr.dlid = 3;
	a->path_mtu = IBV_MTU_1024;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->rq_psn = 0xffffff;
	a->max_rd_atomic = 16;
	a->alt_ah_attr.port_num = 1;
	a->alt_port_num = 1;
	a->alt_timeout = 31;
	a->min_rnr_timer = 31;
	a->sq_psn = 0;
	a->max_dest_rd_atomic = 16;
	a->path_mig_state = IBV_MIG_REARM;
	a->dest_qp_num = 0xffffff;
	a->rate_limit = 5000;
}

static int check(enum ibv_qp_type t, enum ibv_qp_state from, const struct qpfsm_limits *l,
		 const struct ibv_qp_attr *a, int mask, char *msg, size_t len)
{
	struct qpfsm_qp_view v = { .type = t, .state = from, .port = 1 };

	ncases++;
	return qpfsm_validate(&v, l, a, mask, msg, len);
}

static void prefix(char *buf, size_t len, enum ibv_qp_type t, enum ibv_qp_state f,
		   enum ibv_qp_state to)
{
	snprintf(buf, len, "%s %s->%s: ", ez_qp_type_str(t), ez_qp_state_str(f), ez_qp_state_str(to));
}

static void expect(enum ibv_qp_type t, enum ibv_qp_state f, enum ibv_qp_state to,
		   const struct qpfsm_limits *l, const struct ibv_qp_attr *a, int mask,
		   const char *what)
{
	char msg[256], want[256];
	int err = check(t, f, l, a, mask, msg, sizeof(msg));

	if (!what) {
		ck_assert_msg(err == 0, "%s %s->%s mask 0x%x refused: %s", ez_qp_type_str(t),
			      ez_qp_state_str(f), ez_qp_state_str(to), mask, msg);
		return;
	}
	prefix(want, sizeof(want), t, f, to);
	strncat(want, what, sizeof(want) - strlen(want) - 1);
	ck_assert_msg(err == -EINVAL, "%s: accepted (mask 0x%x)", want, mask);
	ck_assert_str_eq(msg, want);
}

/* For each (type, from) a row covers: call fn. */
typedef void (*row_fn)(const struct qpfsm_row *r, enum ibv_qp_type t, enum ibv_qp_state f);

static void each_row(row_fn fn)
{
	for (size_t i = 0; i < qpfsm_table_len; i++)
		for (size_t ti = 0; ti < qpfsm_ntypes; ti++)
			for (int f = 0; f < QPFSM_NSTATES; f++)
				if ((qpfsm_table[i].types & (1u << qpfsm_types[ti])) &&
				    (qpfsm_table[i].from & (1u << f)))
					fn(&qpfsm_table[i], qpfsm_types[ti], (enum ibv_qp_state)f);
}

/* ---- the table itself ---- */

START_TEST(table_rows_are_unique_cited_and_disjoint)
{
	for (size_t i = 0; i < qpfsm_table_len; i++) {
		const struct qpfsm_row *r = &qpfsm_table[i];

		ck_assert_msg(r->src && strlen(r->src) > 10, "row %zu has no source", i);
		ck_assert_msg(!(r->req & r->opt), "row %zu: a bit both required and optional", i);
		ck_assert_msg(!((r->req | r->opt) & IBV_QP_STATE), "row %zu lists IBV_QP_STATE", i);
		ck_assert_msg(!((r->req | r->opt) & ~QPFSM_KNOWN_MASK), "row %zu: unknown bits", i);
		for (size_t j = i + 1; j < qpfsm_table_len; j++) {
			const struct qpfsm_row *s = &qpfsm_table[j];

			ck_assert_msg(!(r->to == s->to && (r->types & s->types) && (r->from & s->from)),
				      "rows %zu and %zu overlap", i, j);
		}
	}
}
END_TEST

/* The required sets of ibv_modify_qp(3), transcribed independently of the table. */
START_TEST(table_matches_the_man_page)
{
	static const struct {
		enum ibv_qp_type t;
		int init, rtr, rts;
	} man[] = {
		{ IBV_QPT_UD, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0, IBV_QP_SQ_PSN },
		{ IBV_QPT_UC, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		  IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, IBV_QP_SQ_PSN },
		{ IBV_QPT_RC, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		  IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
		  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_TIMEOUT },
		{ IBV_QPT_RAW_PACKET, IBV_QP_PORT, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(man) / sizeof(man[0]); i++) {
		const struct qpfsm_row *a = qpfsm_lookup(man[i].t, IBV_QPS_RESET, IBV_QPS_INIT);
		const struct qpfsm_row *b = qpfsm_lookup(man[i].t, IBV_QPS_INIT, IBV_QPS_RTR);
		const struct qpfsm_row *c = qpfsm_lookup(man[i].t, IBV_QPS_RTR, IBV_QPS_RTS);

		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		ck_assert_ptr_nonnull(c);
		ck_assert_int_eq(a->req, man[i].init);
		ck_assert_int_eq(b->req, man[i].rtr);
		ck_assert_int_eq(c->req, man[i].rts);
	}
}
END_TEST

/* Specific facts of the kernel table the issue calls out. */
START_TEST(table_kernel_details)
{
	ck_assert_int_eq(qpfsm_lookup(IBV_QPT_RAW_PACKET, IBV_QPS_RTR, IBV_QPS_RTS)->opt, IBV_QP_RATE_LIMIT);
	ck_assert_int_eq(qpfsm_lookup(IBV_QPT_RAW_PACKET, IBV_QPS_RTS, IBV_QPS_RTS)->opt, IBV_QP_RATE_LIMIT);
	ck_assert(qpfsm_lookup(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT)->req & IBV_QP_QKEY);
	ck_assert(qpfsm_lookup(IBV_QPT_XRC_SEND, IBV_QPS_INIT, IBV_QPS_RTR)->req & IBV_QP_AV);
	ck_assert(qpfsm_lookup(IBV_QPT_XRC_RECV, IBV_QPS_INIT, IBV_QPS_RTR)->req & IBV_QP_MIN_RNR_TIMER);
	ck_assert_int_eq(qpfsm_lookup(IBV_QPT_XRC_RECV, IBV_QPS_RTR, IBV_QPS_RTS)->req,
			 IBV_QP_TIMEOUT | IBV_QP_SQ_PSN);
	ck_assert_ptr_nonnull(qpfsm_lookup(IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS));
	ck_assert_ptr_nonnull(qpfsm_lookup(IBV_QPT_UC, IBV_QPS_SQE, IBV_QPS_RTS));
	ck_assert_ptr_null(qpfsm_lookup(IBV_QPT_RC, IBV_QPS_SQE, IBV_QPS_RTS));
	ck_assert_ptr_null(qpfsm_lookup(IBV_QPT_RAW_PACKET, IBV_QPS_SQE, IBV_QPS_RTS));
	ck_assert_ptr_null(qpfsm_lookup(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_ERR));
	ck_assert_ptr_nonnull(qpfsm_lookup(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_RESET));
	ck_assert_ptr_nonnull(qpfsm_lookup(IBV_QPT_RC, IBV_QPS_ERR, IBV_QPS_ERR));
	ck_assert_ptr_null(qpfsm_lookup(IBV_QPT_DRIVER, IBV_QPS_RESET, IBV_QPS_INIT));
}
END_TEST

/*
 * SQD->SQD per type, pinned to Linux's qp_state_table[IB_QPS_SQD][IB_QPS_SQD]
 * .opt_param (drivers/infiniband/core/verbs.c; torvalds/linux f4d8f354 and
 * gregkh/linux 253c2ed7 agree). UC may load a new primary path (IBV_QP_AV)
 * there, as RC may; unlike RC it takes no port, timeout or retry counts.
 */
START_TEST(sqd_to_sqd_follows_the_kernel)
{
	const int path = IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
			 IBV_QP_PATH_MIG_STATE;
	struct qpfsm_limits l;
	struct ibv_qp_attr a;

	ck_assert_int_eq(qpfsm_lookup(IBV_QPT_UD, IBV_QPS_SQD, IBV_QPS_SQD)->opt,
			 IBV_QP_PKEY_INDEX | IBV_QP_QKEY);
	/* UC: the kernel's table less IBV_QP_AV, which uverbs turns into AV | PORT. */
	ck_assert_int_eq(qpfsm_lookup(IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_SQD)->opt, path & ~IBV_QP_AV);
	ck_assert_int_eq(qpfsm_lookup(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD)->opt,
			 path | IBV_QP_PORT | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	ck_assert_int_eq(qpfsm_lookup(IBV_QPT_XRC_SEND, IBV_QPS_SQD, IBV_QPS_SQD)->opt,
			 path | IBV_QP_PORT | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			 IBV_QP_MAX_QP_RD_ATOMIC);
	ck_assert_int_eq(qpfsm_lookup(IBV_QPT_XRC_RECV, IBV_QPS_SQD, IBV_QPS_SQD)->opt,
			 path | IBV_QP_PORT | IBV_QP_TIMEOUT | IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_MIN_RNR_TIMER);
	ck_assert_int_eq(qpfsm_lookup(IBV_QPT_RAW_PACKET, IBV_QPS_SQD, IBV_QPS_SQD)->opt, 0);
	for (size_t ti = 0; ti < qpfsm_ntypes; ti++)
		ck_assert_int_eq(qpfsm_lookup(qpfsm_types[ti], IBV_QPS_SQD, IBV_QPS_SQD)->req, 0);

	ib_limits(&l);
	valid_attr(&a, IBV_QPS_SQD, IBV_QPS_SQD);
	/* The defect: UC SQD->SQD with an AV was accepted, and the kernel refuses it. */
	expect(IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_SQD, &l, &a, IBV_QP_STATE | IBV_QP_AV,
	       "IBV_QP_AV not allowed");
	expect(IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_SQD, &l, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, NULL);
	expect(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD, &l, &a, IBV_QP_STATE | IBV_QP_AV, NULL);
	expect(IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_SQD, &l, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PORT,
	       "IBV_QP_PORT not allowed");
	expect(IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_SQD, &l, &a, IBV_QP_STATE | IBV_QP_TIMEOUT,
	       "IBV_QP_TIMEOUT not allowed");
	expect(IBV_QPT_UD, IBV_QPS_SQD, IBV_QPS_SQD, &l, &a, IBV_QP_STATE | IBV_QP_AV,
	       "IBV_QP_AV not allowed");
}
END_TEST

/* ---- generated from the table ---- */

static void gen_accept(const struct qpfsm_row *r, enum ibv_qp_type t, enum ibv_qp_state f)
{
	struct qpfsm_limits l;
	struct ibv_qp_attr a;

	ib_limits(&l);
	valid_attr(&a, f, r->to);
	expect(t, f, r->to, &l, &a, IBV_QP_STATE | r->req, NULL);
	expect(t, f, r->to, &l, &a, IBV_QP_STATE | r->req | r->opt, NULL);
	/* Each optional bit alone on top of the required ones. */
	for (int i = 0; i < 31; i++)
		if (r->opt & (1 << i))
			expect(t, f, r->to, &l, &a, IBV_QP_STATE | r->req | (1 << i), NULL);
}

static void gen_missing(const struct qpfsm_row *r, enum ibv_qp_type t, enum ibv_qp_state f)
{
	struct qpfsm_limits l;
	struct ibv_qp_attr a;
	char what[64];

	ib_limits(&l);
	valid_attr(&a, f, r->to);
	for (int i = 0; i < 31; i++) {
		int bit = 1 << i;

		if (!(r->req & bit))
			continue;
		snprintf(what, sizeof(what), "%s required", ez_qp_attr_mask_str(bit));
		expect(t, f, r->to, &l, &a, (IBV_QP_STATE | r->req | r->opt) & ~bit, what);
	}
}

static void gen_forbidden(const struct qpfsm_row *r, enum ibv_qp_type t, enum ibv_qp_state f)
{
	struct qpfsm_limits l;
	struct ibv_qp_attr a;
	char what[96];

	ib_limits(&l);
	valid_attr(&a, f, r->to);
	for (int i = 1; i < 31; i++) {
		int bit = 1 << i;

		if (!(QPFSM_KNOWN_MASK & bit) || ((r->req | r->opt) & bit))
			continue;
		snprintf(what, sizeof(what), "%s not allowed", ez_qp_attr_mask_str(bit));
		expect(t, f, r->to, &l, &a, IBV_QP_STATE | r->req | bit, what);
	}
	/* Bits 21..24 and above 25 are no attribute at all. */
	snprintf(what, sizeof(what), "attr_mask bits 0x%x unknown", 1u << 22);
	expect(t, f, r->to, &l, &a, IBV_QP_STATE | r->req | (1 << 22), what);
}

/* One out-of-range value per attribute, and the message it must give. */
struct bad {
	int bit;
	void (*set)(struct ibv_qp_attr *a);
	const char *what;
};

#define BAD(b, field_stmt, msg) \
	static void set_##b(struct ibv_qp_attr *a) { field_stmt; }
BAD(timeout, a->timeout = 32, "")
BAD(retry, a->retry_cnt = 8, "")
BAD(rnr_retry, a->rnr_retry = 8, "")
BAD(rnr_timer, a->min_rnr_timer = 32, "")
BAD(rq_psn, a->rq_psn = 0x1000000, "")
BAD(sq_psn, a->sq_psn = 0x1000000, "")
BAD(dqpn, a->dest_qp_num = 0x1000000, "")
BAD(pkey, a->pkey_index = 16, "")
BAD(port, a->port_num = 2, "")
BAD(mtu, a->path_mtu = IBV_MTU_4096, "")
BAD(mtu_enum, a->path_mtu = (enum ibv_mtu)9, "")
BAD(init_rd, a->max_rd_atomic = 17, "")
BAD(dest_rd, a->max_dest_rd_atomic = 17, "")
BAD(access, a->qp_access_flags = 0x100, "")
BAD(av_port, a->ah_attr.port_num = 0, "")
BAD(av_sl, a->ah_attr.sl = 16, "")
BAD(av_sgid, (a->ah_attr.is_global = 1, a->ah_attr.grh.sgid_index = 16), "")
BAD(av_flow, (a->ah_attr.is_global = 1, a->ah_attr.grh.flow_label = 0x100000), "")
BAD(alt_timeout, a->alt_timeout = 32, "")
BAD(alt_port, a->alt_port_num = 3, "")
BAD(alt_pkey, a->alt_pkey_index = 99, "")
BAD(mig, a->path_mig_state = (enum ibv_mig_state)3, "")
BAD(rate, a->rate_limit = 999, "")
BAD(cur, a->cur_qp_state = IBV_QPS_ERR, "")

static const struct bad bads[] = {
	{ IBV_QP_TIMEOUT, set_timeout, "timeout 32 out of range (0..31)" },
	{ IBV_QP_RETRY_CNT, set_retry, "retry_cnt 8 out of range (0..7)" },
	{ IBV_QP_RNR_RETRY, set_rnr_retry, "rnr_retry 8 out of range (0..7)" },
	{ IBV_QP_MIN_RNR_TIMER, set_rnr_timer, "min_rnr_timer 32 out of range (0..31)" },
	{ IBV_QP_RQ_PSN, set_rq_psn, "rq_psn 0x1000000 out of range (0..0xffffff)" },
	{ IBV_QP_SQ_PSN, set_sq_psn, "sq_psn 0x1000000 out of range (0..0xffffff)" },
	{ IBV_QP_DEST_QPN, set_dqpn, "dest_qp_num 0x1000000 out of range (0..0xffffff)" },
	{ IBV_QP_PKEY_INDEX, set_pkey, "pkey_index 16 out of range (0..15)" },
	{ IBV_QP_PORT, set_port, "port_num 2 out of range (1..1)" },
	{ IBV_QP_PATH_MTU, set_mtu, "path_mtu 4096 above the port's active MTU 1024" },
	{ IBV_QP_PATH_MTU, set_mtu_enum, "path_mtu 9 unknown (IBV_MTU_256..IBV_MTU_4096)" },
	{ IBV_QP_MAX_QP_RD_ATOMIC, set_init_rd, "max_rd_atomic 17 above the device's max_qp_init_rd_atom 16" },
	{ IBV_QP_MAX_DEST_RD_ATOMIC, set_dest_rd, "max_dest_rd_atomic 17 above the device's max_qp_rd_atom 16" },
	{ IBV_QP_ACCESS_FLAGS, set_access, "qp_access_flags 0x100 has bits other than LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC" },
	{ IBV_QP_AV, set_av_port, "ah_attr.port_num 0 out of range (1..1)" },
	{ IBV_QP_AV, set_av_sl, "ah_attr.sl 16 out of range (0..15)" },
	{ IBV_QP_AV, set_av_sgid, "ah_attr.grh.sgid_index 16 out of range (0..15)" },
	{ IBV_QP_AV, set_av_flow, "ah_attr.grh.flow_label 0x100000 out of range (0..0xfffff)" },
	{ IBV_QP_ALT_PATH, set_alt_timeout, "alt_timeout 32 out of range (0..31)" },
	{ IBV_QP_ALT_PATH, set_alt_port, "alt_port_num 3 out of range (1..1)" },
	{ IBV_QP_ALT_PATH, set_alt_pkey, "alt_pkey_index 99 out of range (0..15)" },
	{ IBV_QP_PATH_MIG_STATE, set_mig, "path_mig_state 3 unknown (MIGRATED, REARM, ARMED)" },
	{ IBV_QP_RATE_LIMIT, set_rate, "rate_limit 999 out of range (1000..100000 kbps)" },
	{ IBV_QP_CUR_STATE, set_cur, NULL /* built per row */ },
};

static void gen_range(const struct qpfsm_row *r, enum ibv_qp_type t, enum ibv_qp_state f)
{
	struct qpfsm_limits l;
	struct ibv_qp_attr a;
	char what[128];

	ib_limits(&l);
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		if (!((r->req | r->opt) & bads[i].bit))
			continue;
		valid_attr(&a, f, r->to);
		bads[i].set(&a);
		if (bads[i].what)
			snprintf(what, sizeof(what), "%s", bads[i].what);
		else
			snprintf(what, sizeof(what), "cur_qp_state ERR does not match the QP's state %s",
				 ez_qp_state_str(f));
		expect(t, f, r->to, &l, &a, IBV_QP_STATE | r->req | bads[i].bit, what);
	}
}

START_TEST(every_row_accepted)
{
	each_row(gen_accept);
}
END_TEST

START_TEST(every_required_attribute_removed_is_refused)
{
	each_row(gen_missing);
}
END_TEST

START_TEST(every_forbidden_attribute_added_is_refused)
{
	each_row(gen_forbidden);
}
END_TEST

START_TEST(every_out_of_range_value_is_refused)
{
	each_row(gen_range);
}
END_TEST

START_TEST(every_illegal_pair_is_refused)
{
	struct qpfsm_limits l;
	struct ibv_qp_attr a;
	long illegal = 0;

	ib_limits(&l);
	for (size_t ti = 0; ti < qpfsm_ntypes; ti++) {
		enum ibv_qp_type t = qpfsm_types[ti];

		for (int f = 0; f < QPFSM_NSTATES; f++)
			for (int to = 0; to < QPFSM_NSTATES; to++) {
				if (qpfsm_lookup(t, f, to))
					continue;
				illegal++;
				valid_attr(&a, f, to);
				/* Whatever the mask: the pair itself is refused. */
				expect(t, f, to, &l, &a, IBV_QP_STATE, "transition not allowed");
				expect(t, f, to, &l, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_AV,
				       "transition not allowed");
			}
	}
	/* Per type 49 pairs; RC has 7 (RESET) + 6 (ERR) + 8 others = 21 legal. */
	ck_assert_int_gt(illegal, 150);
}
END_TEST

/* ---- hand-picked messages from the issue, and the device gates ---- */

START_TEST(messages_read_as_documented)
{
	struct qpfsm_limits l;
	struct ibv_qp_attr a;
	int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

	ib_limits(&l);
	valid_attr(&a, IBV_QPS_INIT, IBV_QPS_RTR);
	expect(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, &l, &a, rtr & ~IBV_QP_AV, "IBV_QP_AV required");
	a.path_mtu = IBV_MTU_4096;
	expect(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, &l, &a, rtr,
	       "path_mtu 4096 above the port's active MTU 1024");
	valid_attr(&a, IBV_QPS_RTR, IBV_QPS_RTS);
	expect(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, &l, &a,
	       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_ACCESS_FLAGS, "IBV_QP_ACCESS_FLAGS not allowed");
	a.timeout = 32;
	expect(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, &l, &a, rts, "timeout 32 out of range (0..31)");
	/* Without IBV_QP_STATE the call is a cur->cur modify. */
	valid_attr(&a, IBV_QPS_RTS, IBV_QPS_RTS);
	expect(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, &l, &a, IBV_QP_MIN_RNR_TIMER, NULL);
	expect(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTR, &l, &a, IBV_QP_MIN_RNR_TIMER,
	       "transition not allowed");
	a.qp_state = (enum ibv_qp_state)9;
	{
		char msg[256];

		ck_assert_int_eq(check(IBV_QPT_RC, IBV_QPS_RTS, &l, &a, IBV_QP_STATE, msg, sizeof(msg)), -EINVAL);
		ck_assert_str_eq(msg, "RC RTS->?: qp_state 9 out of range (0..6)");
		ck_assert_int_eq(check(IBV_QPT_DRIVER, IBV_QPS_RESET, &l, &a, 0, msg, sizeof(msg)), -EINVAL);
		ck_assert_str_eq(msg, "DRIVER RESET->RESET: QP type 255 not supported");
	}
}
END_TEST

START_TEST(device_and_port_gates)
{
	struct qpfsm_limits l;
	struct ibv_qp_attr a;
	int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	struct qpfsm_qp_view v = { .type = IBV_QPT_RC, .state = IBV_QPS_SQD, .port = 1, .sq_draining = 1 };
	char msg[256];

	eth_limits(&l);
	valid_attr(&a, IBV_QPS_INIT, IBV_QPS_RTR);
	expect(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, &l, &a, rtr,
	       "ah_attr.is_global 0 but port 1 requires a GRH (Ethernet link layer)");
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.sgid_index = 1;
	expect(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, &l, &a, rtr, NULL);
	expect(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, &l, &a, rtr | IBV_QP_ALT_PATH,
	       "IBV_QP_ALT_PATH needs IBV_DEVICE_AUTO_PATH_MIG (the device has no alternate paths)");
	l.device_cap_flags |= IBV_DEVICE_AUTO_PATH_MIG;
	expect(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, &l, &a, rtr | IBV_QP_ALT_PATH,
	       "IBV_QP_ALT_PATH not supported on an Ethernet (RoCE) port");
	/* IB port that asks for a GRH anyway. */
	ib_limits(&l);
	l.port[1].flags = IBV_QPF_GRH_REQUIRED;
	a.ah_attr.is_global = 0;
	expect(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, &l, &a, rtr,
	       "ah_attr.is_global 0 but port 1 requires a GRH (IBV_QPF_GRH_REQUIRED)");
	eth_limits(&l);
	valid_attr(&a, IBV_QPS_RTS, IBV_QPS_RTS);
	expect(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, &l, &a, IBV_QP_STATE | IBV_QP_CAP,
	       "IBV_QP_CAP needs IBV_DEVICE_RESIZE_MAX_WR (the device cannot resize a QP)");
	expect(IBV_QPT_RAW_PACKET, IBV_QPS_RTS, IBV_QPS_RTS, &l, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT,
	       "IBV_QP_RATE_LIMIT needs packet pacing for RAW_PACKET QPs (the device has none)");
	/* The primary path leaves from the QP's own port. */
	l.phys_port_cnt = 2;
	l.port[2] = l.port[1];
	valid_attr(&a, IBV_QPS_INIT, IBV_QPS_RTR);
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 2;
	expect(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, &l, &a, rtr,
	       "ah_attr.port_num 2 differs from the QP's port 1");
	/* SQD->SQD may move both together. */
	valid_attr(&a, IBV_QPS_SQD, IBV_QPS_SQD);
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = a.port_num = 2;
	expect(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD, &l, &a,
	       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PORT, NULL);
	eth_limits(&l);
	valid_attr(&a, IBV_QPS_RTS, IBV_QPS_RTS);
	/* Without limits the pure spec checks still run. */
	a.timeout = 40;
	ck_assert_int_eq(qpfsm_validate(&(struct qpfsm_qp_view){ .type = IBV_QPT_RC, .state = IBV_QPS_SQD },
					NULL, &a, IBV_QP_STATE | IBV_QP_TIMEOUT, msg, sizeof(msg)), -EINVAL);
	ck_assert_str_eq(msg, "RC SQD->RTS: IBV_QP_TIMEOUT not allowed");
	/* Leaving SQD waits for the drain; Error and Reset do not. */
	valid_attr(&a, IBV_QPS_SQD, IBV_QPS_RTS);
	ck_assert_int_eq(qpfsm_validate(&v, &l, &a, IBV_QP_STATE, msg, sizeof(msg)), -EINVAL);
	ck_assert_str_eq(msg, "RC SQD->RTS: the send queue is still draining (wait for IBV_EVENT_SQ_DRAINED)");
	a.qp_state = IBV_QPS_ERR;
	ck_assert_int_eq(qpfsm_validate(&v, &l, &a, IBV_QP_STATE, msg, sizeof(msg)), 0);
	v.sq_draining = 0;
	a.qp_state = IBV_QPS_RTS;
	ck_assert_int_eq(qpfsm_validate(&v, &l, &a, IBV_QP_STATE, msg, sizeof(msg)), 0);
}
END_TEST

/* ---- ladder plans (pure: the attributes each step would send) ---- */

START_TEST(ladder_steps_validate_with_defaults)
{
	static const enum ibv_qp_state path[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET };
	struct qpfsm_limits l;
	struct ibv_qp_attr user, a;
	char msg[256];

	eth_limits(&l);
	memset(&user, 0, sizeof(user));
	user.ah_attr.is_global = 1;
	user.ah_attr.port_num = 1;
	user.dest_qp_num = 0x123;
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		int applied = 0;

		for (int s = 0; s + 1 < 4; s++) {
			struct qpfsm_qp_view v = { .type = types[ti], .state = path[s], .port = 1 };
			int um = types[ti] == IBV_QPT_UD || types[ti] == IBV_QPT_RAW_PACKET ?
				0 : IBV_QP_AV | IBV_QP_DEST_QPN;
			int m = qpfsm_ladder_step(types[ti], 0x77, path[s], path[s + 1], &l, 1, &user,
						  um, applied, &a);

			ck_assert_msg(qpfsm_validate(&v, &l, &a, m, msg, sizeof(msg)) == 0, "%s", msg);
			applied |= m & um;
			if (path[s + 1] == IBV_QPS_RTR && types[ti] == IBV_QPT_RC) {
				ck_assert_uint_eq(a.rq_psn, qpfsm_default_psn(0x123));
				ck_assert_int_eq(a.path_mtu, IBV_MTU_1024);
				ck_assert_int_eq(a.max_dest_rd_atomic, 16);
			}
			if (path[s + 1] == IBV_QPS_RTS && types[ti] != IBV_QPT_RAW_PACKET)
				ck_assert_uint_eq(a.sq_psn, qpfsm_default_psn(0x77));
		}
	}
	/* No address: the step says what is missing. */
	{
		struct qpfsm_qp_view v = { .type = IBV_QPT_RC, .state = IBV_QPS_INIT, .port = 1 };
		int m = qpfsm_ladder_step(IBV_QPT_RC, 1, IBV_QPS_INIT, IBV_QPS_RTR, &l, 1, NULL, 0, 0, &a);

		ck_assert_int_eq(qpfsm_validate(&v, &l, &a, m, msg, sizeof(msg)), -EINVAL);
		ck_assert_str_eq(msg, "RC INIT->RTR: IBV_QP_AV required");
	}
	/* The user's value wins over the default, and is not repeated. */
	user.min_rnr_timer = 3;
	{
		int m = qpfsm_ladder_step(IBV_QPT_RC, 1, IBV_QPS_INIT, IBV_QPS_RTR, &l, 1, &user,
					  IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_MIN_RNR_TIMER, 0, &a);

		ck_assert(m & IBV_QP_MIN_RNR_TIMER);
		ck_assert_int_eq(a.min_rnr_timer, 3);
		m = qpfsm_ladder_step(IBV_QPT_RC, 1, IBV_QPS_RTR, IBV_QPS_RTS, &l, 1, &user,
				      IBV_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER, &a);
		ck_assert(!(m & IBV_QP_MIN_RNR_TIMER));
	}
}
END_TEST

START_TEST(valid_in_state_follows_the_climb)
{
	int v;

	ck_assert_int_eq(qpfsm_valid_in_state(IBV_QPT_RC, IBV_QPS_RESET), IBV_QP_STATE | IBV_QP_CAP);
	v = qpfsm_valid_in_state(IBV_QPT_RC, IBV_QPS_INIT);
	ck_assert(v & IBV_QP_PORT);
	ck_assert(!(v & IBV_QP_AV));
	v = qpfsm_valid_in_state(IBV_QPT_RC, IBV_QPS_RTR);
	ck_assert(v & IBV_QP_AV);
	ck_assert(!(v & IBV_QP_SQ_PSN));
	v = qpfsm_valid_in_state(IBV_QPT_RC, IBV_QPS_RTS);
	ck_assert(v & IBV_QP_SQ_PSN);
	ck_assert(v & IBV_QP_TIMEOUT);
	ck_assert(!(v & IBV_QP_CUR_STATE));
	v = qpfsm_valid_in_state(IBV_QPT_UD, IBV_QPS_RTS);
	ck_assert(v & IBV_QP_QKEY);
	ck_assert(!(v & IBV_QP_AV));
	ck_assert(qpfsm_valid_in_state(IBV_QPT_RC, IBV_QPS_SQD) & IBV_QP_EN_SQD_ASYNC_NOTIFY);
}
END_TEST

/* ---- names ---- */

START_TEST(names)
{
	static const char *const states[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	for (int s = 0; s < 7; s++)
		ck_assert_str_eq(ez_qp_state_str(s), states[s]);
	ck_assert_str_eq(ez_qp_state_str((enum ibv_qp_state)7), "UNKNOWN");
	ck_assert_str_eq(ez_qp_state_str((enum ibv_qp_state)-1), "UNKNOWN");
	ck_assert_str_eq(ez_qp_type_str(IBV_QPT_RC), "RC");
	ck_assert_str_eq(ez_qp_type_str(IBV_QPT_UC), "UC");
	ck_assert_str_eq(ez_qp_type_str(IBV_QPT_UD), "UD");
	ck_assert_str_eq(ez_qp_type_str(IBV_QPT_RAW_PACKET), "RAW_PACKET");
	ck_assert_str_eq(ez_qp_type_str(IBV_QPT_XRC_SEND), "XRC_SEND");
	ck_assert_str_eq(ez_qp_type_str(IBV_QPT_XRC_RECV), "XRC_RECV");
	ck_assert_str_eq(ez_qp_type_str((enum ibv_qp_type)77), "UNKNOWN");
	ck_assert_str_eq(ez_qp_attr_mask_str(IBV_QP_STATE), "IBV_QP_STATE");
	ck_assert_str_eq(ez_qp_attr_mask_str(IBV_QP_AV), "IBV_QP_AV");
	ck_assert_str_eq(ez_qp_attr_mask_str(IBV_QP_DEST_QPN), "IBV_QP_DEST_QPN");
	ck_assert_str_eq(ez_qp_attr_mask_str(IBV_QP_RATE_LIMIT), "IBV_QP_RATE_LIMIT");
	ck_assert_str_eq(ez_qp_attr_mask_str(1 << 22), "UNKNOWN");
	ck_assert_str_eq(ez_qp_attr_mask_str(IBV_QP_AV | IBV_QP_PORT), "UNKNOWN");
	ck_assert_str_eq(ez_qp_attr_mask_str(0), "UNKNOWN");
	/* Every known bit has a distinct IBV_QP_ name. */
	for (int i = 0; i < 31; i++) {
		const char *n = ez_qp_attr_mask_str(1 << i);

		if (QPFSM_KNOWN_MASK & (1 << i))
			ck_assert_msg(!strncmp(n, "IBV_QP_", 7), "bit %d: %s", i, n);
		else
			ck_assert_str_eq(n, "UNKNOWN");
	}
}
END_TEST

/* ---- RoCEv2 source ports ---- */

START_TEST(sport_round_trip_every_port)
{
	for (uint32_t s = 0xC000; s <= 0xFFFF; s++) {
		uint32_t fl = ez_udp_sport_to_flow_label((uint16_t)s);

		ck_assert_msg(fl != 0 && fl <= 0xfffff, "sport 0x%x -> label 0x%x", s, fl);
		ck_assert_uint_eq(ez_flow_label_to_udp_sport(fl), s);
		ck_assert_uint_eq(ibv_flow_label_to_udp_sport(fl), s);
		nsports++;
	}
	ck_assert_uint_eq(ez_udp_sport_to_flow_label(0xBFFF), 0);
	ck_assert_uint_eq(ez_udp_sport_to_flow_label(4791), 0);
}
END_TEST

START_TEST(sport_agrees_with_rdma_core_for_every_label)
{
	for (uint32_t fl = 0; fl <= 0xfffff; fl++)
		if (ez_flow_label_to_udp_sport(fl) != ibv_flow_label_to_udp_sport(fl))
			ck_abort_msg("label 0x%x: ez 0x%x, rdma-core 0x%x", fl,
				     ez_flow_label_to_udp_sport(fl), ibv_flow_label_to_udp_sport(fl));
	ck_assert_uint_eq(ez_flow_label_to_udp_sport(0), 0xC000);
}
END_TEST

/* Runs in the test process (CK_NOFORK below) so ncases adds up. */
int main(void)
{
	Suite *s = suite_create("qpfsm");
	TCase *tab = tcase_create("table");
	TCase *gen = tcase_create("generated");
	TCase *misc = tcase_create("misc");
	SRunner *sr;
	int failed;

	tcase_add_test(tab, table_rows_are_unique_cited_and_disjoint);
	tcase_add_test(tab, table_matches_the_man_page);
	tcase_add_test(tab, table_kernel_details);
	tcase_add_test(tab, sqd_to_sqd_follows_the_kernel);
	tcase_add_test(gen, every_row_accepted);
	tcase_add_test(gen, every_required_attribute_removed_is_refused);
	tcase_add_test(gen, every_forbidden_attribute_added_is_refused);
	tcase_add_test(gen, every_out_of_range_value_is_refused);
	tcase_add_test(gen, every_illegal_pair_is_refused);
	tcase_add_test(misc, messages_read_as_documented);
	tcase_add_test(misc, device_and_port_gates);
	tcase_add_test(misc, ladder_steps_validate_with_defaults);
	tcase_add_test(misc, valid_in_state_follows_the_climb);
	tcase_add_test(misc, names);
	tcase_add_test(misc, sport_round_trip_every_port);
	tcase_add_test(misc, sport_agrees_with_rdma_core_for_every_label);
	suite_add_tcase(s, tab);
	suite_add_tcase(s, gen);
	suite_add_tcase(s, misc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	printf("qpfsm: %ld validator cases (generated from %zu table rows), %ld source ports round-tripped\n",
	       ncases, qpfsm_table_len, nsports);
	return failed ? 1 : 0;
}
