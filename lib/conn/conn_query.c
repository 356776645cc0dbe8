/* conn_query.c: what the application asks of a connection: ez_conn_info, ez_conn_path_info, ez_conn_stats, ez_conn_errmsg, ez_conn_arg, ez_conn_accept_data. Reads only. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conn_types.h"
#include "conn_handle.h"
#include "base/abi.h"
#include "device/device.h"
#include "path.h"
#include "qpfsm/qpfsm.h"
#include "rebuild.h"

const char *ez_conn_errmsg(const struct ez_conn *conn)
{
	if (conn && conn_wrong_handle(conn, "ez_conn_errmsg"))
		return "";
	return conn ? conn->errmsg : "";
}

void *ez_conn_arg(const struct ez_conn *conn)
{
	if (conn && conn_wrong_handle(conn, "ez_conn_arg"))
		return NULL;
	return conn ? conn->arg : NULL;
}

static int conn_info_fill(const struct ez_conn *conn, struct ez_conn_info *info)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(info, 0, sizeof(*info));
	if (!conn_qp0(conn) || !conn->id)
		return ezi_fail(-ENOTCONN, "ez_conn_info: the connection has no QP (%s)",
				conn_is_ended(conn) ? "closed" : "still resolving");
	if (ibv_query_qp(conn_qp0(conn), &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN,
			 &ia))
		return ezi_fail(-errno, "ibv_query_qp(%u): %s", conn_qpn0(conn), ez_strerror(errno));
	info->qp_num = conn_qpn0(conn);
	info->remote_qp_num = a.dest_qp_num;
	info->path_mtu = a.path_mtu;
	info->flow_label = a.ah_attr.grh.flow_label;
	info->sport_policy = conn->sport_policy;
	info->sport_mech = conn->sport_mech;
	if (conn->sport_mech == EZ_SPORT_MECH_NONE && conn->reached_rtr)
		info->udp_sport = 0;	/* no UDP on this port */
	else if (conn->sport_mech == EZ_SPORT_MECH_MLX5DV && conn->sport)
		info->udp_sport = conn->sport;
	else if (!info->flow_label && a.dest_qp_num)
		info->udp_sport = ez_flow_label_to_udp_sport(qpfsm_flow_label_of_qpns(conn_qpn0(conn), a.dest_qp_num));
	else
		info->udp_sport = ez_flow_label_to_udp_sport(info->flow_label);
	snprintf(info->device, sizeof(info->device), "%s", conn->dev ? conn->dev->name : "");
	info->port = conn->port;
	memcpy(&info->local, rdma_get_local_addr(conn->id), sizeof(struct sockaddr_in6));
	memcpy(&info->peer, rdma_get_peer_addr(conn->id), sizeof(struct sockaddr_in6));
	{
		/* What ez_send takes: by rendezvous when both sides announced it. */
		uint32_t peer = conn->rndv.ok && conn->rndv.peer_max > conn->peer_max_msg ?
				conn->rndv.peer_max : conn->peer_max_msg;

		info->max_msg_size = peer < conn->o.max_msg_size ? peer : conn->o.max_msg_size;
	}
	info->peer_credits = conn->peer_credits;
	info->send_credits = conn->sq.send_credits;
	info->max_inline = conn->sq.max_inline;
	info->export_mech = conn->own_pd ? EZ_EXPORT_PD :
		conn->dev && device_has_mw2(conn->dev) ? EZ_EXPORT_MW2 : EZ_EXPORT_NONE;
	info->exports = conn->ex.n;
	path_info(conn, info);
	return 0;
}

/* The arguments of the query functions (ez_conn_info, ez_conn_path_info,
 * ez_conn_stats): a live handle on its thread, somewhere to write. */
static int query_args(const struct ez_conn *conn, const void *out, const char *fn)
{
	int ret;

	if (conn && (ret = conn_check_handle(conn, fn)))
		return ret;
	if (!conn || !out)
		return ezi_fail(-EINVAL, "%s: conn %p, %s %p", fn, (const void *)conn,
				strcmp(fn, "ez_conn_stats") ? "info" : "stats", out);
	return 0;
}

