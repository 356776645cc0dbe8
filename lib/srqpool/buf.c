/* buf.c: the application's side of a received buffer: its bytes, and giving it back. */
#include "config.h"

#include "base/log.h"
#include "pool.h"

void *ez_buf_data(const struct ez_buf *buf)
{
	return buf ? buf->data : NULL;
}

size_t ez_buf_len(const struct ez_buf *buf)
{
	return buf ? buf->len : 0;
}

/* Back on the free list; posted at once only when the SRQ is below its
 * watermark or a batch is full, so the common case costs no doorbell. */
void ez_buf_release(struct ez_buf *buf)
{
	struct ez_srqpool *pool;

	if (!buf)
		return;
	pool = buf->pool;
	if (srqpool_mark_released(pool, buf)) {
		ezi_log_err("%s", pool->errmsg);
		return;
	}
	if (!srqpool_release_should_post(pool))
		return;
	if (srqpool_flush(pool))
		ezi_log_err("ez_buf_release: %s", pool->errmsg);
	else if (pool->waiters)
		srqpool_share_wake(pool, 0);
}
