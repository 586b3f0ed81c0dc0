/* qrt_csv: RFC 4180 CSV cells and rows, UTF-8, with a formula-injection
 * guard for spreadsheet programs. */
#ifndef QRT_CSV_H
#define QRT_CSV_H

#include <apr_pools.h>

/* A fresh NUL-terminated copy of s (len bytes) in p in which every
 * ill-formed UTF-8 subpart is replaced by U+FFFD (EF BF BD), one per
 * maximal subpart as Unicode recommends, and so is every NUL byte (which
 * could not survive in a C string). A NULL s gives "". */
const char *qrt_csv_utf8_clean(apr_pool_t *p, const char *s, apr_size_t len);

/* One cell: NULL -> empty. Ill-formed UTF-8 becomes U+FFFD. A value whose
 * first byte is = + - @ TAB or CR gets a leading apostrophe (formula-
 * injection guard). Then the cell is wrapped in double quotes, with inner
 * quotes doubled, when it contains , " CR or LF, starts or ends with a
 * space or TAB, or got the guard. Result in p (may be v itself when v needs
 * no change). */
const char *qrt_csv_cell(apr_pool_t *p, const char *v);

/* A whole row of n cells (each through qrt_csv_cell; a NULL cells array is
 * n empty cells) joined by ',' and ended by CRLF. n <= 0 gives "\r\n". */
const char *qrt_csv_row(apr_pool_t *p, const char *const *cells, int n);

/* ---- reading ------------------------------------------------------------- */

/* A bounded RFC 4180 reader over a buffer held whole in memory: fields separated
 * by ',', records ended by CRLF, LF or CR; a field in double quotes may hold
 * commas, line breaks and doubled quotes. A UTF-8 byte order mark at the start is
 * skipped; lines with nothing on them are skipped. */
typedef struct qrt_csv_reader_t qrt_csv_reader_t;

/* A reader of buf (len bytes, not copied: it must outlive the reader). A record
 * longer than max_record bytes or with more than max_fields fields is refused. */
qrt_csv_reader_t *qrt_csv_reader_make(apr_pool_t *p, const char *buf, apr_size_t len,
                                      apr_size_t max_record, int max_fields);

/* The next record: APR_SUCCESS with *fields (*n NUL-terminated copies in p) and
 * *line (the 1-based line it starts on); APR_EOF when none is left. APR_ENOSPC for a
 * record past the bounds, APR_EINVAL for a malformed one (a quote inside an unquoted
 * field, text after a closing quote, a quote never closed, a NUL byte), with *err
 * saying which; the reader then goes on at the line after it. */
apr_status_t qrt_csv_read(qrt_csv_reader_t *rd, apr_pool_t *p, const char ***fields,
                          int *n, int *line, const char **err);

#endif /* QRT_CSV_H */
