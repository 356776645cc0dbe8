/* heaplive.h: the heap the program's allocations hold, counted by the test
 * itself (heaplive.c interposes malloc and its family in the executable).
 *
 * Why not mallinfo2(): its in-use figure counts the chunks glibc keeps in
 * its per-thread caches (tcache: up to 7 freed chunks of each size up to
 * 1,032 bytes, per thread) as in use. Which sizes sit there at a snapshot
 * depends on the last frees of each thread, and fills slowly with rarely
 * used sizes: test_leak's second half grew 15-36 KiB by mallinfo2 while the
 * live allocations were byte for byte the same (see test_leak.c). */
#ifndef EZ_TEST_HEAPLIVE_H
#define EZ_TEST_HEAPLIVE_H

/* Bytes (malloc_usable_size) of the allocations live now, or -1 when not
 * counted (a sanitizer build, whose runtime owns malloc; or more live
 * allocations than the table holds). */
long heap_live(void);
/* Starts epoch n: what is allocated from now on, and what is live now and
 * freed from now on, is what heap_live_sites() reports. */
void heap_live_epoch(int n);
/* With EZ_LEAK_SITES set in the environment (call stacks recorded: slower),
 * prints under label the net bytes since the epoch began by call site
 * (module+offset: `addr2line -f -i -e MODULE OFFSET`); else nothing. */
void heap_live_sites(const char *label);

#endif