/* Filled at the library's layout, handed over at the caller's (doc/abi.md). */
int ez_conn_info_sz(const struct ez_conn *conn, struct ez_conn_info *info, size_t info_size)
{
	struct ez_conn_info full;
	int ret = query_args(conn, info, "ez_conn_info");

	if (ret)
		return ret;
	ret = conn_info_fill(conn, &full);
	ezi_struct_out(info, info_size, &full, sizeof(full));
	return ret;
}

int ez_conn_path_info_sz(const struct ez_conn *conn, uint32_t path, struct ez_path_info *info,
			 size_t info_size)
{
	struct ez_conn_info ci;
	struct ez_path_info full;
	union ibv_gid gid;
	int ret = query_args(conn, info, "ez_conn_path_info");

	if (ret)
		return ret;
	ret = conn_info_fill(conn, &ci);
	if (ret)
		return ezi_fail(ret, "ez_conn_path_info: %s", ez_errmsg());
	if (path >= ci.paths)
		return ezi_fail(-EINVAL, "ez_conn_path_info: path %u; the connection has %u "
				"(ez_conn_info.paths)", path, ci.paths);
	path_info_one(conn, path, &full);
	full.rebuilds = rebuild_path_count(conn, path);
	full.rebuilds_held = rebuild_path_held(conn, path);
	if (path == 0) {	/* rdma_cm's QP: what ez_conn_info reports */
		full.remote_qp_num = ci.remote_qp_num;
		full.udp_sport = ci.udp_sport;
	}
	snprintf(full.device, sizeof(full.device), "%s", ci.device);
	if (conn->dev && ibv_query_gid(conn->dev->verbs, conn->port, (int)full.gid_index, &gid) == 0)
		memcpy(full.gid, gid.raw, sizeof(full.gid));
	ezi_struct_out(info, info_size, &full, sizeof(full));
	return 0;
}

/* The per-path counters are the paths' own (any number of paths); the
 * public arrays show the first EZ_INFO_PATHS. */
static void stats_paths(const struct ez_conn *conn, struct ez_conn_stats *st)
{
	for (uint32_t i = 0; conn->paths && i < conn->npaths && i < EZ_INFO_PATHS; i++) {
		st->path_ops[i] = conn->paths[i].ops;
		st->path_bytes[i] = conn->paths[i].bytes;
		st->path_msgs_recv[i] = conn->paths[i].msgs_recv;
	}
}

int ez_conn_stats_sz(const struct ez_conn *conn, struct ez_conn_stats *stats, size_t stats_size)
{
	struct ez_conn_stats full;
	int ret = query_args(conn, stats, "ez_conn_stats");

	if (ret)
		return ret;
	full = conn->stats;
	stats_paths(conn, &full);
	full.ops_queued = conn->oq.total;
	full.ops_queued_most = conn->oq.most;
	ezi_struct_out(stats, stats_size, &full, sizeof(full));
	return 0;
}

const void *ez_conn_accept_data(const struct ez_conn *conn, size_t *len)
{
	if (len)
		*len = 0;
	if (conn && conn_check_handle(conn, "ez_conn_accept_data"))
		return NULL;
	if (!conn || !len) {
		ezi_fail(-EINVAL, "ez_conn_accept_data: conn %p, len %p", (const void *)conn,
			 (void *)len);
		return NULL;
	}
	if (!conn->active) {
		ezi_fail(-EINVAL, "ez_conn_accept_data: an accepted connection has no accept data of a peer (its request's bytes: ez_conn_req_data())");
		return NULL;
	}
	if (!conn->accept_data_set) {
		ezi_fail(-ENOTCONN, "ez_conn_accept_data: no reply from the listener yet");
		return NULL;
	}
	*len = conn->accept_data_len;
	/* Non-NULL even for 0 bytes: "the reply came and carried nothing". */
	return conn->accept_data;
}
