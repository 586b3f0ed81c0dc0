/* qrt_peer: see qrt_peer.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <jansson.h>

#include "qrt_peer.h"
#include "qrt_code.h"
#include "qrt_date.h"
#include "qrt_store.h"
#include "qrt_valid.h"

#define PEER_CHUNK (64 * 1024)

/* What a row is made of, by column or tuple position (peer_map). */
enum { F_CODE, F_SHORTURL, F_URL, F_NAME, F_TAGS, F_CREATED, F_COUNT };

/* How the input is read, decided from --from and its first bytes. */
enum { K_CSV, K_SQL, K_JSON };

struct qrt_peer_reader_t {
    apr_pool_t *p;
    qrt_peer_format_t fmt;
    qrt_peer_read_fn *read;
    void *ctx;
    char *buf;
    apr_size_t len, pos;
    int eof;
    long line;                  /* of the next byte */
    long rows;
    const char *error;
    int kind;
    int started;
    int header_cells;           /* CSV: the header's fields, 0 without a header */
    int map[F_COUNT];           /* column (CSV) or tuple position (SQL), -1: none */
    char tag_sep;
    /* a record's cells: bytes in rec, each cell's start in cell */
    char *rec;
    apr_size_t rec_len;
    apr_size_t cell[QRT_PEER_COLUMNS_MAX];
    int ncells;
    int in_values;              /* SQL: inside a url table's VALUES list */
    /* JSON: the whole input, the document being read and its items */
    char *text;
    apr_size_t text_len, text_off;
    json_t *doc;
    json_t *items;
    size_t item;
};

static const char *const peer_names[] = { "shlink", "yourls", "kutt", "csv" };

int qrt_peer_format_named(const char *name)
{
    int i;

    for (i = 0; name && i < 4; i++) {
        if (!strcmp(name, peer_names[i])) {
            return i;
        }
    }
    return -1;
}

static apr_status_t peer_doc_free(void *data)
{
    qrt_peer_reader_t *r = data;

    if (r->doc) {
        json_decref(r->doc);
        r->doc = NULL;
    }
    return APR_SUCCESS;
}

qrt_peer_reader_t *qrt_peer_open(apr_pool_t *p, qrt_peer_format_t fmt,
                                 qrt_peer_read_fn *read, void *ctx)
{
    qrt_peer_reader_t *r = apr_pcalloc(p, sizeof(*r));

    r->p = p;
    r->fmt = fmt;
    r->read = read;
    r->ctx = ctx;
    r->buf = apr_palloc(p, PEER_CHUNK);
    r->rec = apr_palloc(p, QRT_PEER_RECORD_MAX + QRT_PEER_COLUMNS_MAX + 1);
    r->line = 1;
    r->kind = fmt == QRT_PEER_KUTT ? K_JSON : K_CSV;
    apr_pool_cleanup_register(p, r, peer_doc_free, apr_pool_cleanup_null);
    return r;
}

static long peer_read_file(void *ctx, char *buf, apr_size_t n)
{
    FILE *f = ctx;
    size_t got = fread(buf, 1, n, f);

    if (got == 0 && ferror(f)) {
        return -1;
    }
    return (long)got;
}

qrt_peer_reader_t *qrt_peer_open_file(apr_pool_t *p, qrt_peer_format_t fmt, FILE *f)
{
    return qrt_peer_open(p, fmt, peer_read_file, f);
}

typedef struct {
    const char *buf;
    apr_size_t len, off;
} peer_mem;

static long peer_read_mem(void *ctx, char *buf, apr_size_t n)
{
    peer_mem *m = ctx;

    if (n > m->len - m->off) {
        n = m->len - m->off;
    }
    memcpy(buf, m->buf + m->off, n);
    m->off += n;
    return (long)n;
}

qrt_peer_reader_t *qrt_peer_open_mem(apr_pool_t *p, qrt_peer_format_t fmt,
                                     const char *buf, apr_size_t len)
{
    peer_mem *m = apr_pcalloc(p, sizeof(*m));

    m->buf = buf;
    m->len = len;
    return qrt_peer_open(p, fmt, peer_read_mem, m);
}

const char *qrt_peer_error(const qrt_peer_reader_t *r)
{
    return r->error;
}

int qrt_peer_by_line(const qrt_peer_reader_t *r)
{
    return r->kind != K_JSON;
}

/* -- bytes ------------------------------------------------------------------------ */

static int peer_fill(qrt_peer_reader_t *r)
{
    long n;

    if (r->eof) {
        return 0;
    }
    n = r->read(r->ctx, r->buf, PEER_CHUNK);
    if (n < 0) {
        r->error = apr_psprintf(r->p, "cannot read the input: %s", strerror(errno));
        r->eof = 1;
        return 0;
    }
    if (n == 0) {
        r->eof = 1;
        return 0;
    }
    r->len = (apr_size_t)n;
    r->pos = 0;
    return 1;
}

