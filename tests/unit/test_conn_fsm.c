/* test_conn_fsm.c: the connection state table without a device: every state x event, reachability, and the callbacks' exactly-once guarantees over every event sequence. */
#include <check.h>
#include <string.h>

#include "conn/conn_fsm.h"
#include "../checkmain.h"

static const struct conn_fsm_row *row(enum conn_state s, enum conn_event e)
{
	return conn_fsm_row(s, e);
}

/* The man pages' promises as a model: what the callbacks of one handle
 * have seen so far. */
struct model {
	enum conn_state s;
	unsigned int up;		/* on_connect(0) ran */
	unsigned int connects;		/* on_connect runs (0 or error) */
	unsigned int disconnects;	/* on_disconnect runs */
	unsigned int closed;		/* ez_conn_close() called */
	unsigned int freed;
};

#define MAX_MODELS 4096
static struct model seen[MAX_MODELS];
static unsigned int nseen;

static int model_eq(const struct model *a, const struct model *b)
{
	return a->s == b->s && a->up == b->up && a->connects == b->connects &&
	       a->disconnects == b->disconnects && a->closed == b->closed && a->freed == b->freed;
}

static int add_model(const struct model *m)
{
	unsigned int i;

	for (i = 0; i < nseen; i++)
		if (model_eq(&seen[i], m))
			return 0;
	ck_assert_uint_lt(nseen, MAX_MODELS);
	seen[nseen++] = *m;
	return 1;
}

static void fire(struct model *m, enum conn_event e, int bye_ok);

/* What conn.c's actions do to the model; CA_CLOSE ends the connection
 * with a goodbye when one can be posted (bye_ok) or without. */
static void apply(struct model *m, const struct conn_fsm_row *r, int bye_ok)
{
	enum conn_state from = m->s;

	m->s = (enum conn_state)r->next;
	if (r->actions & CA_REPORT_UP) {
		ck_assert_msg(m->s == CS_CONNECTED, "on_connect(0) entering %s", conn_state_name(m->s));
		ck_assert_msg(conn_state_live(from), "on_connect(0) after the end");
		m->up = 1;
		m->connects++;
	}
	if (r->actions & CA_CLOSE) {
		if (bye_ok && row(m->s, CE_END_BYE)->valid)
			fire(m, CE_END_BYE, 0);
		else
			fire(m, CE_END, 0);
	}
	if (r->actions & CA_FINISH) {
		/* release_and_report(): one final callback, then CE_REPORTED. */
		if (m->up)
			m->disconnects++;
		else
			m->connects++;
		fire(m, CE_REPORTED, 0);
	}
	if ((r->actions & CA_FREE_IF_CLOSED) && m->closed)
		m->freed = 1;
	if (r->actions & CA_FREE)
		m->freed = 1;
}

static void fire(struct model *m, enum conn_event e, int bye_ok)
{
	const struct conn_fsm_row *r = row(m->s, e);

	if (!r->valid || m->freed)
		return;
	if (e == CE_CLOSE)
		m->closed = 1;
	apply(m, r, bye_ok);
}

static void check_invariants(const struct model *m)
{
	ck_assert_uint_le(m->connects, 1);
	ck_assert_uint_le(m->disconnects, 1);
	ck_assert_msg(!m->disconnects || m->up, "on_disconnect without on_connect(0)");
	if (m->s == CS_DEAD || m->s == CS_REPORTING) {
		ck_assert_msg(m->connects == 1, "%s with %u on_connect calls",
			      conn_state_name(m->s), m->connects);
		ck_assert_uint_eq(m->disconnects, m->up);
	}
	if (m->freed)
		ck_assert_msg(m->closed, "freed without ez_conn_close()");
}

/* Every event (and with a close both of its outcomes) from every model
 * state reachable from a new handle: ~a few hundred states. */
START_TEST(exactly_once_over_every_sequence)
{
	unsigned int i;
	int e, bye;

	nseen = 0;
	add_model(&(struct model){ .s = CS_NEW });
	for (i = 0; i < nseen; i++) {
		for (e = 0; e < CE_COUNT; e++) {
			for (bye = 0; bye < 2; bye++) {
				struct model m = seen[i];

				fire(&m, (enum conn_event)e, bye);
				check_invariants(&m);
				add_model(&m);
			}
		}
	}
	/* Every freed model got its one final callback before. */
	for (i = 0; i < nseen; i++)
		if (seen[i].freed)
			ck_assert_uint_eq(seen[i].connects, 1);
}
END_TEST

