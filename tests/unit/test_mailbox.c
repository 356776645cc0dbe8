/* test_mailbox.c: the loop's mailbox without a device: letters posted from other threads delivered on the loop's thread in order, bounded per pass, refused after the close (and by an under_lock step), the rest handed back by the close. */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#include "loop/mailbox.h"
#include "../checkmain.h"

#define SENDERS 4
#define PER_SENDER 500

struct letter {
	struct loop_mail m;
	int sender, seq;
};

static struct loop lp;
static struct loop_mailbox mb;
static pthread_t loop_thread;
static int delivered, wrong_thread, out_of_order;
static int last_seq[SENDERS];

static void deliver(struct loop_mailbox *box, struct loop_mail *m)
{
	struct letter *l = container_of(m, struct letter, m);

	if (!pthread_equal(pthread_self(), loop_thread))
		wrong_thread++;
	if (l->seq != last_seq[l->sender] + 1)
		out_of_order++;
	last_seq[l->sender] = l->seq;
	delivered++;
}

static struct letter letters[SENDERS][PER_SENDER];

static void *sender(void *arg)
{
	int s = (int)(long)arg;

	for (int i = 0; i < PER_SENDER; i++) {
		letters[s][i].sender = s;
		letters[s][i].seq = i;
		ck_assert_int_eq(loop_mailbox_post(&mb, &letters[s][i].m, NULL, NULL), 0);
	}
	return NULL;
}

static void setup(void)
{
	ck_assert_int_eq(loop_init(&lp), 0);
	ck_assert_int_eq(loop_mailbox_init(&lp, &mb, deliver), 0);
	loop_thread = pthread_self();
	delivered = wrong_thread = out_of_order = 0;
	for (int i = 0; i < SENDERS; i++)
		last_seq[i] = -1;
}

static void teardown(void)
{
	loop_mailbox_close(&mb);
	loop_mailbox_fini(&mb);
	loop_mailbox_destroy(&mb);
	loop_fini(&lp);
}

/* Four threads post while the loop runs: every letter once, on the loop's
 * thread, each sender's in its order; the fd wakes a poll. */
START_TEST(posts_from_threads)
{
	pthread_t th[SENDERS];
	int passes = 0;

	for (long i = 0; i < SENDERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, sender, (void *)i), 0);
	while (delivered < SENDERS * PER_SENDER && passes < 100000) {
		struct pollfd p = { .fd = lp.epfd, .events = POLLIN };

		poll(&p, 1, 100);
		loop_process(&lp);
		passes++;
	}
	for (int i = 0; i < SENDERS; i++)
		pthread_join(th[i], NULL);
	loop_process(&lp);
	ck_assert_int_eq(delivered, SENDERS * PER_SENDER);
	ck_assert_int_eq(wrong_thread, 0);
	ck_assert_int_eq(out_of_order, 0);
	ck_assert_uint_eq(loop_mailbox_queued(&mb), 0);
}
END_TEST

/* At most LOOP_MAIL_PER_PASS a pass; the rest keeps the fd readable. */
START_TEST(bounded_per_pass)
{
	static struct letter l[LOOP_MAIL_PER_PASS + 5];
	struct pollfd p = { .fd = lp.epfd, .events = POLLIN };

	for (int i = 0; i < LOOP_MAIL_PER_PASS + 5; i++) {
		l[i].sender = 0;
		l[i].seq = i;
		ck_assert_int_eq(loop_mailbox_post(&mb, &l[i].m, NULL, NULL), 0);
	}
	ck_assert_uint_eq(loop_mailbox_queued(&mb), LOOP_MAIL_PER_PASS + 5);
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	loop_process(&lp);
	ck_assert_int_eq(delivered, LOOP_MAIL_PER_PASS);
	ck_assert_uint_eq(loop_mailbox_queued(&mb), 5);
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	loop_process(&lp);
	ck_assert_int_eq(delivered, LOOP_MAIL_PER_PASS + 5);
	ck_assert_int_eq(out_of_order, 0);
	ck_assert_int_eq(poll(&p, 1, 0), 0);
}
END_TEST

static int refuse(struct loop_mail *m, void *arg)
{
	(*(int *)arg)++;
	return -EXDEV;
}

/* An under_lock step's refusal is returned and nothing is queued; the
 * close hands back what is queued, and later posts are refused without
 * running the step. */
START_TEST(refusals_and_close)
{
	static struct letter l[3];
	struct loop_mail *back;
	int steps = 0, n = 0;

	ck_assert_int_eq(loop_mailbox_post(&mb, &l[0].m, refuse, &steps), -EXDEV);
	ck_assert_int_eq(steps, 1);
	ck_assert_uint_eq(loop_mailbox_queued(&mb), 0);
	ck_assert_int_eq(loop_mailbox_post(&mb, &l[1].m, NULL, NULL), 0);
	ck_assert_int_eq(loop_mailbox_post(&mb, &l[2].m, NULL, NULL), 0);
	back = loop_mailbox_close(&mb);
	for (struct loop_mail *m = back; m; m = m->next)
		n++;
	ck_assert_ptr_eq(back, &l[1].m);
	ck_assert_int_eq(n, 2);
	ck_assert(loop_mailbox_is_closed(&mb));
	ck_assert_int_eq(loop_mailbox_post(&mb, &l[0].m, refuse, &steps), -ESHUTDOWN);
	ck_assert_int_eq(steps, 1);
	ck_assert_ptr_null(loop_mailbox_close(&mb));
	loop_process(&lp);
	ck_assert_int_eq(delivered, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mailbox");
	TCase *tc = tcase_create("mailbox");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, posts_from_threads);
	tcase_add_test(tc, bounded_per_pass);
	tcase_add_test(tc, refusals_and_close);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
