/* qrt_kept: a table of small fixed values (four 64-bit numbers) under a key, a bucket and
 * a seal, in memory that several processes may share: the whole days of reports by date
 * over a list, kept for every child of a server at once. Readers and writers take no
 * lock: each slot has a sequence number, odd while it is written; a reader that sees it
 * change misses, a writer that finds it odd gives up (the value is only kept, never
 * needed). Sets of four slots; a put takes the key's slot, else an empty one, else the
 * one put longest ago. */
#ifndef QRT_KEPT_H
#define QRT_KEPT_H

#include <stddef.h>
#include <stdint.h>

typedef struct qrt_kept_t qrt_kept_t;

/* The bytes a table of at least `slots` slots takes (rounded up to a power of two). */
size_t qrt_kept_size(unsigned slots);
/* A table over mem (size bytes from qrt_kept_size, aligned to 64): formatted when fresh
 * is set (zeroed memory is a formatted empty table), else attached as it is. NULL when
 * size is too small. */
qrt_kept_t *qrt_kept_attach(void *mem, size_t size, int fresh);
/* The value under (key, bucket, seal) into val: 1, or 0 when none (or another seal). */
int qrt_kept_get(qrt_kept_t *t, uint64_t key, int64_t bucket, int64_t seal, int64_t val[4]);
/* Keeps val under (key, bucket, seal), the key and bucket's value under another seal
 * replaced. */
void qrt_kept_put(qrt_kept_t *t, uint64_t key, int64_t bucket, int64_t seal,
                  const int64_t val[4]);

/* The table the process's reports use (NULL: none; set by the glue at a child's start). */
void qrt_kept_use(qrt_kept_t *t);
qrt_kept_t *qrt_kept_used(void);

#endif