static void reach(enum conn_state from, int out[CS_COUNT])
{
	int e;

	if (out[from])
		return;
	out[from] = 1;
	for (e = 0; e < CE_COUNT; e++)
		if (row(from, (enum conn_event)e)->valid)
			reach((enum conn_state)row(from, (enum conn_event)e)->next, out);
}

START_TEST(every_state_reachable_and_every_state_ends)
{
	int from_new[CS_COUNT] = { 0 }, s;

	reach(CS_NEW, from_new);
	for (s = 0; s < CS_COUNT; s++) {
		int r[CS_COUNT] = { 0 };

		ck_assert_msg(from_new[s], "%s unreachable", conn_state_name((enum conn_state)s));
		reach((enum conn_state)s, r);
		ck_assert_msg(r[CS_DEAD], "%s cannot reach DEAD", conn_state_name((enum conn_state)s));
	}
}
END_TEST

/* The table itself, state by state: what each event may do. */
START_TEST(every_state_by_every_event)
{
	int s, e;

	for (s = 0; s < CS_COUNT; s++) {
		for (e = 0; e < CE_COUNT; e++) {
			const struct conn_fsm_row *r = row((enum conn_state)s, (enum conn_event)e);
			const char *sn = conn_state_name((enum conn_state)s);
			const char *en = conn_event_name((enum conn_event)e);

			ck_assert_str_ne(sn, "?");
			ck_assert_str_ne(en, "?");
			if (!r->valid) {
				ck_assert_uint_eq(r->actions, 0);
				continue;
			}
			ck_assert_uint_lt(r->next, CS_COUNT);
			/* Once ended, never live again. */
			if (!conn_state_live((enum conn_state)s))
				ck_assert_msg(!conn_state_live((enum conn_state)r->next),
					      "%s x %s revives the connection", sn, en);
			/* Every live state closes and fails alike. */
			if (conn_state_live((enum conn_state)s) && e == CE_END)
				ck_assert(r->next == CS_DRAINING &&
					  r->actions == (CA_END | CA_TEARDOWN));
			if (conn_state_live((enum conn_state)s) && e == CE_CLOSE)
				ck_assert(r->next == s && r->actions == CA_CLOSE);
			/* Only the dead handle is freed by the close itself. */
			if (r->actions & CA_FREE)
				ck_assert(s == CS_DEAD && e == CE_CLOSE);
			/* The connection comes up only into CONNECTED. */
			if (r->actions & CA_REPORT_UP)
				ck_assert_uint_eq(r->next, CS_CONNECTED);
		}
	}
	/* Nothing but the close means anything to a dead handle. */
	for (e = 0; e < CE_COUNT; e++)
		ck_assert_int_eq(row(CS_DEAD, (enum conn_event)e)->valid, e == CE_CLOSE);
	/* Out of range is never valid. */
	ck_assert_int_eq(row(CS_COUNT, CE_CLOSE)->valid, 0);
	ck_assert_int_eq(row(CS_NEW, CE_COUNT)->valid, 0);
}
END_TEST

/* The shared secret: neither an RTU nor a message establishes a keyed
 * passive side, and a keyed client comes up only on the verdict. */
START_TEST(keyed_sides_come_up_only_on_the_proof)
{
	ck_assert_int_eq(row(CS_AWAITING_PROOF, CE_RTU)->valid, 0);
	ck_assert_int_eq(row(CS_AWAITING_PROOF, CE_REPLY_OK)->valid, 0);
	ck_assert_uint_eq(row(CS_AWAITING_PROOF, CE_PROOF_OK)->next, CS_CONNECTED);
	ck_assert_int_eq(row(CS_AUTHENTICATING, CE_REPLY_OK)->valid, 0);
	ck_assert_int_eq(row(CS_AUTHENTICATING, CE_RTU)->valid, 0);
	ck_assert_uint_eq(row(CS_AUTHENTICATING, CE_PROOF_OK)->next, CS_CONNECTED);
	/* A proof accepted where none was asked for does nothing. */
	ck_assert_int_eq(row(CS_ACCEPTING, CE_PROOF_OK)->valid, 0);
	ck_assert_int_eq(row(CS_CONNECTING, CE_PROOF_OK)->valid, 0);
	/* The refusal is sent like a goodbye. */
	ck_assert_uint_eq(row(CS_AWAITING_PROOF, CE_END_BYE)->next, CS_SAYING_BYE);
}
END_TEST

