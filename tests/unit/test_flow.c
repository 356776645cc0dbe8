/* test_flow.c: the UDP source port policy: auto distinctness, round-robin, fixed, checks, label <-> port. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/flow.h"
#include "wire/opts.h"
#include "qpfsm/qpfsm.h"
#include "../checkmain.h"

static int in_range(uint16_t p)
{
	return p >= 0xC000;
}

/* Every run of 16384 consecutive QP numbers, wherever it starts (including
 * across the 24-bit wrap), gets 16384 distinct ports. */
START_TEST(auto_distinct_over_consecutive_qpns)
{
	static const uint32_t starts[] = { 0, 0x11, 0x3FFF, 0x12345, 0xFFC000, 0xFFFFF0 };
	static uint8_t seen[0x10000];
	struct ez_conn_opts o = { .sport_policy = EZ_SPORT_AUTO };
	uint32_t rr = 0;

	for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
		memset(seen, 0, sizeof(seen));
		for (uint32_t i = 0; i < FLOW_SPORTS; i++) {
			uint32_t qpn = (starts[s] + i) & 0xFFFFFF;
			uint16_t p = flow_pick_sport(&o, qpn, &rr);

			ck_assert_msg(in_range(p), "qpn %u gave port %u", qpn, p);
			ck_assert_msg(!seen[p], "qpn %u (run from %u) repeats port %u", qpn, starts[s], p);
			seen[p] = 1;
		}
	}
	ck_assert_uint_eq(rr, 0);	/* auto never moves the round-robin cursor */
}
END_TEST

/* Two processes sharing a device get interleaved QPNs from the same
 * allocator: their connections never share a port within the window, with
 * no coordination between them. */
START_TEST(auto_two_processes_interleaved)
{
	static uint8_t owner[0x10000];
	uint32_t base = 0x1a2b3, rr = 0;
	struct ez_conn_opts o = { .sport_policy = EZ_SPORT_AUTO };

	srand(6);
	memset(owner, 0, sizeof(owner));
	for (uint32_t qpn = base; qpn < base + 10000; qpn++) {
		int proc = 1 + (rand() & 1);
		uint16_t p = flow_pick_sport(&o, qpn, &rr);

		ck_assert_msg(!owner[p], "port %u used by process %d and again by %d", p, owner[p], proc);
		owner[p] = (uint8_t)proc;
	}
}
END_TEST

START_TEST(auto_follows_qpn_not_a_counter)
{
	struct ez_conn_opts o = { .sport_policy = EZ_SPORT_AUTO };
	uint32_t rr = 0;

	/* Same QPN, same port, however many connections came before. */
	ck_assert_uint_eq(flow_pick_sport(&o, 0x17, &rr), 0xC017);
	ck_assert_uint_eq(flow_pick_sport(&o, 0x17, &rr), 0xC017);
	ck_assert_uint_eq(flow_pick_sport(&o, 0x4017, &rr), 0xC017);	/* 16384 apart */
	ck_assert_uint_eq(flow_auto_sport(0x3FFF), 0xFFFF);
}
END_TEST

START_TEST(range_round_robin)
{
	struct ez_conn_opts o = { .sport_policy = EZ_SPORT_RANGE, .sport_min = 0xD000,
				  .sport_max = 0xD002 };
	static const uint16_t want[] = { 0xD000, 0xD001, 0xD002, 0xD000, 0xD001, 0xD002, 0xD000 };
	uint32_t rr = 0;

	ck_assert_int_eq(flow_opts_check(&o), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_uint_eq(flow_pick_sport(&o, 1000 + (uint32_t)i * 7, &rr), want[i]);
	ck_assert_uint_eq(rr, 7);

	/* One port range, and the whole space with the cursor wrapping. */
	o.sport_min = o.sport_max = 0xE000;
	ck_assert_uint_eq(flow_pick_sport(&o, 1, &rr), 0xE000);
	ck_assert_uint_eq(flow_pick_sport(&o, 2, &rr), 0xE000);
	o.sport_min = 0xC000;
	o.sport_max = 0xFFFF;
	rr = UINT32_MAX;
	ck_assert_uint_eq(flow_pick_sport(&o, 1, &rr), 0xFFFF);
	ck_assert_uint_eq(flow_pick_sport(&o, 1, &rr), 0xC000);
}
END_TEST

START_TEST(fixed_and_default)
{
	struct ez_conn_opts o = { .sport_policy = EZ_SPORT_FIXED, .udp_sport = 0xCAFE };
	uint32_t rr = 0;

	ck_assert_int_eq(flow_opts_check(&o), 0);
	ck_assert_int_eq(flow_policy(&o), EZ_SPORT_FIXED);
	for (uint32_t q = 1; q < 100; q++)
		ck_assert_uint_eq(flow_pick_sport(&o, q, &rr), 0xCAFE);

	/* The older option alone still means a fixed port. */
	o.sport_policy = EZ_SPORT_DEFAULT;
	ck_assert_int_eq(flow_policy(&o), EZ_SPORT_FIXED);
	ck_assert_uint_eq(flow_pick_sport(&o, 5, &rr), 0xCAFE);
	/* Nothing set: rdma_cm's label stays. */
	o.udp_sport = 0;
	ck_assert_int_eq(flow_policy(&o), EZ_SPORT_DEFAULT);
	ck_assert_uint_eq(flow_pick_sport(&o, 5, &rr), 0);
	ck_assert_uint_eq(rr, 0);
}
END_TEST

START_TEST(bad_policies_rejected_with_the_field)
{
	struct ez_conn_opts in = { .sport_policy = EZ_SPORT_FIXED }, o;

	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ez_errmsg(), "udp_sport 0"));

	in = (struct ez_conn_opts){ .sport_policy = EZ_SPORT_RANGE, .sport_min = 0xD000,
				    .sport_max = 0xCFFF };
	ck_assert_int_eq(conn_opts_resolve(&in, 1, &o), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ez_errmsg(), "sport_min 53248, sport_max 53247"));

	in.sport_min = 0x1000;
	in.sport_max = 0xD000;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ez_errmsg(), "sport_min 4096"));

	in = (struct ez_conn_opts){ .sport_policy = (enum ez_sport_policy)9 };
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ez_errmsg(), "sport_policy 9"));

	in = (struct ez_conn_opts){ .sport_policy = EZ_SPORT_RANGE, .sport_min = 0xD000,
				    .sport_max = 0xD000 };
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
	in = (struct ez_conn_opts){ .sport_policy = EZ_SPORT_AUTO };
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
}
END_TEST