static int peer_peek(qrt_peer_reader_t *r)
{
    if (r->pos == r->len && !peer_fill(r)) {
        return EOF;
    }
    return (unsigned char)r->buf[r->pos];
}

static int peer_getc(qrt_peer_reader_t *r)
{
    int c = peer_peek(r);

    if (c != EOF) {
        r->pos++;
        if (c == '\n') {
            r->line++;
        }
    }
    return c;
}

/* -- rows ------------------------------------------------------------------------- */

static char *peer_trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t') {
        s++;
    }
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) {
        *--e = '\0';
    }
    return s;
}

int qrt_peer_date(const char *s, apr_int64_t *t)
{
    char norm[QRT_DATE_LEN];
    const char *c = s;
    int i;

    while (c && (*c == ' ' || *c == '\t')) {
        c++;
    }
    if (!c || !*c || !strcasecmp(c, "null") || !strncmp(c, "0000-00-00", 10)) {
        *t = 0;
        return 0;
    }
    /* YYYY-MM-DD */
    for (i = 0; i < 10; i++) {
        if (i == 4 || i == 7 ? c[i] != '-' : !apr_isdigit(c[i])) {
            return -1;
        }
    }
    memcpy(norm, c, 10);
    strcpy(norm + 10, "T00:00:00+0000");
    c += 10;
    if ((*c == 'T' || *c == ' ') && apr_isdigit(c[1])) {
        /* HH:MM[:SS][.fraction] */
        if (!apr_isdigit(c[2]) || c[3] != ':' || !apr_isdigit(c[4]) || !apr_isdigit(c[5])) {
            return -1;
        }
        memcpy(norm + 11, c + 1, 5);
        c += 6;
        if (*c == ':') {
            if (!apr_isdigit(c[1]) || !apr_isdigit(c[2])) {
                return -1;
            }
            memcpy(norm + 17, c + 1, 2);
            c += 3;
            if (*c == '.') {
                for (c++; apr_isdigit(*c); c++) {
                }
            }
        }
    }
    /* the offset */
    if (*c == 'Z' || *c == 'z') {
        c++;
    }
    else if (*c == '+' || *c == '-') {
        norm[19] = *c;
        if (!apr_isdigit(c[1]) || !apr_isdigit(c[2])) {
            return -1;
        }
        memcpy(norm + 20, c + 1, 2);
        c += 3;
        if (*c == ':') {
            c++;
        }
        if (apr_isdigit(c[0]) && apr_isdigit(c[1])) {
            memcpy(norm + 22, c, 2);
            c += 2;
        }
    }
    while (*c == ' ' || *c == '\t' || *c == '\r') {
        c++;
    }
    if (*c) {
        return -1;
    }
    norm[QRT_DATE_LEN - 1] = '\0';
    return qrt_date_parse(norm, t, NULL);
}

/* A name from a peer's title: valid UTF-8 (ill-formed bytes become U+FFFD), control
 * characters as spaces, trimmed, cut to QRT_PEER_NAME_MAX bytes on a character. */
static const char *peer_name(apr_pool_t *p, const char *s)
{
    char *n, *c;

    if (!s) {
        return NULL;
    }
    n = apr_pstrdup(p, qrt_valid_utf8_clean(p, s, strlen(s), 0));
    for (c = n; *c; c++) {
        unsigned char u = (unsigned char)*c;

        if (u < 0x20 || u == 0x7f) {
            *c = ' ';
        }
        else if (u == 0xc2 && ((unsigned char)c[1] >= 0x80 && (unsigned char)c[1] < 0xa0)) {
            c[0] = ' ';
            c[1] = ' ';
            c++;
        }
    }
    n = peer_trim(n);
    return qrt_valid_utf8_clean(p, n, strlen(n), QRT_PEER_NAME_MAX);
}

static void peer_add_tag(qrt_peer_row_t *row, const char *tag)
{
    int i;

    for (i = 0; i < row->tags->nelts; i++) {
        if (!strcmp(APR_ARRAY_IDX(row->tags, i, const char *), tag)) {
            return;
        }
    }
    APR_ARRAY_PUSH(row->tags, const char *) = tag;
}

/* Tags of a cell, separated by sep, each trimmed; empty ones dropped. */
static void peer_split_tags(qrt_peer_row_t *row, apr_pool_t *p, const char *s, char sep)
{
    char *copy = apr_pstrdup(p, s), *c = copy, *next;

    for (; c; c = next) {
        next = strchr(c, sep);
        if (next) {
            *next++ = '\0';
        }
        c = peer_trim(c);
        if (*c) {
            peer_add_tag(row, c);
        }
    }
}

