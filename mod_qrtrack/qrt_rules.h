/* qrt_rules: a tracker's redirect rules ("smart codes"), validated from JSON, compiled
 * into one relocatable block and evaluated against the facts of a visit.
 *
 * A rule set is a JSON array of at most QRT_RULES_MAX rule objects, tried in order; the
 * first whose conditions all hold gives the redirect URL:
 *   {"redirect_url": URL, "device": [..], "os": [..], "country": [..], "language": [..],
 *    "from": TIME, "until": TIME, "weekdays": [1..7], "hours": "HH:MM-HH:MM",
 *    "utc_offset": "+0100"}
 * redirect_url is required and at least one condition must be given (utc_offset is no
 * condition: it says how weekdays and hours are read). A condition given as null is
 * absent; an empty list is an error. Unknown keys, wrong types, from after until and
 * values out of bounds are errors naming their path ("rules.3.hours").
 *
 * Conditions: device one of mobile, tablet, desktop, bot, other (as qrt_ua gives);
 * os an os family (uap names, compared without regard to ASCII case); country two ASCII
 * letters (ISO 3166 alpha-2, stored upper-case); language a tag of letters, digits and
 * '-' (subtags of 1 to 8, the first letters only) that matches the visitor's most
 * preferred Accept-Language tag when equal or a prefix of it up to a '-' ("de" matches
 * "de" and "de-AT", "de-AT" only "de-AT"; ASCII case ignored); from and until times as
 * qrt_date_parse reads them, both inclusive (held to 1970-01-01T00:00:00Z ..
 * 9999-12-31T23:59:59Z, what UTC can write); weekdays ISO (1 = Monday, duplicates
 * allowed); hours "HH:MM-HH:MM" on a 24-hour clock, start inclusive, end exclusive
 * ("24:00" as an end is midnight), wrapping past midnight when the end is earlier
 * ("22:00-06:00"), start and end different. weekdays and hours are read in utc_offset
 * ("+hhmm", "-hhmm", "+hh:mm" or "-hh:mm", at most 14:00; default +0000), each on its
 * own: a visit at 01:00 on Saturday is in weekdays [6] and in hours "22:00-06:00".
 *
 * The canonical JSON of a rule set (stored, and returned by the API) writes each rule's
 * keys in the order above, leaves out absent conditions, writes times in UTC
 * ("YYYY-MM-DDTHH:MM:SS+0000"), countries upper-case, weekdays sorted without
 * duplicates, hours as "HH:MM-HH:MM" and utc_offset as "+hhmm" (only when given).
 *
 * Core file: APR and jansson only, no httpd headers.
 */
#ifndef QRT_RULES_H
#define QRT_RULES_H

#include <apr_pools.h>

/* Rules of one tracker. */
#define QRT_RULES_MAX 20
/* Entries of one list (device, os, country, language). */
#define QRT_RULES_LIST_MAX 50
/* Entries of weekdays. */
#define QRT_RULES_WEEKDAYS_MAX 7
/* Bytes of one os name. */
#define QRT_RULES_OS_MAX 64
/* Bytes of one language tag (rules and Accept-Language alike). */
#define QRT_RULES_LANG_MAX 35
/* A buffer for qrt_accept_language_first that holds any tag a rule can match. */
#define QRT_RULES_LANG_BUF (QRT_RULES_LANG_MAX + 1)
/* Bytes and entries of an Accept-Language header that are looked at. */
#define QRT_ACCEPT_LANGUAGE_SCAN 4096
#define QRT_ACCEPT_LANGUAGE_ENTRIES 64

/* A compiled rule set: ONE contiguous block with internal offsets (no pointers), so the
 * scan path's cache can copy it with malloc+memcpy and evaluate it in place without
 * allocating. Its start must be 8-byte aligned (pools and malloc are). */
typedef struct qrt_rules qrt_rules_t;

/* Validate a JSON array (json_t *, may be JSON null or NULL = no rules). On success
 * returns NULL and sets *out (allocated in p; NULL for null/[]), *size (bytes of the
 * block, 0 for none) and *canon (canonical JSON text of the array to store in the
 * database and return in the API, NULL for none). On error returns a message (one
 * sentence, static or in p) and sets *field to the offending path, e.g.
 * "rules.3.hours", "rules.0" (no condition, unknown key, not an object), "rules" (not
 * an array / more than QRT_RULES_MAX); the outputs are then left alone. */
const char *qrt_rules_parse(apr_pool_t *p, const void *json_array, const qrt_rules_t **out,
                            apr_size_t *size, const char **canon, const char **field);

/* Same from stored text (what the store returns); NULL text, "null" or "[]" -> *out
 * NULL, *size 0. On error returns a message naming the path; *out is left alone. */
const char *qrt_rules_parse_text(apr_pool_t *p, const char *text, const qrt_rules_t **out,
                                 apr_size_t *size);

/* The facts of one visit that rules look at. */
typedef struct {
    const char *device;      /* qrt_ua device */
    const char *os;          /* qrt_ua os family */
    const char *country;     /* ISO alpha-2 upper-case or NULL/"" */
    const char *language;    /* most preferred Accept-Language entry or NULL */
    apr_int64_t now;         /* epoch seconds */
} qrt_rule_facts_t;

/* Index of the first rule that matches, or -1 (also for a NULL r). No allocation, no
 * locale, O(total conditions). A NULL or empty fact fails the conditions on it. */
int qrt_rules_match(const qrt_rules_t *r, const qrt_rule_facts_t *f);

/* The redirect_url of rule i (pointer into the block); NULL when i is out of range. */
const char *qrt_rules_url(const qrt_rules_t *r, int i);

/* Rules in the set (0 for NULL). */
int qrt_rules_count(const qrt_rules_t *r);

/* Bytes of the block (0 for NULL): what a copy must hold. */
apr_size_t qrt_rules_size(const qrt_rules_t *r);

/* Accept-Language: copy the most preferred entry's tag (highest q; the first among
 * equals; q=0 means "not acceptable" and is never chosen; '*' is ignored) into out
 * (outlen bytes, NUL-ended) and return its length, 0 when none. Bounded: looks at most
 * at the first QRT_ACCEPT_LANGUAGE_SCAN bytes and QRT_ACCEPT_LANGUAGE_ENTRIES entries
 * (an entry cut by the byte bound is left out); never reads past a NUL; malformed
 * entries are skipped, and so are tags longer than outlen - 1 or QRT_RULES_LANG_MAX
 * bytes. The tag is copied as written (rules compare it without regard to case). */
apr_size_t qrt_accept_language_first(const char *header, char *out, apr_size_t outlen);

#endif /* QRT_RULES_H */