/* The label the flow-label mechanism puts at RTR yields exactly the port,
 * by our math and by rdma-core's (which rxe's kernel side mirrors). */
START_TEST(label_gives_port_all_16384)
{
	for (uint32_t p = 0xC000; p <= 0xFFFF; p++) {
		uint32_t l = ez_udp_sport_to_flow_label((uint16_t)p);

		ck_assert_msg(l != 0 && l <= 0xFFFFF, "port %u: label %u", p, l);
		ck_assert_uint_eq(ez_flow_label_to_udp_sport(l), p);
		ck_assert_uint_eq(ibv_flow_label_to_udp_sport(l), p);
	}
}
END_TEST

/* The label the kernel gives a QP whose label is 0 (ez_conn_info's port
 * then): rdma_calc_flow_label()'s values, and the same on both sides. */
START_TEST(label_of_qpns_as_the_kernel)
{
	ck_assert_uint_eq(qpfsm_flow_label_of_qpns(17, 18), 306);	/* 17 x 18, nothing folded */
	/* 0x123456 x 0x654321 = 0x7336bf94116, its bits above 20 and 40 folded in. */
	ck_assert_uint_eq(qpfsm_flow_label_of_qpns(0x123456, 0x654321), 0xa77ae);
	ck_assert_uint_eq(qpfsm_flow_label_of_qpns(0, 0x654321), 0);
	for (uint32_t l = 1; l < 5000; l += 7)
		ck_assert_uint_eq(qpfsm_flow_label_of_qpns(l, 0xffffff - l),
				  qpfsm_flow_label_of_qpns(0xffffff - l, l));
	ck_assert_uint_le(qpfsm_flow_label_of_qpns(0xffffff, 0xffffff), 0xfffff);
}
END_TEST

START_TEST(mech_by_link_layer_and_gid_type)
{
	ck_assert_int_eq(flow_mech(IBV_LINK_LAYER_INFINIBAND, 0, 0), EZ_SPORT_MECH_NONE);
	ck_assert_int_eq(flow_mech(IBV_LINK_LAYER_INFINIBAND, 1, 1), EZ_SPORT_MECH_NONE);
	ck_assert_int_eq(flow_mech(IBV_LINK_LAYER_UNSPECIFIED, 1, 0), EZ_SPORT_MECH_NONE);
	ck_assert_int_eq(flow_mech(IBV_LINK_LAYER_ETHERNET, 0, 0), EZ_SPORT_MECH_NONE);	/* RoCEv1 */
	ck_assert_int_eq(flow_mech(IBV_LINK_LAYER_ETHERNET, 0, 1), EZ_SPORT_MECH_NONE);
	ck_assert_int_eq(flow_mech(IBV_LINK_LAYER_ETHERNET, 1, 0), EZ_SPORT_MECH_FLOW_LABEL);
	ck_assert_int_eq(flow_mech(IBV_LINK_LAYER_ETHERNET, 1, 1), EZ_SPORT_MECH_MLX5DV);
	ck_assert_str_eq(flow_mech_str(EZ_SPORT_MECH_FLOW_LABEL), "flow_label");
	ck_assert_str_eq(flow_policy_str(EZ_SPORT_RANGE), "range");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flow");
	TCase *tc = tcase_create("policy");

	tcase_add_test(tc, auto_distinct_over_consecutive_qpns);
	tcase_add_test(tc, auto_two_processes_interleaved);
	tcase_add_test(tc, auto_follows_qpn_not_a_counter);
	tcase_add_test(tc, range_round_robin);
	tcase_add_test(tc, fixed_and_default);
	tcase_add_test(tc, bad_policies_rejected_with_the_field);
	tcase_add_test(tc, label_gives_port_all_16384);
	tcase_add_test(tc, mech_by_link_layer_and_gid_type);
	tcase_add_test(tc, label_of_qpns_as_the_kernel);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
