/* qrt_date: see qrt_date.h. Pure integer arithmetic, no libc time calls. */
#include "qrt_date.h"

#define SECS_PER_DAY APR_INT64_C(86400)

/* Day numbers of 0000-01-01 and 9999-12-31; the writable range. */
#define DAY_MIN APR_INT64_C(-719528)
#define DAY_MAX APR_INT64_C(2932896)
#define T_MIN (DAY_MIN * SECS_PER_DAY)
#define T_MAX (DAY_MAX * SECS_PER_DAY + SECS_PER_DAY - 1)

/* Bounds that keep the helpers' intermediate products far from overflow. */
#define YEAR_LIMIT APR_INT64_C(1000000000)
#define DAYS_LIMIT APR_INT64_C(365000000000)

static apr_int64_t floor_div(apr_int64_t a, apr_int64_t b)
{
    apr_int64_t q = a / b;

    if ((a % b != 0) && ((a < 0) != (b < 0))) {
        q--;
    }
    return q;
}

static apr_int64_t clamp64(apr_int64_t v, apr_int64_t lo, apr_int64_t hi)
{
    if (v < lo) {
        return lo;
    }
    if (v > hi) {
        return hi;
    }
    return v;
}

static int is_leap(apr_int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(apr_int64_t y, int m)
{
    static const int dim[12] = { 31, 28, 31, 30, 31, 30,
                                 31, 31, 30, 31, 30, 31 };

    if (m == 2 && is_leap(y)) {
        return 29;
    }
    return dim[m - 1];
}

apr_int64_t qrt_date_days_from_civil(apr_int64_t y, int m, int d)
{
    apr_int64_t era, yoe, doy, doe;

    y = clamp64(y, -YEAR_LIMIT, YEAR_LIMIT);
    if (m < 1) {
        m = 1;
    }
    else if (m > 12) {
        m = 12;
    }
    /* Years start on March 1 so that the leap day is the last one. */
    if (m <= 2) {
        y--;
    }
    era = floor_div(y, 400);
    yoe = y - era * 400;
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    /* 719468 days from 0000-03-01 to 1970-01-01. */
    return era * 146097 + doe - 719468;
}

void qrt_date_civil_from_days(apr_int64_t days, apr_int64_t *y, int *m,
                              int *d)
{
    apr_int64_t z, era, doe, yoe, doy, mp, yy;
    int mm;

    z = clamp64(days, -DAYS_LIMIT, DAYS_LIMIT) + 719468;
    era = floor_div(z, 146097);
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    mm = (int)(mp < 10 ? mp + 3 : mp - 9);
    yy = yoe + era * 400 + (mm <= 2 ? 1 : 0);
    if (y) {
        *y = yy;
    }
    if (m) {
        *m = mm;
    }
    if (d) {
        *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    }
}

/* Read exactly n decimal digits; stops at the first non-digit (so never
 * reads past a NUL). */
static int read_digits(const char *s, int n, int *out)
{
    int v = 0;
    int i;

    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* "YYYY-MM-DD" at s (not necessarily terminated there) to a day number. */
static int parse_ymd(const char *s, apr_int64_t *days)
{
    int y, m, d;

    if (read_digits(s, 4, &y) || s[4] != '-'
        || read_digits(s + 5, 2, &m) || s[7] != '-'
        || read_digits(s + 8, 2, &d)) {
        return -1;
    }
    if (y < 1970 || y > 9999 || m < 1 || m > 12
        || d < 1 || d > days_in_month(y, m)) {
        return -1;
    }
    *days = qrt_date_days_from_civil(y, m, d);
    return 0;
}

/* The offset at s, which must end the string. */
static int parse_offset(const char *s, int *offset)
{
    int sign, hh, mm;
    const char *p;

    if (s[0] == 'Z') {
        if (s[1] != '\0') {
            return -1;
        }
        *offset = 0;
        return 0;
    }
    if (s[0] == '+' || s[0] == ' ') {
        sign = 1;
    }
    else if (s[0] == '-') {
        sign = -1;
    }
    else {
        return -1;
    }
    if (read_digits(s + 1, 2, &hh)) {
        return -1;
    }
    p = s + 3;
    if (*p == ':') {
        p++;
    }
    if (read_digits(p, 2, &mm) || p[2] != '\0') {
        return -1;
    }
    if (mm > 59 || hh * 3600 + mm * 60 > QRT_DATE_MAX_OFFSET) {
        return -1;
    }
    *offset = sign * (hh * 3600 + mm * 60);
    return 0;
}

int qrt_date_parse(const char *s, apr_int64_t *t, int *offset)
{
    apr_int64_t days;
    int hh, mi, ss, off;

    if (!s) {
        return -1;
    }
    /* Each test reads one more byte only when the previous ones matched,
     * so a short string stops at its NUL. */
    if (parse_ymd(s, &days) || s[10] != 'T'
        || read_digits(s + 11, 2, &hh) || s[13] != ':'
        || read_digits(s + 14, 2, &mi) || s[16] != ':'
        || read_digits(s + 17, 2, &ss)) {
        return -1;
    }
    if (hh > 23 || mi > 59 || ss > 59) {
        return -1;
    }
    if (parse_offset(s + 19, &off)) {
        return -1;
    }
    if (t) {
        *t = days * SECS_PER_DAY + hh * 3600 + mi * 60 + ss - off;
    }
    if (offset) {
        *offset = off;
    }
    return 0;
}

int qrt_date_parse_day(const char *s, apr_int64_t *days)
{
    apr_int64_t d;

    if (!s || parse_ymd(s, &d) || s[10] != '\0') {
        return -1;
    }
    if (days) {
        *days = d;
    }
    return 0;
}

static char *put_num(char *p, apr_int64_t v, int width)
{
    int i;

    for (i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + width;
}

/* Writes "YYYY-MM-DD" (no NUL) for a day in DAY_MIN..DAY_MAX. */
static char *put_day(char *p, apr_int64_t days)
{
    apr_int64_t y;
    int m, d;

    qrt_date_civil_from_days(days, &y, &m, &d);
    p = put_num(p, y, 4);
    *p++ = '-';
    p = put_num(p, m, 2);
    *p++ = '-';
    return put_num(p, d, 2);
}

void qrt_date_format(char *buf, apr_int64_t t, int offset)
{
    apr_int64_t local, days, secs;
    int off, aoff;
    char *p = buf;

    off = (offset / 60) * 60;
    if (off > QRT_DATE_MAX_OFFSET) {
        off = QRT_DATE_MAX_OFFSET;
    }
    else if (off < -QRT_DATE_MAX_OFFSET) {
        off = -QRT_DATE_MAX_OFFSET;
    }
    t = clamp64(t, T_MIN - QRT_DATE_MAX_OFFSET, T_MAX + QRT_DATE_MAX_OFFSET);
    local = clamp64(t + off, T_MIN, T_MAX);
    days = floor_div(local, SECS_PER_DAY);
    secs = local - days * SECS_PER_DAY;

    p = put_day(p, days);
    *p++ = 'T';
    p = put_num(p, secs / 3600, 2);
    *p++ = ':';
    p = put_num(p, (secs / 60) % 60, 2);
    *p++ = ':';
    p = put_num(p, secs % 60, 2);
    *p++ = off < 0 ? '-' : '+';
    aoff = off < 0 ? -off : off;
    p = put_num(p, aoff / 3600, 2);
    p = put_num(p, (aoff / 60) % 60, 2);
    *p = '\0';
}

void qrt_date_format_day(char *buf, apr_int64_t days)
{
    char *p = put_day(buf, clamp64(days, DAY_MIN, DAY_MAX));

    *p = '\0';
}

apr_int64_t qrt_date_clamp(apr_int64_t t)
{
    return t < 0 ? 0 : t > QRT_DATE_T_MAX ? QRT_DATE_T_MAX : t;
}

apr_int64_t qrt_date_day_of(apr_int64_t t, int offset)
{
    apr_int64_t local;

    if (offset > 0 && t > APR_INT64_MAX - offset) {
        local = APR_INT64_MAX;
    }
    else if (offset < 0 && t < APR_INT64_MIN - offset) {
        local = APR_INT64_MIN;
    }
    else {
        local = t + offset;
    }
    return floor_div(local, SECS_PER_DAY);
}