/* The last path segment of a short URL: its code. */
static const char *peer_code_of_url(apr_pool_t *p, const char *url)
{
    const char *s = strstr(url, "://"), *e;

    s = s ? s + 3 : url;
    s = strchr(s, '/');
    if (!s) {
        return "";
    }
    e = s + strcspn(s, "?#");
    while (e > s && e[-1] == '/') {
        e--;
    }
    for (s = e; s > url && s[-1] != '/'; s--) {
    }
    return apr_pstrmemdup(p, s, (apr_size_t)(e - s));
}

/* Checks a row whose fields are set; row->error gets the first reason. */
static void peer_check(qrt_peer_row_t *row, apr_pool_t *p, const char *created)
{
    const char *why;
    int i;

    if (!row->error && (!row->code || !*row->code)) {
        row->error = "no short code";
    }
    if (!row->error && !qrt_code_custom_valid(row->code)) {
        row->error = "the short code is not 3 to 64 letters, digits, '_' or '-'";
    }
    if (!row->error && (!row->url || !*row->url)) {
        row->error = "no destination URL";
    }
    if (!row->error && (why = qrt_valid_redirect_url(row->url)) != NULL) {
        row->error = apr_pstrcat(p, "the destination URL ", why, NULL);
    }
    if (!row->error && row->tags->nelts > QRT_TAGS_MAX) {
        row->error = apr_psprintf(p, "more than %d tags", QRT_TAGS_MAX);
    }
    for (i = 0; !row->error && i < row->tags->nelts; i++) {
        why = qrt_valid_tag(APR_ARRAY_IDX(row->tags, i, const char *));
        if (why) {
            row->error = apr_psprintf(p, "tag %d %s", i + 1, why);
        }
    }
    if (!row->error && qrt_peer_date(created, &row->created_at) != 0) {
        row->error = "the creation time is not a date";
    }
    if (!row->error && (!row->name || !*row->name)) {
        row->name = qrt_url_host(p, row->url);
    }
    if (row->error) {
        row->created_at = 0;
    }
}

static void peer_row_init(qrt_peer_row_t *row, apr_pool_t *p, long line)
{
    memset(row, 0, sizeof(*row));
    row->line = line;
    row->tags = apr_array_make(p, 4, sizeof(const char *));
}

/* A row of text fields (CSV cells, SQL values), v[F_*] NULL when absent. */
static void peer_row_of(qrt_peer_reader_t *r, apr_pool_t *p, qrt_peer_row_t *row,
                        const char *const *v)
{
    char *code = v[F_CODE] ? peer_trim(apr_pstrdup(p, v[F_CODE])) : NULL;

    if ((!code || !*code) && v[F_SHORTURL]) {
        code = apr_pstrdup(p, peer_code_of_url(p, peer_trim(apr_pstrdup(p, v[F_SHORTURL]))));
    }
    row->code = code;
    row->url = v[F_URL] ? peer_trim(apr_pstrdup(p, v[F_URL])) : NULL;
    row->name = peer_name(p, v[F_NAME]);
    if (v[F_TAGS] && r->tag_sep) {
        peer_split_tags(row, p, v[F_TAGS], r->tag_sep);
    }
    peer_check(row, p, v[F_CREATED]);
}

/* -- CSV -------------------------------------------------------------------------- */

/* What the rest of a record past its bounds may hold before the input is refused. */
#define PEER_SKIP_MAX ((apr_size_t)16 << 20)

/* One record (RFC 4180, leniently: a quote inside an unquoted cell is a character,
 * text after a closing quote is kept) into r->rec and r->cell; *line gets where it
 * starts. 0 at the end of the input, -1 (r->error) past PEER_SKIP_MAX of a record.
 * *why: a record too long (the rest of its line is skipped), too many columns, a NUL
 * byte, a quote not closed. */
