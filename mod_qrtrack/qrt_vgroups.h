/* qrt_vgroups: visits counted by group in one pass, distinct visitors included (no
 * database, no httpd).
 *
 * A report over listed trackers groups their visits in the window by a key (a date,
 * a browser, a tag ...) with scans, clicks and distinct visitors per group. SQLite's
 * GROUP BY sorts the visits and its distinct count builds a b-tree per group: most of
 * the time of such a report. This counts them as they come instead: a hash of the
 * keys, each visit's visitor appended to its group's chunks (growing from 4 visitors to
 * 4,096, in one slab); when the groups are written, each group's distinct visitors are
 * counted through tables of its own, small enough to stay in the CPU's caches (a hash set
 * of all the pairs would miss them on every visit): a group of more than 16,384 visits is
 * first spread over parts of about 1,024 visitors by the high bits of their hash, each
 * part then counted through its own table. A visit may also count in a set of groups
 * (a tracker's tags: qrt_vgroups_set), added once: the sets' visitors are spread over
 * parts the same way, and each part's table keeps for each visitor the union of the
 * groups it was counted in, so that it counts once in each.
 * The store registers it with SQLite as the aggregate
 * qrt_vgroups(key, click, visitor), whose value is the groups in the text form below
 * (PostgreSQL's statements write the same form with string_agg). Memory is malloc'd
 * and bounded: at most max visits copied or added to sets and their members, then an
 * add fails and the caller counts another way. A run held by reference
 * (qrt_vgroups_add_ref) takes no copy: a group past max visits that way is counted in
 * bands of its visitors, each in an array of at most twice max.
 *
 * The text form: for each group "<bytes of key>:<key> <scans> <clicks> <uniques>\n".
 * Unit-tested in test/unit/test_vgroups.c. */
#ifndef QRT_VGROUPS_H
#define QRT_VGROUPS_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_time.h>

typedef struct qrt_vgroups_t qrt_vgroups_t;

/* No groups yet, at most max visits; NULL without memory. */
qrt_vgroups_t *qrt_vgroups_make(apr_size_t max);
/* Counts a visit of group key (klen bytes) by visitor id: 0, or -1 past max visits,
 * after qrt_vgroups_text, or out of memory (the groups are then no longer exact). */
int qrt_vgroups_add(qrt_vgroups_t *g, const char *key, apr_size_t klen, int click,
                    apr_int64_t visitor);
/* The number of group key (klen bytes), made when new: > 0; 0 without memory or
 * after qrt_vgroups_text. */
apr_uint32_t qrt_vgroups_group(qrt_vgroups_t *g, const char *key, apr_size_t klen);
/* The number of the set of n groups numbered by qrt_vgroups_group (in any order, repeats
 * once), made when new: > 0; 0 for no groups, a number that is no group, without memory
 * or after qrt_vgroups_text. A visit added to a set (qrt_vgroups_add_to, _add_run) is a
 * visit of each of its groups, its visitor counted once in each however many sets and
 * groups name it: a report by tag adds each visit once, to the set of its tracker's
 * tags, not once a tag. A set is not a group of the text form. */
apr_uint32_t qrt_vgroups_set(qrt_vgroups_t *g, const apr_uint32_t *groups, apr_size_t n);
/* Counts a visit of a group numbered by qrt_vgroups_group, as qrt_vgroups_add does. */
int qrt_vgroups_add_to(qrt_vgroups_t *g, apr_uint32_t group, int click, apr_int64_t visitor);
/* Counts n visits (visitors[i], a click where clicks[i] is not 0) as n calls of
 * qrt_vgroups_add_to do: all of group when groups is NULL, else each of groups[i].
 * 0, or -1 as qrt_vgroups_add_to (past max: none of them counted). */
int qrt_vgroups_add_run(qrt_vgroups_t *g, apr_uint32_t group, const apr_uint32_t *groups,
                        const apr_int64_t *visitors, const unsigned char *clicks,
                        apr_size_t n);
/* The visits of visitors[0, n) that g counts (those of its share, qrt_vgroups_share; all
 * of them when it counts no share): their positions written to at (room for n), in
 * order, and their number. A caller that maps its visits to groups maps these alone. */
apr_size_t qrt_vgroups_pick(const qrt_vgroups_t *g, const apr_int64_t *visitors,
                            apr_size_t n, apr_uint32_t *at);
/* As qrt_vgroups_add_run of groups[i], for visits qrt_vgroups_pick picked: they are not
 * tried against the share again. */
int qrt_vgroups_add_picked(qrt_vgroups_t *g, const apr_uint32_t *groups,
                           const apr_int64_t *visitors, const unsigned char *clicks,
                           apr_size_t n);
