/* qrt_date: date-time parsing and formatting with pure integer calendar
 * arithmetic (proleptic Gregorian calendar, no timegm/localtime/TZ).
 *
 * Times are epoch seconds (UTC) in an apr_int64_t; offsets are seconds
 * east of UTC. Days are counted from 1970-01-01 (day 0).
 */
#ifndef QRT_DATE_H
#define QRT_DATE_H

#include <apr.h>

/* Size of a buffer for qrt_date_format: "YYYY-MM-DDTHH:MM:SS+hhmm" + NUL. */
#define QRT_DATE_LEN 25
/* Size of a buffer for qrt_date_format_day: "YYYY-MM-DD" + NUL. */
#define QRT_DAY_LEN 11

/* Largest offset accepted or written: 14:00, in seconds. */
#define QRT_DATE_MAX_OFFSET (14 * 3600)

/* Parse "YYYY-MM-DDTHH:MM:SS" followed by an offset: "+hhmm", "-hhmm",
 * "+hh:mm", "-hh:mm", "Z", " hhmm" or " hh:mm" (a space stands for an
 * unencoded '+' that a URL decoder turned into a space). Exactly these
 * digits; a valid month and day (leap years); hour 0-23, minute and second
 * 0-59; offset at most 14:00 with minutes < 60; years 1970..9999 as written
 * (so t may be slightly negative, e.g. 1970-01-01T00:00:00+0100 is -3600).
 * Returns 0 and sets *t (epoch seconds, UTC) and *offset (seconds east of
 * UTC); -1 on anything else (NULL, trailing bytes, fractional seconds,
 * lowercase t or z, missing offset...). Outputs may be NULL and are left
 * alone on failure. */
int qrt_date_parse(const char *s, apr_int64_t *t, int *offset);

/* The last second a time written in UTC can be: 9999-12-31T23:59:59Z. */
#define QRT_DATE_T_MAX APR_INT64_C(253402300799)

/* t moved into 1970-01-01T00:00:00Z .. QRT_DATE_T_MAX, the times UTC writes with years
 * 1970..9999: a time that qrt_date_parse took with its offset past either end (e.g.
 * 1970-01-01T00:00:00+0100, -3600) becomes that end, so that a time kept and shown in
 * UTC reads back as it was kept. */
apr_int64_t qrt_date_clamp(apr_int64_t t);

/* Parse a calendar date "YYYY-MM-DD" (valid day, years 1970..9999) to days
 * since 1970-01-01. Returns 0 ok, -1 bad (*days left alone). */
int qrt_date_parse_day(const char *s, apr_int64_t *days);

/* Write t as "YYYY-MM-DDTHH:MM:SS+hhmm" in the given offset (e.g. +0200,
 * -0530, +0000). buf must hold QRT_DATE_LEN bytes. Never overflows: the
 * offset is truncated to whole minutes and clamped to +-14:00, and a local
 * time outside 0000-01-01T00:00:00..9999-12-31T23:59:59 is clamped to that
 * range (the glue never sees such values from qrt_date_parse when it
 * formats in the parsed offset; in UTC, 9999-12-31T23:59:59-1400 clamps). */
void qrt_date_format(char *buf, apr_int64_t t, int offset);

/* Write days since epoch as "YYYY-MM-DD"; buf must hold QRT_DAY_LEN bytes.
 * Days outside 0000-01-01..9999-12-31 are clamped to that range. */
void qrt_date_format_day(char *buf, apr_int64_t days);

/* The local day number of t in offset: floor((t + offset) / 86400), days
 * since epoch, correct for negative values; saturates instead of
 * overflowing. */
apr_int64_t qrt_date_day_of(apr_int64_t t, int offset);

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d (m 1..12,
 * d 1..31, not validated; any y of a few million either way is exact). */
apr_int64_t qrt_date_days_from_civil(apr_int64_t y, int m, int d);

/* The date of a day number (inverse of qrt_date_days_from_civil). */
void qrt_date_civil_from_days(apr_int64_t days, apr_int64_t *y, int *m,
                              int *d);

#endif /* QRT_DATE_H */