static int csv_record(qrt_peer_reader_t *r, long *line, const char **why)
{
    int c, quoted = 0, opened = 0, any = 0, over = 0;
    apr_size_t skipped = 0;

    r->rec_len = 0;
    r->ncells = 1;
    r->cell[0] = 0;
    *why = NULL;
    *line = r->line;
    for (;;) {
        c = peer_getc(r);
        if (c == EOF) {
            if (!any) {
                return 0;
            }
            if (quoted && !*why) {
                *why = "a quoted field is not closed";
            }
            break;
        }
        any = 1;
        if (over && ++skipped > PEER_SKIP_MAX) {
            /* (an input without line ends, /dev/zero say, was read for ever) */
            r->error = apr_psprintf(r->p, "line %ld: a record of more than 16 MB: not a "
                                    "CSV file", *line);
            return -1;
        }
        if (quoted) {
            if (c == '"') {
                if (peer_peek(r) == '"') {
                    peer_getc(r);
                }
                else {
                    quoted = 0;
                    continue;
                }
            }
        }
        else if (c == ',') {
            if (r->ncells == QRT_PEER_COLUMNS_MAX) {
                *why = *why ? *why : "more than 64 columns";
                over = 1;
                continue;
            }
            if (!over) {
                r->rec[r->rec_len++] = '\0';
                r->cell[r->ncells++] = r->rec_len;
                opened = 0;
            }
            continue;
        }
        else if (c == '\n') {
            break;
        }
        else if (c == '\r') {
            if (peer_peek(r) == '\n') {
                peer_getc(r);
            }
            break;
        }
        else if (c == '"' && !opened && r->rec_len == r->cell[r->ncells - 1]) {
            quoted = opened = 1;
            continue;
        }
        if (c == '\0') {
            *why = *why ? *why : "a NUL byte";
        }
        if (over) {
            continue;
        }
        if (r->rec_len >= QRT_PEER_RECORD_MAX) {
            *why = "the record is longer than 64 KB";
            /* the rest of the line is skipped, quotes or not */
            over = 1;
            quoted = 0;
            continue;
        }
        r->rec[r->rec_len++] = (char)c;
    }
    r->rec[r->rec_len] = '\0';
    return 1;
}

static const char *csv_cell(qrt_peer_reader_t *r, int i)
{
    return i >= 0 && i < r->ncells ? r->rec + r->cell[i] : NULL;
}

/* The header's columns for the format: each field's column; NULL or a reason. */
static const char *csv_header(qrt_peer_reader_t *r)
{
    static const char *const names[][F_COUNT] = {
        /* F_CODE, F_SHORTURL, F_URL, F_NAME, F_TAGS, F_CREATED */
        { "shortCode", "shortUrl", "longUrl", "title", "tags", "createdAt" },
        { "keyword", NULL, "url", "title", NULL, "timestamp" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
        { "code", NULL, "redirect_url", "name", "tags", "created_at" },
    };
    int f, i;

    for (f = 0; f < F_COUNT; f++) {
        r->map[f] = -1;
        for (i = 0; names[r->fmt][f] && i < r->ncells; i++) {
            char *h = peer_trim(r->rec + r->cell[i]);

            if (!strcasecmp(h, names[r->fmt][f])
                || (f == F_CREATED && r->fmt == QRT_PEER_SHLINK && !strcasecmp(h, "dateCreated"))) {
                if (r->map[f] >= 0) {
                    return apr_psprintf(r->p, "its first line names the %s column twice", h);
                }
                r->map[f] = i;
            }
        }
    }
    r->header_cells = r->ncells;
    if (r->map[F_URL] < 0) {
        return apr_psprintf(r->p, "its first line names no %s column", names[r->fmt][F_URL]);
    }
    if (r->map[F_CODE] < 0 && r->map[F_SHORTURL] < 0) {
        return apr_psprintf(r->p, "its first line names no %s column", names[r->fmt][F_CODE]);
    }
    return NULL;
}

/* 1 when a cell of the record is name (a header names it in any column). */
static int csv_names(qrt_peer_reader_t *r, const char *name)
{
    int i;

    for (i = 0; i < r->ncells; i++) {
        if (!strcasecmp(peer_trim(r->rec + r->cell[i]), name)) {
            return 1;
        }
    }
    return 0;
}

static int csv_next(qrt_peer_reader_t *r, apr_pool_t *p, qrt_peer_row_t *row)
{
    const char *why, *v[F_COUNT];
    long line;
    int f;

    for (;;) {
        int rc = csv_record(r, &line, &why);

        if (rc <= 0) {
            return rc;
        }
        if (!r->started) {
            r->started = 1;
            r->tag_sep = r->fmt == QRT_PEER_SHLINK ? '|' : r->fmt == QRT_PEER_CSV ? ';' : 0;
            if (r->fmt == QRT_PEER_YOURLS && !csv_names(r, "keyword")) {
                /* no header: the table's own column order */
                r->map[F_CODE] = 0;
                r->map[F_SHORTURL] = -1;
                r->map[F_URL] = 1;
                r->map[F_NAME] = 2;
                r->map[F_TAGS] = -1;
                r->map[F_CREATED] = 3;
            }
            else {
                if (why || (r->error = csv_header(r)) != NULL) {
                    r->error = r->error ? r->error : apr_pstrcat(r->p, "its first line: ", why, NULL);
                    return -1;
                }
                continue;
            }
        }
        if (r->ncells == 1 && r->rec_len == 0 && !why) {
            continue;               /* a blank line */
        }
        break;
    }
    peer_row_init(row, p, line);
    if (!why && r->header_cells && r->ncells != r->header_cells) {
        /* (a comma in an unquoted name made its row's fields slide: "Smith, John" was
         * named "Smith" and tagged "John") */
        why = apr_psprintf(p, "it has %d fields; the first line has %d", r->ncells,
                           r->header_cells);
    }
    if (why) {
        row->error = why;
        return 1;
    }
    for (f = 0; f < F_COUNT; f++) {
        v[f] = csv_cell(r, r->map[f]);
    }
    peer_row_of(r, p, row, v);
    return 1;
}

/* -- SQL (mysqldump of YOURLS) ---------------------------------------------------- */

/* Skips blanks and comments (-- and # to the end of the line, C comments). */
static void sql_blank(qrt_peer_reader_t *r)
{
    int c;

    for (;;) {
        c = peer_peek(r);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            peer_getc(r);
        }
        else if (c == '#' || c == '-') {
            if (c == '-') {
                peer_getc(r);
                if (peer_peek(r) != '-') {
                    /* a lone '-': not a comment; the statement's text (skipped) */
                    return;
                }
            }
            while ((c = peer_getc(r)) != EOF && c != '\n') {
            }
        }
        else if (c == '/') {
            int prev = 0;

            peer_getc(r);
            if (peer_peek(r) != '*') {
                return;
            }
            peer_getc(r);
            while ((c = peer_getc(r)) != EOF && !(prev == '*' && c == '/')) {
                prev = c;
            }
        }
        else {
            return;
        }
    }
}

