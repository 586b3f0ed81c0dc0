/* qrt_vradix: distinct visitors counted per group, the visits spread by their visitor
 * as they are added (no database, no httpd).
 *
 * qrt_vgroups keeps each group's visitors in chunks of the group, then spreads each
 * large group over parts by the hash of its visitors and counts each part through a
 * table small enough for the CPU's caches: three passes over the visits. When every
 * visit belongs to one group of few (a report by browser, country or city), this does
 * it in two: a visit goes at once to the part of its visitor's hash, as one 64-bit
 * value that holds both the hash (less the part's bits, which the part tells) and its
 * group; each part is then counted through one table, the distinct values per group.
 * A value tells the pair (visitor, group) exactly: the hash is a bijection of the
 * visitor. Eight bytes a visit (qrt_vgroups' chunks and parts take sixteen), so a
 * count of twice as many visits fits the same memory in one walk instead of shares.
 *
 * Groups are numbered 1 .. QRT_VRADIX_GROUPS - 1 by the caller. The memory is malloc'd
 * in segments, at most max visits; a few segments are kept for the next count (pages
 * already mapped: a count on them faults none in) and freed once unused for a while
 * (qrt_vradix_spares_release). Unit-tested in test/unit/test_vradix.c. */
#ifndef QRT_VRADIX_H
#define QRT_VRADIX_H

#include <apr.h>
#include <apr_time.h>

#define QRT_VRADIX_GROUP_BITS 10
#define QRT_VRADIX_GROUPS (1u << QRT_VRADIX_GROUP_BITS)

typedef struct qrt_vradix_t qrt_vradix_t;

/* An empty store of at most max visits; NULL without memory. */
qrt_vradix_t *qrt_vradix_make(apr_size_t max);
void qrt_vradix_free(qrt_vradix_t *r);
/* Adds n visits: visitors[i] of group groups[i], or all of group when groups is NULL, a
 * click where clicks[i] is not 0 (clicks NULL: none). 0, or -1 past max or for a group 0 or of limit (or
 * QRT_VRADIX_GROUPS) or more (none of them added), or without memory (the store is then
 * no longer exact). */
int qrt_vradix_add(qrt_vradix_t *r, apr_uint32_t group, const apr_uint32_t *groups,
                   const apr_uint64_t *visitors, const unsigned char *clicks, apr_size_t n,
                   apr_uint32_t limit);
/* The visits added. */
apr_size_t qrt_vradix_size(const qrt_vradix_t *r);
/* The visits of group added, and how many of them are clicks. */
void qrt_vradix_counts(const qrt_vradix_t *r, apr_uint32_t group, apr_int64_t *visits,
                       apr_int64_t *clicks);

/* The distinct visitors of each group over the nr stores rs together, added to
 * uniques[group] (uniques has ngroups entries). A group g of store i counts as
 * maps[i][g] when maps and maps[i] are not NULL (QRT_VRADIX_GROUPS entries, each group
 * the store holds mapped to one in 1 .. ngroups - 1, the others to 0), else as itself.
 * threads 2: a second thread (qrt_spare.h) counts the parts of half the visits. 0, or -1
 * without memory or for a map past ngroups (uniques then as it was). */
int qrt_vradix_uniques(qrt_vradix_t *const *rs, const apr_uint32_t *const *maps, int nr,
                       apr_uint32_t ngroups, int threads, apr_int64_t *uniques);

/* The same by masks: a visitor counts once in each bit of the masks of the groups it was
 * added to (masks[group], as mapped; ngroups entries), uniques[bit] (64 entries) the
 * visitors of each bit: a group that is a set of others (a tracker's tags) whose mask
 * holds their bits counts each visitor once in each of them, however many sets name it. */
int qrt_vradix_uniques_masks(qrt_vradix_t *const *rs, const apr_uint32_t *const *maps,
                             int nr, const apr_uint64_t *masks, apr_uint32_t ngroups,
                             int threads, apr_int64_t *uniques);

/* The segments kept for later counts: those kept unused for idle or longer are freed
 * (a child's scan writer calls it once a second, with qrt_vgroups_spares_release). */
void qrt_vradix_spares_release(apr_interval_time_t idle);
/* The bytes those spares hold now. */
apr_size_t qrt_vradix_spares_held(void);

#endif
