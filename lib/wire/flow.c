/* flow.c: choosing a connection's RoCEv2 UDP source port (policy only; no device). */
#include "config.h"

#include <errno.h>

#include "base/error.h"
#include "flow.h"

int flow_opts_check(const struct ez_conn_opts *o)
{
	switch (o->sport_policy) {
	case EZ_SPORT_DEFAULT:
	case EZ_SPORT_AUTO:
		return 0;
	case EZ_SPORT_FIXED:
		if (o->udp_sport < FLOW_SPORT_MIN)
			return ezi_fail(-EINVAL, "ez_conn_opts.udp_sport %u: EZ_SPORT_FIXED needs a port in 0xC000..0xFFFF",
					o->udp_sport);
		return 0;
	case EZ_SPORT_RANGE:
		if (o->sport_min < FLOW_SPORT_MIN || o->sport_max < o->sport_min)
			return ezi_fail(-EINVAL, "ez_conn_opts.sport_min %u, sport_max %u: EZ_SPORT_RANGE needs 0xC000 <= sport_min <= sport_max <= 0xFFFF",
					o->sport_min, o->sport_max);
		return 0;
	}
	return ezi_fail(-EINVAL, "ez_conn_opts.sport_policy %d is not an enum ez_sport_policy value",
			(int)o->sport_policy);
}

enum ez_sport_policy flow_policy(const struct ez_conn_opts *o)
{
	if (o->sport_policy == EZ_SPORT_DEFAULT && o->udp_sport)
		return EZ_SPORT_FIXED;
	return o->sport_policy;
}

uint16_t flow_auto_sport(uint32_t qpn)
{
	/* The device hands out QP numbers unique across every process using
	 * it, and they are mostly consecutive: their low 14 bits give distinct
	 * ports for any 16384 QPs in a row with no coordination between
	 * processes, where a hash would collide by the birthday bound after a
	 * few hundred. Consecutive ports are what a modulo-N ECMP hash spreads
	 * best; CRC hashes spread them as well as any others. */
	return (uint16_t)(FLOW_SPORT_MIN + (qpn & (FLOW_SPORTS - 1)));
}

uint16_t flow_pick_sport(const struct ez_conn_opts *o, uint32_t qpn, uint32_t *rr)
{
	uint32_t n;

	switch (flow_policy(o)) {
	case EZ_SPORT_AUTO:
		return flow_auto_sport(qpn);
	case EZ_SPORT_FIXED:
		return o->udp_sport;
	case EZ_SPORT_RANGE:
		n = (uint32_t)o->sport_max - o->sport_min + 1;
		return (uint16_t)(o->sport_min + (*rr)++ % n);
	case EZ_SPORT_DEFAULT:
		break;
	}
	return 0;
}

enum ez_sport_mech flow_mech(uint8_t link_layer, int gid_is_rocev2, int is_mlx5)
{
	/* IBV_LINK_LAYER_UNSPECIFIED is what old InfiniBand drivers report. */
	if (link_layer != IBV_LINK_LAYER_ETHERNET || !gid_is_rocev2)
		return EZ_SPORT_MECH_NONE;
	return is_mlx5 ? EZ_SPORT_MECH_MLX5DV : EZ_SPORT_MECH_FLOW_LABEL;
}

const char *flow_policy_str(enum ez_sport_policy p)
{
	switch (p) {
	case EZ_SPORT_DEFAULT: return "default";
	case EZ_SPORT_AUTO: return "auto";
	case EZ_SPORT_RANGE: return "range";
	case EZ_SPORT_FIXED: return "fixed";
	}
	return "?";
}

const char *flow_mech_str(enum ez_sport_mech m)
{
	switch (m) {
	case EZ_SPORT_MECH_NONE: return "none";
	case EZ_SPORT_MECH_FLOW_LABEL: return "flow_label";
	case EZ_SPORT_MECH_MLX5DV: return "mlx5dv";
	}
	return "?";
}