/* A quoted string after its opening quote q, into out (up to max bytes, more is
 * dropped and *over set); MySQL's backslash escapes and doubled quotes. -1 when the
 * input ends first. */
static int sql_string(qrt_peer_reader_t *r, int q, char *out, apr_size_t max,
                      apr_size_t *len, int *over, int *nul)
{
    int c;

    for (;;) {
        c = peer_getc(r);
        if (c == EOF) {
            return -1;
        }
        if (c == q) {
            if (peer_peek(r) != q) {
                return 0;
            }
            peer_getc(r);
        }
        else if (c == '\\' && q != '`') {
            c = peer_getc(r);
            switch (c) {
            case EOF: return -1;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case 'Z': c = 0x1a; break;
            case '0': c = '\0'; break;
            default: break;
            }
        }
        if (c == '\0') {
            *nul = 1;
        }
        if (out && *len < max) {
            out[(*len)++] = (char)c;
        }
        else if (out) {
            *over = 1;
        }
    }
}

/* A bare word (letters, digits, '_', '$', '.'), upper-cased, at most n - 1 bytes. */
static void sql_word(qrt_peer_reader_t *r, char *w, apr_size_t n)
{
    apr_size_t i = 0;
    int c;

    while ((c = peer_peek(r)) != EOF && (apr_isalnum(c) || c == '_' || c == '$' || c == '.')) {
        peer_getc(r);
        if (i + 1 < n) {
            w[i++] = (char)apr_toupper(c);
        }
    }
    w[i] = '\0';
}

/* An identifier, `quoted` or bare, lower-cased into w; a qualified name's last part. */
static int sql_ident(qrt_peer_reader_t *r, char *w, apr_size_t n)
{
    apr_size_t len;
    int over = 0, nul = 0, c;

    for (;;) {
        sql_blank(r);
        c = peer_peek(r);
        len = 0;
        if (c == '`' || c == '"') {
            peer_getc(r);
            if (sql_string(r, c, w, n - 1, &len, &over, &nul) != 0) {
                return -1;
            }
            w[len] = '\0';
        }
        else if (apr_isalnum(c) || c == '_') {
            sql_word(r, w, n);
            len = strlen(w);
        }
        else {
            return -1;
        }
        for (; len > 0; len--) {
            w[len - 1] = (char)apr_tolower(w[len - 1]);
        }
        if (strchr(w, '.')) {
            memmove(w, strrchr(w, '.') + 1, strlen(strrchr(w, '.')));
        }
        sql_blank(r);
        if (peer_peek(r) != '.') {
            return 0;
        }
        peer_getc(r);
    }
}

/* Skips to the end of the statement (a ';' outside strings and comments). */
static void sql_skip(qrt_peer_reader_t *r)
{
    apr_size_t len = 0;
    int over = 0, nul = 0, c;

    for (;;) {
        sql_blank(r);
        c = peer_getc(r);
        if (c == EOF || c == ';') {
            return;
        }
        if (c == '\'' || c == '"' || c == '`') {
            if (sql_string(r, c, NULL, 0, &len, &over, &nul) != 0) {
                return;
            }
        }
    }
}

/* INSERT [IGNORE] INTO table [(columns)] VALUES: 1 when table is YOURLS's url table
 * (its name ends in "url") and its VALUES follow, with r->map set. */
