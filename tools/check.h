/* check.h: `ezrdma check`, the self-check of a machine's RDMA devices as easyrdma sees them (check.c). */
#ifndef EZRDMA_CHECK_H
#define EZRDMA_CHECK_H

/* argv[0] is "check"; returns the exit status: 0 when nothing failed. */
int ezrdma_check(int argc, char **argv);

#endif