/* Regions given with the connection: a side up on its side waits in
 * AWAITING_EXPORTS for the peer's, and only their arrival brings it up. */
START_TEST(exports_hold_the_connection_up)
{
	static const enum conn_state up_on_our_side[] = { CS_CONNECTING, CS_AUTHENTICATING,
							  CS_ACCEPTING, CS_AWAITING_PROOF };
	int s;

	for (unsigned int i = 0; i < sizeof(up_on_our_side) / sizeof(up_on_our_side[0]); i++) {
		const struct conn_fsm_row *r = row(up_on_our_side[i], CE_EXPORTS_DUE);

		ck_assert_int_eq(r->valid, 1);
		ck_assert_uint_eq(r->next, CS_AWAITING_EXPORTS);
		ck_assert_uint_eq(r->actions, 0);
	}
	/* Nothing but their arrival brings it up: a second RTU, a reply or a
	 * verdict is ignored. */
	ck_assert_int_eq(row(CS_AWAITING_EXPORTS, CE_RTU)->valid, 0);
	ck_assert_int_eq(row(CS_AWAITING_EXPORTS, CE_REPLY_OK)->valid, 0);
	ck_assert_int_eq(row(CS_AWAITING_EXPORTS, CE_PROOF_OK)->valid, 0);
	ck_assert_int_eq(row(CS_AWAITING_EXPORTS, CE_EXPORTS_DUE)->valid, 0);
	ck_assert_uint_eq(row(CS_AWAITING_EXPORTS, CE_EXPORTS_IN)->next, CS_CONNECTED);
	ck_assert_uint_eq(row(CS_AWAITING_EXPORTS, CE_EXPORTS_IN)->actions, CA_REPORT_UP);
	/* It is a setup state: a timeout names it, a close or an error ends it. */
	ck_assert_str_eq(conn_state_awaits(CS_AWAITING_EXPORTS),
			 "the regions the peer gives with the connection (its exports message)");
	ck_assert_int_eq(conn_state_cm_connected(CS_AWAITING_EXPORTS), 1);
	ck_assert_uint_eq(row(CS_AWAITING_EXPORTS, CE_END)->next, CS_DRAINING);
	/* Their arrival means nothing in any other state. */
	for (s = 0; s < CS_COUNT; s++)
		if (s != CS_AWAITING_EXPORTS)
			ck_assert_int_eq(row((enum conn_state)s, CE_EXPORTS_IN)->valid, 0);
}
END_TEST

/* The teardown's order: goodbye, drain, finish (deferred), report, dead. */
START_TEST(teardown_order)
{
	struct model m = { .s = CS_CONNECTED, .up = 1, .connects = 1 };

	fire(&m, CE_CLOSE, 1);
	ck_assert_uint_eq(m.s, CS_SAYING_BYE);
	fire(&m, CE_DRAINED, 1);	/* not before the goodbye is done */
	ck_assert_uint_eq(m.s, CS_SAYING_BYE);
	fire(&m, CE_BYE_DONE, 1);
	ck_assert_uint_eq(m.s, CS_DRAINING);
	fire(&m, CE_FINISH, 1);		/* not before the drain */
	ck_assert_uint_eq(m.s, CS_DRAINING);
	fire(&m, CE_DRAINED, 1);
	ck_assert_uint_eq(m.s, CS_FINISHING);
	ck_assert_uint_eq(row(CS_DRAINING, CE_DRAINED)->actions, CA_DEFER_FINISH);
	fire(&m, CE_FINISH, 1);
	ck_assert_uint_eq(m.s, CS_DEAD);
	ck_assert_uint_eq(m.disconnects, 1);
	ck_assert_uint_eq(m.freed, 1);	/* closed before: freed after its callback */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conn_fsm");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, every_state_by_every_event);
	tcase_add_test(tc, every_state_reachable_and_every_state_ends);
	tcase_add_test(tc, exactly_once_over_every_sequence);
	tcase_add_test(tc, keyed_sides_come_up_only_on_the_proof);
	tcase_add_test(tc, exports_hold_the_connection_up);
	tcase_add_test(tc, teardown_order);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
