/* qrt_peer: another link shortener's export read as trackers to import
 * (qrtrack-admin trackers import).
 *
 * Formats, each with the columns it carries (others are ignored):
 * - shlink: the web client's CSV export (header row; createdAt, shortUrl, shortCode,
 *   longUrl, title, tags separated by '|'; shortCode, when absent, is the last path
 *   segment of shortUrl), or the REST API's JSON list ({"shortUrls": {"data": [...]}}
 *   with shortCode, longUrl, title, tags, dateCreated), one or more pages one after
 *   the other.
 * - yourls: the yourls_url table as CSV (keyword, url, title, timestamp, ip, clicks,
 *   with or without a header row) or as a MySQL dump (INSERT INTO `..url` statements;
 *   other tables are skipped).
 * - kutt: the API's JSON list ({"data": [...]} with address, target, description,
 *   created_at), one or more pages.
 * - csv: code, redirect_url, name, tags (separated by ';'), created_at, with a header row.
 *
 * Every row comes out checked: a code of [A-Za-z0-9_-]{3,64}, an http or https
 * redirect URL (qrt_valid_redirect_url), at most QRT_TAGS_MAX valid tags (duplicates
 * dropped), a name of text (control characters become spaces, cut to QRT_PEER_NAME_MAX
 * bytes; empty: the URL's host), a creation time that parses (none given: 0). A row
 * that fails carries the reason and its position, and reading goes on.
 * Bounded: a CSV record or SQL row of at most QRT_PEER_RECORD_MAX bytes, a JSON input
 * of at most QRT_PEER_JSON_MAX bytes, at most QRT_PEER_ROWS_MAX rows. */
#ifndef QRT_PEER_H
#define QRT_PEER_H

#include <stdio.h>
#include <apr_pools.h>
#include <apr_tables.h>

typedef enum {
    QRT_PEER_SHLINK,
    QRT_PEER_YOURLS,
    QRT_PEER_KUTT,
    QRT_PEER_CSV
} qrt_peer_format_t;

#define QRT_PEER_RECORD_MAX (64 * 1024)
#define QRT_PEER_JSON_MAX (256 << 20)
#define QRT_PEER_ROWS_MAX 2000000
#define QRT_PEER_COLUMNS_MAX 64
#define QRT_PEER_NAME_MAX 255

typedef struct {
    long line;                  /* where the row starts: its line in the file, or its
                                 * number among a JSON input's items (qrt_peer_by_line) */
    const char *code;
    const char *url;
    const char *name;
    apr_array_header_t *tags;   /* const char * */
    apr_int64_t created_at;     /* epoch seconds; 0: not given */
    const char *error;          /* NULL, or why the row cannot be imported */
} qrt_peer_row_t;

/* Reads up to n bytes into buf: how many, 0 at the end, -1 on an error (errno). */
typedef long qrt_peer_read_fn(void *ctx, char *buf, apr_size_t n);

typedef struct qrt_peer_reader_t qrt_peer_reader_t;

/* The format named on the command line (shlink, yourls, kutt, csv); -1 for another. */
int qrt_peer_format_named(const char *name);

/* A reader of fmt over read(ctx), in p (which it uses for its buffers: about
 * 2 * QRT_PEER_RECORD_MAX, or the whole input for JSON). */
qrt_peer_reader_t *qrt_peer_open(apr_pool_t *p, qrt_peer_format_t fmt,
                                 qrt_peer_read_fn *read, void *ctx);
/* The same over a stdio stream, and over len bytes in memory. */
qrt_peer_reader_t *qrt_peer_open_file(apr_pool_t *p, qrt_peer_format_t fmt, FILE *f);
qrt_peer_reader_t *qrt_peer_open_mem(apr_pool_t *p, qrt_peer_format_t fmt,
                                     const char *buf, apr_size_t len);

/* The next row, its strings in rp: 1, 0 at the end, -1 when the input cannot be read
 * any further (qrt_peer_error says why; the rows before stand). */
int qrt_peer_next(qrt_peer_reader_t *r, apr_pool_t *rp, qrt_peer_row_t *row);
/* Why qrt_peer_next answered -1 (a sentence tail, in the reader's pool). */
const char *qrt_peer_error(const qrt_peer_reader_t *r);
/* 1 when rows are placed by line (CSV, SQL), 0 by item number (JSON); known after
 * the first qrt_peer_next. */
int qrt_peer_by_line(const qrt_peer_reader_t *r);

/* Epoch seconds of a peer's creation time: YYYY-MM-DD, then optionally T or a space
 * and HH:MM[:SS[.fraction]], then optionally Z, +hh, +hhmm or +hh:mm (none: UTC).
 * Empty, "null" and MySQL's zero date give 0. 0 when fine, -1 otherwise. */
int qrt_peer_date(const char *s, apr_int64_t *t);

#endif