static int sql_insert(qrt_peer_reader_t *r)
{
    static const char *const cols[] = { "keyword", NULL, "url", "title", NULL, "timestamp" };
    char w[128];
    int f, pos = 0;
    apr_size_t n;

    sql_blank(r);
    sql_word(r, w, sizeof(w));
    if (!strcmp(w, "IGNORE")) {
        sql_blank(r);
        sql_word(r, w, sizeof(w));
    }
    if (strcmp(w, "INTO") || sql_ident(r, w, sizeof(w)) != 0) {
        return 0;
    }
    n = strlen(w);
    if (n < 3 || strcmp(w + n - 3, "url")) {
        return 0;
    }
    /* the table's own order: keyword, url, title, timestamp, ip, clicks */
    r->map[F_CODE] = 0;
    r->map[F_SHORTURL] = -1;
    r->map[F_URL] = 1;
    r->map[F_NAME] = 2;
    r->map[F_TAGS] = -1;
    r->map[F_CREATED] = 3;
    if (peer_peek(r) == '(') {
        peer_getc(r);
        for (f = 0; f < F_COUNT; f++) {
            r->map[f] = -1;
        }
        for (;;) {
            if (sql_ident(r, w, sizeof(w)) != 0) {
                return 0;
            }
            for (f = 0; f < F_COUNT; f++) {
                if (cols[f] && !strcmp(w, cols[f]) && pos < QRT_PEER_COLUMNS_MAX) {
                    r->map[f] = pos;
                }
            }
            pos++;
            sql_blank(r);
            if (peer_peek(r) == ',') {
                peer_getc(r);
                continue;
            }
            if (peer_getc(r) != ')') {
                return 0;
            }
            break;
        }
        if (r->map[F_CODE] < 0 || r->map[F_URL] < 0) {
            return 0;
        }
    }
    sql_blank(r);
    sql_word(r, w, sizeof(w));
    return !strcmp(w, "VALUES") || !strcmp(w, "VALUE");
}

/* One tuple after its '(' into r->rec and r->cell (NULL values as a cell of their
 * own marker: cell index -1 is not used; an SQL NULL is kept as ""). */
static int sql_tuple(qrt_peer_reader_t *r, const char **why)
{
    int c, over = 0, nul = 0;

    r->rec_len = 0;
    r->ncells = 0;
    for (;;) {
        sql_blank(r);
        c = peer_peek(r);
        if (r->ncells < QRT_PEER_COLUMNS_MAX) {
            r->cell[r->ncells++] = r->rec_len;
        }
        else {
            *why = "more than 64 values";
        }
        if (c == '\'' || c == '"') {
            apr_size_t len = r->rec_len;

            peer_getc(r);
            if (sql_string(r, c, r->rec, QRT_PEER_RECORD_MAX, &len, &over, &nul) != 0) {
                return -1;
            }
            r->rec_len = len;
        }
        else {
            char w[64];

            sql_word(r, w, sizeof(w));
            if (!*w && (c == '-' || c == '+')) {
                peer_getc(r);
                sql_word(r, w, sizeof(w));
            }
            if (strcmp(w, "NULL") && r->rec_len + strlen(w) < QRT_PEER_RECORD_MAX) {
                memcpy(r->rec + r->rec_len, w, strlen(w));
                r->rec_len += strlen(w);
            }
        }
        if (r->rec_len < QRT_PEER_RECORD_MAX) {
            r->rec[r->rec_len++] = '\0';
        }
        else {
            over = 1;
        }
        sql_blank(r);
        c = peer_getc(r);
        if (c == ')') {
            break;
        }
        if (c != ',') {
            return -1;
        }
    }
    if (over) {
        *why = "the row is longer than 64 KB";
    }
    else if (nul) {
        *why = "a NUL byte";
    }
    r->rec[r->rec_len < QRT_PEER_RECORD_MAX ? r->rec_len : QRT_PEER_RECORD_MAX] = '\0';
    return 0;
}

