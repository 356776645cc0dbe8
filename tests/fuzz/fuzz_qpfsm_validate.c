/* fuzz_qpfsm_validate.c: libFuzzer target: random (type, state, mask, values, limits) through the qpfsm validator. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qpfsm/qpfsm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Takes n bytes from the input (zeros once it runs out). */
static void take(const uint8_t **p, size_t *left, void *out, size_t n)
{
	size_t k = n < *left ? n : *left;

	memset(out, 0, n);
	memcpy(out, *p, k);
	*p += k;
	*left -= k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qpfsm_qp_view qp;
	struct qpfsm_limits lim;
	struct ibv_qp_attr attr;
	uint8_t type, state, use_lim, draining;
	int mask, rc, rc2;
	char msg[256], msg2[256];
	const struct qpfsm_row *row;
	enum ibv_qp_state to;

	take(&data, &size, &type, 1);
	take(&data, &size, &state, 1);
	take(&data, &size, &use_lim, 1);
	take(&data, &size, &draining, 1);
	take(&data, &size, &mask, sizeof(mask));
	take(&data, &size, &lim, sizeof(lim));
	take(&data, &size, &attr, sizeof(attr));

	/* Mostly the known types and states, sometimes anything at all. */
	qp.type = (type & 0x80) ? (enum ibv_qp_type)type : qpfsm_types[type % qpfsm_ntypes];
	qp.state = (state & 0x80) ? (enum ibv_qp_state)state : (enum ibv_qp_state)(state % QPFSM_NSTATES);
	qp.port = draining >> 4;
	qp.sq_draining = draining & 1;
	if (!(mask & 0x40000000))
		mask &= QPFSM_KNOWN_MASK;
	lim.phys_port_cnt %= QPFSM_MAX_PORTS + 1;

	rc = qpfsm_validate(&qp, (use_lim & 1) ? &lim : NULL, &attr, mask, msg, sizeof(msg));
	if (rc != 0 && rc != -EINVAL)
		abort();
	if (rc == -EINVAL && msg[0] == '\0')
		abort(); /* every refusal says why */

	/* The same question gets the same answer. */
	rc2 = qpfsm_validate(&qp, (use_lim & 1) ? &lim : NULL, &attr, mask, msg2, sizeof(msg2));
	if (rc2 != rc || strcmp(msg, msg2))
		abort();

	if (rc == 0) {
		/* Accepted: the transition is in the table, every required
		 * attribute is there and nothing outside required|optional. */
		to = (mask & IBV_QP_STATE) ? attr.qp_state : qp.state;
		row = qpfsm_lookup(qp.type, qp.state, to);
		if (!row)
			abort();
		if ((mask & row->req) != row->req)
			abort();
		if (mask & ~(row->req | row->opt | IBV_QP_STATE))
			abort();
	}
	/* A message never overflows a small buffer. */
	rc2 = qpfsm_validate(&qp, (use_lim & 1) ? &lim : NULL, &attr, mask, msg2, 8);
	if (rc2 != rc || strlen(msg2) > 7)
		abort();
	return 0;
}