/* As qrt_vgroups_add_run with groups NULL, but a run of 16 visits or more is not
 * copied: g reads visitors where they are, which must stay unchanged until
 * qrt_vgroups_text (or _free) of g and of any g that absorbs it (a report's blocks,
 * held for its count). Such a run of a group that is no set nor a set's member does not
 * count against the bound. Copied when g counts a share (qrt_vgroups_share). */
int qrt_vgroups_add_ref(qrt_vgroups_t *g, apr_uint32_t group, const apr_int64_t *visitors,
                        const unsigned char *clicks, apr_size_t n);
/* Lets the count (qrt_vgroups_text) use n threads (1 or 2): with 2, the distinct
 * visitors of groups that are no set nor a set's member are counted in two threads,
 * the groups shared out between them by their visits, once they hold min visits or
 * more (0: 100,000); a group of a million visits or more (and min) alone, in bands of
 * its visitors, half of them by each thread. */
void qrt_vgroups_threads(qrt_vgroups_t *g, int n, apr_size_t min);
/* Adds the visits of from to g, as though they had been added to g (each to the group,
 * or set, of g of the same key; made when new): two walks can each count part of one
 * report's visits, one adding the other's before the count. from is left as it was (to
 * be freed). 0, or -1 past g's bound, without memory (g is then no longer exact) or after
 * qrt_vgroups_text of either. */
int qrt_vgroups_absorb(qrt_vgroups_t *g, qrt_vgroups_t *from);
/* From now on counts only the visits of share k of n of the visitors (n a power of two
 * up to QRT_VGROUPS_SHARES, k < n; before any visit is added), each visitor in one share
 * by a hash: the others are left out as though never added, nor counted against the
 * bound. The shares' counts of each group (visits, clicks, distinct visitors) add up to
 * the whole's, so visits too many for the bound can be counted share by share. 0, or -1
 * for a bad share or after a visit was added. */
#define QRT_VGROUPS_SHARES 4096
int qrt_vgroups_share(qrt_vgroups_t *g, apr_uint32_t k, apr_uint32_t n);
/* From now on spreads each visit by its visitor as it is added (qrt_vradix.h): half the
 * memory a visit, one pass fewer. Before any visit is added, on a count of no share.
 * Without sets, for a count whose every visit is of one plain group: sets are then
 * refused (qrt_vgroups_set gives 0). With sets (a tracker's tags), each group with
 * visits, or a set's member, takes one of 64 bits, and each visitor is counted once in
 * each bit of its groups: a visit that would take a 65th is refused as past the bound.
 * Runs held by reference are copied, a visit of a group numbered QRT_VRADIX_GROUPS or
 * more is refused as past the bound, and it absorbs only another count of the same kind
 * (whose spread visits move to it). 0, or -1. */
int qrt_vgroups_radix(qrt_vgroups_t *g, int sets);
/* The groups in the text form, malloc'd (*len bytes, NUL-terminated); NULL without
 * memory. Ends the adds. */
char *qrt_vgroups_text(qrt_vgroups_t *g, apr_size_t *len);
void qrt_vgroups_free(qrt_vgroups_t *g);

/* How many groups were counted by two threads a half of their runs each, and how many
 * of those met a part past its room and were counted in bands instead (tests). */
void qrt_vgroups_split_counts(apr_size_t *halves, apr_size_t *banded);
/* The arrays that counts keep for the next ones (a process's few spares, each at most
 * 32 MB, their pages kept resident: a count on them faults none in): those kept unused
 * for idle or longer are freed. A process that counts calls it now and then (a child's
 * scan writer, once a second), so that its memory goes back once reports stop. */
void qrt_vgroups_spares_release(apr_interval_time_t idle);
/* The bytes those spares hold now. */
apr_size_t qrt_vgroups_spares_held(void);

/* A visitor id written as text (before schema 9): 16 lower-case hex digits, as
 * qrt_vset reads them. 0, or -1 for any other text. */
int qrt_vgroups_visitor_id(const char *s, apr_size_t n, apr_int64_t *id);

/* One group of the text form. */
typedef struct {
    const char *key;
    apr_int64_t scans, clicks, uniques;
} qrt_vgroup_t;

/* The groups of a text form (len bytes) appended to out (of qrt_vgroup_t), their keys
 * in p: APR_SUCCESS, or APR_EINVAL when it is not one. */
apr_status_t qrt_vgroups_parse(apr_pool_t *p, const char *s, apr_size_t len,
                               apr_array_header_t *out);

#endif