static int sql_next(qrt_peer_reader_t *r, apr_pool_t *p, qrt_peer_row_t *row)
{
    const char *why = NULL, *v[F_COUNT];
    char w[32];
    long line;
    int c, f;

    r->tag_sep = 0;
    for (;;) {
        sql_blank(r);
        if (r->in_values) {
            c = peer_getc(r);
            if (c == ',') {
                continue;
            }
            if (c == ';' || c == EOF) {
                r->in_values = 0;
                continue;
            }
            if (c != '(') {
                r->error = apr_psprintf(r->p, "line %ld: a row of VALUES does not "
                                        "start with '('", r->line);
                return -1;
            }
            break;
        }
        if (peer_peek(r) == EOF) {
            return 0;
        }
        sql_word(r, w, sizeof(w));
        if (!strcmp(w, "INSERT") || !strcmp(w, "REPLACE")) {
            if (sql_insert(r)) {
                r->in_values = 1;
                continue;
            }
        }
        else if (!*w && peer_peek(r) != EOF && peer_peek(r) != ';'
                 && peer_peek(r) != '\'' && peer_peek(r) != '"' && peer_peek(r) != '`') {
            peer_getc(r);           /* punctuation between statements */
            continue;
        }
        sql_skip(r);
    }
    line = r->line;
    if (sql_tuple(r, &why) != 0) {
        r->error = apr_psprintf(r->p, "line %ld: a row of VALUES is not closed", line);
        return -1;
    }
    peer_row_init(row, p, line);
    if (why) {
        row->error = why;
        return 1;
    }
    for (f = 0; f < F_COUNT; f++) {
        v[f] = csv_cell(r, r->map[f]);
    }
    peer_row_of(r, p, row, v);
    return 1;
}

/* -- JSON (Shlink's and Kutt's APIs) ---------------------------------------------- */

/* The whole input, at most QRT_PEER_JSON_MAX bytes. */
static apr_status_t peer_text_free(void *data)
{
    qrt_peer_reader_t *r = data;

    free(r->text);
    r->text = NULL;
    return APR_SUCCESS;
}

/* The whole input in r->text, grown in place (malloc'd: each larger copy in the pool kept
 * every one before it, 530 MB for 256 MB) and checked (an allocation that failed was
 * written through). */
static int json_slurp(qrt_peer_reader_t *r)
{
    apr_size_t cap = PEER_CHUNK;

    r->text = malloc(cap + 1);
    if (!r->text) {
        r->error = "out of memory reading the input";
        return -1;
    }
    apr_pool_cleanup_register(r->p, r, peer_text_free, apr_pool_cleanup_null);
    r->text_len = 0;
    /* what the format's sniffing read already */
    memcpy(r->text, r->buf + r->pos, r->len - r->pos);
    r->text_len = r->len - r->pos;
    r->pos = r->len;
    while (peer_fill(r)) {
        if (r->text_len + r->len > QRT_PEER_JSON_MAX) {
            r->error = "the input is larger than 256 MB";
            return -1;
        }
        if (r->text_len + r->len > cap) {
            char *bigger;

            while (cap < r->text_len + r->len) {
                cap *= 2;
            }
            bigger = realloc(r->text, cap + 1);
            if (!bigger) {
                r->error = "out of memory reading the input";
                return -1;
            }
            r->text = bigger;
        }
        memcpy(r->text + r->text_len, r->buf, r->len);
        r->text_len += r->len;
        r->pos = r->len;
    }
    return r->error ? -1 : 0;
}

/* The next document's item list: Shlink's shortUrls.data, Kutt's data, or an array. */
static int json_doc(qrt_peer_reader_t *r)
{
    json_error_t err;
    json_t *d;

    while (r->text_off < r->text_len && apr_isspace(r->text[r->text_off])) {
        r->text_off++;
    }
    if (r->text_off == r->text_len) {
        return 0;
    }
    peer_doc_free(r);
    r->doc = json_loadb(r->text + r->text_off, r->text_len - r->text_off,
                        JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &err);
    if (!r->doc) {
        r->error = apr_psprintf(r->p, "not JSON: %s (line %d of the document)", err.text,
                                err.line);
        return -1;
    }
    r->text_off += (apr_size_t)err.position;
    d = r->doc;
    if (r->fmt == QRT_PEER_SHLINK && json_is_object(d) && json_object_get(d, "shortUrls")) {
        d = json_object_get(d, "shortUrls");
    }
    if (json_is_object(d)) {
        d = json_object_get(d, "data");
    }
    if (!json_is_array(d)) {
        r->error = r->fmt == QRT_PEER_SHLINK
            ? "not a Shlink list: no shortUrls.data array"
            : "not a Kutt list: no data array";
        return -1;
    }
    r->items = d;
    r->item = 0;
    return 1;
}

/* A string member: *v set (NULL when absent or null); 0, or -1 for another type. */
static int json_str(json_t *o, const char *k, const char **v)
{
    json_t *m = json_object_get(o, k);

    *v = NULL;
    if (!m || json_is_null(m)) {
        return 0;
    }
    if (!json_is_string(m)) {
        return -1;
    }
    *v = json_string_value(m);
    return 0;
}

