/* op_queue.c: a connection's bounded queue of operations accepted past a full window, in call order: the entries and the list; queued.c decides what goes in, makes the head again when room returns, and ends what is left. */
#include "config.h"

#include <stdlib.h>

#include "op_queue.h"

void op_queue_init(struct op_queue *q, uint32_t max)
{
	q->head = NULL;
	q->tail = &q->head;
	q->n = 0;
	q->max = max;
	q->most = 0;
	q->total = 0;
	q->draining = 0;
}

struct queued_op *op_queue_new(size_t data_len)
{
	return calloc(1, sizeof(struct queued_op) + data_len);
}

void op_queue_push(struct op_queue *q, struct queued_op *e)
{
	e->next = NULL;
	*q->tail = e;
	q->tail = &e->next;
	q->n++;
	q->total++;
	if (q->n > q->most)
		q->most = q->n;
}

struct queued_op *op_queue_pop(struct op_queue *q)
{
	struct queued_op *e = q->head;

	if (!e)
		return NULL;
	q->head = e->next;
	if (!q->head)
		q->tail = &q->head;
	q->n--;
	e->next = NULL;
	return e;
}

void op_queue_unpop(struct op_queue *q, struct queued_op *e)
{
	e->next = q->head;
	q->head = e;
	if (q->tail == &q->head)
		q->tail = &e->next;
	q->n++;
}

void op_queue_set_draining(struct op_queue *q, int on)
{
	q->draining = (uint8_t)!!on;
}