static void json_row(qrt_peer_reader_t *r, apr_pool_t *p, qrt_peer_row_t *row, json_t *o)
{
    static const char *const keys[][F_COUNT] = {
        { "shortCode", "shortUrl", "longUrl", "title", "tags", "dateCreated" },
        { "address", "link", "target", "description", NULL, "created_at" },
    };
    const char *const *k = keys[r->fmt == QRT_PEER_KUTT];
    const char *v[F_COUNT];
    int f;

    if (!json_is_object(o)) {
        row->error = "not an object";
        return;
    }
    for (f = 0; f < F_COUNT; f++) {
        v[f] = NULL;
        if (k[f] && f != F_TAGS && json_str(o, k[f], &v[f]) != 0) {
            row->error = apr_pstrcat(p, k[f], " is not a string", NULL);
            return;
        }
    }
    if (k[F_TAGS]) {
        json_t *tags = json_object_get(o, k[F_TAGS]), *t;
        size_t i;

        if (tags && !json_is_null(tags) && !json_is_array(tags)) {
            row->error = "tags is not a list";
            return;
        }
        json_array_foreach(tags, i, t) {
            if (!json_is_string(t)) {
                row->error = "a tag is not a string";
                return;
            }
            peer_add_tag(row, apr_pstrdup(p, json_string_value(t)));
        }
    }
    r->tag_sep = 0;
    peer_row_of(r, p, row, v);
}

static int json_next(qrt_peer_reader_t *r, apr_pool_t *p, qrt_peer_row_t *row)
{
    int rc;

    if (!r->text && json_slurp(r) != 0) {
        return -1;
    }
    while (!r->items || r->item >= json_array_size(r->items)) {
        r->items = NULL;
        rc = json_doc(r);
        if (rc <= 0) {
            return rc;
        }
    }
    peer_row_init(row, p, r->rows + 1);
    json_row(r, p, row, json_array_get(r->items, r->item++));
    return 1;
}

/* -- the reader ------------------------------------------------------------------- */

/* How the input reads, from --from and its first bytes (a BOM is skipped). */
static void peer_sniff(qrt_peer_reader_t *r)
{
    apr_size_t i;
    char w[16];
    int n = 0;

    if (!peer_fill(r)) {
        r->kind = r->fmt == QRT_PEER_KUTT ? K_JSON : K_CSV;
        if (!r->error) {
            r->error = "it is empty";       /* (a failed export, a wrong path: no format) */
        }
        return;
    }
    if (r->len >= 3 && !memcmp(r->buf, "\xEF\xBB\xBF", 3)) {
        r->pos = 3;
    }
    for (i = r->pos; i < r->len && apr_isspace(r->buf[i]); i++) {
    }
    /* Blank space alone, to its end (a short read is the end: a file's fread fills the
     * buffer otherwise), is as empty: none of the formats, not even a header. */
    if (i == r->len && r->len < PEER_CHUNK) {
        r->kind = r->fmt == QRT_PEER_KUTT ? K_JSON : K_CSV;
        r->error = "it is empty";
        return;
    }
    if (r->fmt == QRT_PEER_KUTT
        || (r->fmt == QRT_PEER_SHLINK && i < r->len && (r->buf[i] == '{' || r->buf[i] == '['))) {
        r->kind = K_JSON;
        return;
    }
    r->kind = K_CSV;
    if (r->fmt != QRT_PEER_YOURLS || i == r->len) {
        return;
    }
    if (r->buf[i] == '#' || (i + 1 < r->len && (!memcmp(r->buf + i, "--", 2)
                                                 || !memcmp(r->buf + i, "/*", 2)))) {
        r->kind = K_SQL;
        return;
    }
    while (i < r->len && apr_isalpha(r->buf[i]) && n < 15) {
        w[n++] = (char)apr_toupper(r->buf[i++]);
    }
    w[n] = '\0';
    if (i < r->len && apr_isspace(r->buf[i])
        && (!strcmp(w, "INSERT") || !strcmp(w, "SET") || !strcmp(w, "CREATE")
            || !strcmp(w, "DROP") || !strcmp(w, "LOCK") || !strcmp(w, "USE")
            || !strcmp(w, "START") || !strcmp(w, "BEGIN") || !strcmp(w, "REPLACE"))) {
        r->kind = K_SQL;
    }
}

int qrt_peer_next(qrt_peer_reader_t *r, apr_pool_t *rp, qrt_peer_row_t *row)
{
    int rc;

    if (r->error) {
        return -1;
    }
    if (!r->len && !r->eof) {
        peer_sniff(r);
        if (r->error) {
            return -1;
        }
    }
    if (r->rows >= QRT_PEER_ROWS_MAX) {
        r->error = apr_psprintf(r->p, "more than %d rows", QRT_PEER_ROWS_MAX);
        return -1;
    }
    rc = r->kind == K_JSON ? json_next(r, rp, row)
        : r->kind == K_SQL ? sql_next(r, rp, row) : csv_next(r, rp, row);
    if (rc == 0 && r->error) {
        rc = -1;                    /* a read error ended the input */
    }
    if (rc == 1) {
        r->rows++;
    }
    return rc;
}
