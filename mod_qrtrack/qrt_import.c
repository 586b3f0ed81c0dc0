/* qrt_import: the lines of `qrtrack-admin visits import`, read ahead in a thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>
#include <apr_thread_cond.h>
#include <jansson.h>
#include "qrt_date.h"
#include "qrt_import.h"
#include "qrt_ip.h"
#include "qrt_jsonl.h"
#include "qrt_spare.h"
#include "qrt_valid.h"

/* Members of a line read in one pass (qrt_jsonl_flat); a line with more goes to jansson. */
#define IMPORT_MEMBERS 32

/* A string member; *bad set (to the first such member's error) when it has the wrong
 * type or is too long. */
static const char *import_str(apr_pool_t *p, const qrt_jv_t *m, int n, const char *k,
                              apr_size_t max, const char **bad)
{
    const qrt_jv_t *v = qrt_jsonl_get(m, n, k);

    if (!v || v->type == QRT_JV_NULL) {
        return NULL;
    }
    if (v->type != QRT_JV_STR || v->len > max || qrt_valid_text(v->str, v->len, 1)) {
        if (!*bad) {
            *bad = apr_psprintf(p, "bad %s (%s)", k, v->type != QRT_JV_STR ? "not a string"
                                : v->len > max ? apr_psprintf(p, "more than %lu bytes",
                                                              (unsigned long)max)
                                : "not valid UTF-8 text without control characters");
        }
        return NULL;
    }
    return apr_pstrmemdup(p, v->str, v->len);
}

/* The members of a line that qrt_jsonl_flat declined, read with jansson (in p):
 * NULL when the line is not a JSON object, or (*repeated 1) names a member twice, or (2)
 * holds a number past 64 bits. */
static qrt_jv_t *import_members(apr_pool_t *p, const char *line, int *n, int *repeated)
{
    json_error_t je;
    json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &je), *v;
    const char *k;
    qrt_jv_t *m = NULL;

    *n = 0;
    *repeated = !o ? (json_error_code(&je) == json_error_duplicate_key ? 1
                      : json_error_code(&je) == json_error_numeric_overflow ? 2 : 0) : 0;
    if (o && json_is_object(o)) {
        m = apr_pcalloc(p, (json_object_size(o) + 1) * sizeof(*m));
        json_object_foreach(o, k, v) {
            qrt_jv_t *x = &m[(*n)++];

            x->key = apr_pstrdup(p, k);
            x->keylen = strlen(k);
            x->type = json_is_string(v) ? QRT_JV_STR : json_is_integer(v) ? QRT_JV_INT
                    : json_is_true(v) ? QRT_JV_TRUE : json_is_false(v) ? QRT_JV_FALSE
                    : json_is_null(v) ? QRT_JV_NULL : QRT_JV_OTHER;
            if (x->type == QRT_JV_STR) {
                x->len = json_string_length(v);
                x->str = apr_pstrmemdup(p, json_string_value(v), x->len);
            }
            x->num = x->type == QRT_JV_INT ? json_integer_value(v) : 0;
        }
    }
    json_decref(o);
    return m;
}

/* One of the five devices a scan gets (qrt_ua.c). */
static int import_device(const char *d)
{
    static const char *const devices[] = { "mobile", "tablet", "desktop", "bot", "other",
                                           NULL };
    int i;

    for (i = 0; devices[i]; i++) {
        if (!strcmp(d, devices[i])) {
            return 1;
        }
    }
    return 0;
}

/* qrt_import_line; with ids 0 the visit is only checked: no visitor id (a by-time
 * reader's first reading of a line, which keeps its time and tracker only). */
static int import_line(apr_pool_t *p, char *line, apr_size_t len,
                       const qrt_visitor_key_t *key, qrt_visit_t *v, const char **why, int ids)
{
    qrt_jv_t fast[IMPORT_MEMBERS], *m = fast;
    const qrt_jv_t *id, *bot, *twice;
    const char *when;
    const char *bad = NULL;
    int off, nm = 0, repeated = 0;

    *why = NULL;
    /* A NUL anywhere (at the start, or after a whole object) is no blank line and
     * no end of the line: an error. */
    if (memchr(line, '\0', len)) {
        *why = "a NUL byte";
        return -1;
    }
    if (line[strspn(line, " \t\r\n")] == '\0') {
        return 0;
    }
    /* The common line in one pass; any other through jansson. */
    if (qrt_jsonl_flat(line, len, fast, IMPORT_MEMBERS, &nm) != 0
        && (m = import_members(p, line, &nm, &repeated)) == NULL) {
        *why = repeated == 1 ? "a member named twice"
             : repeated == 2 ? "a number out of range (at most 2^63 - 1)" : "not a JSON object";
        return -1;
    }
    /* (as the API: which of the two was meant is not for the reader to guess) */
    if ((twice = qrt_jsonl_repeated(m, nm)) != NULL) {
        apr_size_t i;

        /* (named when it is a plain name, never with a file's control bytes) */
        for (i = 0; i < twice->keylen && twice->keylen <= 64
                    && twice->key[i] > ' ' && twice->key[i] < 0x7f; i++) {
        }
        *why = i && i == twice->keylen ? apr_psprintf(p, "%.*s named twice", (int)i,
                                                      twice->key)
                                       : "a member named twice";
        return -1;
    }
    memset(v, 0, sizeof(*v));
    id = qrt_jsonl_get(m, nm, "tracker_id");
    bot = qrt_jsonl_get(m, nm, "bot");
    when = import_str(p, m, nm, "visit_start", 64, &bad);
    v->source = import_str(p, m, nm, "source", 8, &bad);
    v->ip = import_str(p, m, nm, "ip", 64, &bad);
    v->country = import_str(p, m, nm, "country", 8, &bad);
    v->city = import_str(p, m, nm, "city", 128, &bad);
    v->browser = import_str(p, m, nm, "browser", 64, &bad);
    v->browser_version = import_str(p, m, nm, "browser_version", 32, &bad);
    v->os = import_str(p, m, nm, "os", 64, &bad);
    v->device = import_str(p, m, nm, "device", 16, &bad);
    v->referer = import_str(p, m, nm, "referer", QRT_VISIT_REFERER_MAX, &bad);
    v->user_agent = import_str(p, m, nm, "user_agent", 1024, &bad);
    v->destination = import_str(p, m, nm, "destination", QRT_URL_MAX, &bad);
    if (!id || id->type != QRT_JV_INT || id->num <= 0) {
        *why = "bad tracker_id";
    }
    else if (!when || qrt_date_parse(when, &v->visit_start, &off) != 0
             || v->visit_start < 0 || v->visit_start > QRT_DATE_T_MAX) {
        *why = "bad visit_start";
    }
    else if (!v->source || (strcmp(v->source, "scan") && strcmp(v->source, "click"))) {
        *why = "bad source (scan or click)";
    }
    else if (bot && bot->type != QRT_JV_TRUE && bot->type != QRT_JV_FALSE) {
        *why = "bad bot";
    }
    else if (bad) {
        *why = bad;
    }
    else if (v->ip && !(v->ip = qrt_ip_anonymize(p, v->ip))) {
        *why = "bad ip";
    }
    else if (v->device && !import_device(v->device)) {
        *why = "bad device (mobile, tablet, desktop, bot or other)";
    }
    else if (v->destination && qrt_valid_redirect_url(v->destination)) {
        *why = "bad destination (an http or https URL)";
    }
    if (*why) {
        return -1;
    }
    /* a country code as the scans' (ISO 3166, upper case): "de" beside "DE" made two
     * rows of the country report */
    if (v->country && strpbrk(v->country, "abcdefghijklmnopqrstuvwxyz")) {
        char *c = apr_pstrdup(p, v->country), *x;

        for (x = c; *x; x++) {
            *x = (char)apr_toupper((unsigned char)*x);
        }
        v->country = c;
    }
    v->tracker_id = id->num;
    v->bot = bot && bot->type == QRT_JV_TRUE;
    if (!v->device) {
        v->device = v->bot ? "bot" : "other";
    }
    if (ids) {
        v->visitor = qrt_visitor_id(key, v->visit_start, v->ip, v->user_agent);
    }
    return 1;
}

int qrt_import_line(apr_pool_t *p, char *line, apr_size_t len,
                    const qrt_visitor_key_t *key, qrt_visit_t *v, const char **why)
{
    return import_line(p, line, len, key, v, why, 1);
}

/* ---- the reader thread -------------------------------------------------------- */

typedef struct {
    qrt_import_batch_t b;
    apr_pool_t *p;
    apr_pool_t *hp;         /* the first batch's helper's (its own allocator) */
} import_slot;

struct qrt_import_reader {
    apr_pool_t *pool;
    FILE *f;
    const qrt_visitor_key_t *key;
    int size;
    apr_size_t bytes;       /* a batch's text ends with the line that reaches it (0: none) */
    long lineno;
    import_slot slot[2];
    /* under lock: */
    int full[2];            /* filled, until the writer hands it back */
    int held;               /* the slot the writer holds, -1 none */
    int next;               /* the slot the writer takes next */
    int finished;           /* the thread has filled its last slot */
    int stop;               /* the writer wants no more (also read while filling) */
    int read_error;
    apr_thread_mutex_t *lock;
    apr_thread_cond_t *cond;
    apr_thread_t *thread;
    /* a by-time reader's (run > 0; the rest is the reader thread's own): */
    long run;               /* visits a run holds at most */
    int fd;
    apr_off_t offset;       /* of the next line the first reading takes */
    int eof;                /* the first reading has ended */
    long batches;           /* batches filled */
    struct import_ent *ent; /* the run's visits, by time (malloc'd: run_gone) */
    apr_size_t nent, pos, cap_ent;
    long run_line0;         /* the line before the run's first */
    apr_pool_t *rp;         /* the run's trackers */
    apr_pool_t *cp;         /* a chunk's lines while they are checked */
    apr_pool_t *sp;         /* the reader thread's scratch while it checks */
    apr_pool_t *shp;        /* the helper's (an allocator of its own) */
    apr_hash_t *trackers;   /* tracker id -> the first line naming it */
    char *span;             /* IMPORT_SPAN bytes of lines read at once (malloc'd) */
    /* the reader thread's input, read in blocks (import_getline; malloc'd) */
    char *in;
    apr_size_t in_start, in_end, in_cap;
    int in_end_seen;        /* fread found the end */
};

/* Lines of the first batch parsed by one thread, into v from its first visit on. */
typedef struct {
    const qrt_visitor_key_t *key;
    apr_pool_t *p;
    char **text;
    apr_size_t *len;
    long *lineno;
    int from, to;
    qrt_visit_t *v;
    long *line;
    int n;
    const char *error;
    long error_line;
} import_part;

static void import_parse(import_part *x)
{
    int i;

    for (i = x->from; i < x->to; i++) {
        const char *why;
        int rc = qrt_import_line(x->p, x->text[i], x->len[i], x->key, &x->v[x->n], &why);

        if (rc < 0) {
            x->error = why;
            x->error_line = x->lineno[i];
            return;
        }
        if (rc > 0) {
            x->line[x->n++] = x->lineno[i];
        }
    }
}

static void import_parse_any(void *x)
{
    import_parse(x);
}

/* fn on a here and on b in a kept thread at once (both here with fewer than 64 lines,
 * or without a thread). */
static void import_in_two(void (*fn)(void *), void *a, void *b, int nraw)
{
    qrt_spare_job job;
    int helped = nraw >= 64 && qrt_spare_start(&job, fn, b) == 0;

    fn(a);
    if (helped) {
        qrt_spare_wait(&job);
    }
    else {
        fn(b);
    }
}

/* Whether a batch whose lines hold text_bytes bytes takes no more lines. */
static int import_full(const qrt_import_reader_t *r, apr_size_t text_bytes)
{
    return r->bytes > 0 && text_bytes >= r->bytes;
}

/* Parses nraw lines into s's batch in two halves at once, the second by a helper
 * thread with a pool of its own: the visits and the first bad line come out as one
 * thread would find them. */
static void import_parse_halves(qrt_import_reader_t *r, import_slot *s, char **text,
                                apr_size_t *len, long *lineno, int nraw)
{
    qrt_import_batch_t *b = &s->b;
    import_part part[2];
    int half = nraw / 2, head = 0, i;

    for (i = 0; i < half; i++) {
        head += text[i][strspn(text[i], " \t\r\n")] != '\0';
    }
    for (i = 0; i < 2; i++) {
        memset(&part[i], 0, sizeof(part[i]));
        part[i].key = r->key;
        part[i].p = i ? s->hp : s->p;
        part[i].text = text;
        part[i].len = len;
        part[i].lineno = lineno;
        part[i].from = i ? half : 0;
        part[i].to = i ? nraw : half;
        /* the first half's lines make head visits at most: the second's follow */
        part[i].v = b->v + (i ? head : 0);
        part[i].line = b->line + (i ? head : 0);
    }
    import_in_two(import_parse_any, &part[0], &part[1], nraw);
    b->n = part[0].n;
    if (part[0].error) {
        b->error = part[0].error;
        b->error_line = part[0].error_line;
        return;
    }
    b->n += part[1].n;
    if (part[1].error) {
        b->error = part[1].error;
        b->error_line = part[1].error_line;
    }
}

/* Why getline (errno cleared before it) gave no line: 0 at the end of the file, else
 * the error. A line it could not hold (ENOMEM) sets neither the end nor the stream's
 * error: taken for the end, it ended an import as though the file stopped there. */
static int import_read_error(FILE *f)
{
    int e = errno;

    if (!ferror(f) && feof(f)) {
        return 0;
    }
    return e ? e : EIO;
}

/* The longest line taken: a visit's fields, escaped, are a few dozen KB, and members
 * the import does not read may come along; a longer one is read to its end without
 * being kept (getline kept it whole: a line of 400 MB took 1.3 GB, and under a memory
 * limit the process died). */
#define IMPORT_LINE_MAX (16 << 20)
#define IMPORT_LINE_LONG "a line of more than 16 MB"
#define IMPORT_IN_MIN (256 << 10)

/* The next line of the input, with its '\n', into *line (malloc'd, grown as getline
 * grows it, NUL-terminated; NUL bytes inside kept): its bytes; -1 at the end or on an
 * error (import_read_error tells which; errno ENOMEM when the buffer could not grow);
 * -2 for a line of more than IMPORT_LINE_MAX bytes, read to its end and dropped
 * (*dropped: its bytes). */
static ssize_t import_getline(qrt_import_reader_t *r, char **line, size_t *cap,
                              apr_size_t *dropped)
{
    apr_size_t from = r->in_start, lost = 0;

    *dropped = 0;
    for (;;) {
        char *nl = r->in_end > from ? memchr(r->in + from, '\n', r->in_end - from) : NULL;
        size_t n, got;

        if (nl || r->in_end_seen) {
            n = nl ? (apr_size_t)(nl - r->in) + 1 - r->in_start : r->in_end - r->in_start;
            if (n == 0 && lost == 0) {
                errno = 0;
                return -1;                          /* the end (or the error fread met) */
            }
            if (lost || n > IMPORT_LINE_MAX) {
                r->in_start += n;
                *dropped = lost + n;
                return -2;
            }
            if (n + 1 > *cap) {
                char *grown = realloc(*line, n + 1);

                if (!grown) {
                    errno = ENOMEM;
                    return -1;
                }
                *line = grown;
                *cap = n + 1;
            }
            memcpy(*line, r->in + r->in_start, n);
            (*line)[n] = '\0';
            r->in_start += n;
            return (ssize_t)n;
        }
        /* no end of the line yet: past the bound, what is read of it goes */
        if (r->in_end - r->in_start > IMPORT_LINE_MAX) {
            lost += r->in_end - r->in_start;
            r->in_start = r->in_end;
        }
        if (r->in_start > 0) {
            memmove(r->in, r->in + r->in_start, r->in_end - r->in_start);
            r->in_end -= r->in_start;
            r->in_start = 0;
        }
        if (r->in_end == r->in_cap) {
            apr_size_t want = r->in_cap ? r->in_cap * 2 : IMPORT_IN_MIN;
            char *grown = realloc(r->in, want);

            if (!grown) {
                errno = ENOMEM;
                return -1;
            }
            r->in = grown;
            r->in_cap = want;
        }
        from = r->in_end;
        got = fread(r->in + r->in_end, 1, r->in_cap - r->in_end, r->f);
        r->in_end += got;
        if (got == 0) {
            if (ferror(r->f)) {
                return -1;
            }
            r->in_end_seen = 1;
        }
    }
}

/* The first batch: nothing overlaps its parsing (the writer waits for it), so its
 * lines are read first, then parsed in two
 * halves at once, the second by a helper thread with a pool of its own. The visits
 * and the first bad line come out as one thread would find them. */
static int import_fill_first(qrt_import_reader_t *r, import_slot *s, char **line,
                             size_t *cap)
{
    qrt_import_batch_t *b = &s->b;
    apr_size_t max = (apr_size_t)r->size * 2 + 16;
    char **text = apr_palloc(s->p, max * sizeof(*text));
    apr_size_t *len = apr_palloc(s->p, max * sizeof(*len));
    long *lineno = apr_palloc(s->p, max * sizeof(*lineno));
    int nraw = 0, visits = 0, more = 1;
    apr_size_t text_bytes = 0, dropped;
    ssize_t got;

    while (visits < r->size && !import_full(r, text_bytes)
           && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
        if ((apr_size_t)nraw == max) {
            break;              /* blank lines by the thousand: the rest next time */
        }
        got = import_getline(r, line, cap, &dropped);
        if (got == -1) {
            r->read_error = import_read_error(r->f);
            more = 0;
            break;
        }
        r->lineno++;
        if (got == -2) {
            /* (the batch that holds it is not written, as with any bad line) */
            b->error = IMPORT_LINE_LONG;
            b->error_line = r->lineno;
            return 0;
        }
        text[nraw] = apr_pstrmemdup(s->p, *line, (apr_size_t)got);
        len[nraw] = (apr_size_t)got;
        lineno[nraw++] = r->lineno;
        text_bytes += (apr_size_t)got;
        /* (what qrt_import_line takes for a blank line) */
        visits += (*line)[strspn(*line, " \t\r\n")] != '\0';
    }
    import_parse_halves(r, s, text, len, lineno, nraw);
    return !b->error && more && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED);
}

/* ---- by time: a run read twice ---------------------------------------------- */

/* A visit of a run: where its line is, and what it is sorted by. */
typedef struct import_ent {
    apr_int64_t t;          /* visit_start */
    apr_off_t off;          /* the line's offset in the file */
    apr_uint32_t len;       /* its bytes */
    apr_uint32_t k;         /* its line, counted from the run's first (ties: line order) */
} import_ent;

/* Bytes of adjacent lines read at once in the second reading. */
#define IMPORT_SPAN (1 << 20)

/* Raw lines read, then checked by two threads, at a time; and their bytes at most. */
#define IMPORT_CHUNK 16384
#define IMPORT_CHUNK_BYTES (32 << 20)

/* The lines of a chunk checked by one thread: per line its time and tracker (0 for a
 * blank line), or the first bad one. */
typedef struct {
    apr_pool_t *p;
    char **text;
    apr_size_t *len;
    int from, to;
    apr_int64_t *t, *tid;
    const char *error;
    int error_at;           /* the bad line's index in the chunk, -1 none */
} import_check_part;

static void import_check(import_check_part *x)
{
    int i;

    x->error_at = -1;
    for (i = x->from; i < x->to; i++) {
        qrt_visit_t v;
        const char *why;
        int rc;

        if ((i - x->from) % 256 == 0) {
            apr_pool_clear(x->p);
        }
        rc = import_line(x->p, x->text[i], x->len[i], NULL, &v, &why, 0);
        if (rc < 0) {
            x->error = why;
            x->error_at = i;
            return;
        }
        x->tid[i] = rc > 0 ? v.tracker_id : 0;
        x->t[i] = rc > 0 ? v.visit_start : 0;
    }
}

static void import_check_any(void *x)
{
    import_check(x);
}

static int import_ent_cmp(const void *a, const void *b)
{
    const import_ent *x = a, *y = b;

    if (x->t != y->t) {
        return x->t < y->t ? -1 : 1;
    }
    return x->k < y->k ? -1 : x->k > y->k;
}

/* Adds a chunk's visits to the run, and their trackers. */
static int import_add(qrt_import_reader_t *r, int nraw, const apr_off_t *off,
                      const apr_size_t *len, const long *lineno, const apr_int64_t *t,
                      const apr_int64_t *tid)
{
    int i;

    for (i = 0; i < nraw; i++) {
        import_ent *e;

        if (!tid[i]) {
            continue;
        }
        if (r->nent == r->cap_ent) {
            apr_size_t cap = r->cap_ent ? r->cap_ent * 2 : 65536;
            import_ent *grown = realloc(r->ent, cap * sizeof(*grown));

            if (!grown) {
                return ENOMEM;
            }
            r->ent = grown;
            r->cap_ent = cap;
        }
        e = &r->ent[r->nent++];
        e->t = t[i];
        e->off = off[i];
        e->len = (apr_uint32_t)len[i];
        e->k = (apr_uint32_t)(lineno[i] - r->run_line0);
        if (!apr_hash_get(r->trackers, &tid[i], sizeof(tid[i]))) {
            apr_int64_t *key = apr_pmemdup(r->rp, &tid[i], sizeof(tid[i]));
            long *first = apr_pmemdup(r->rp, &lineno[i], sizeof(lineno[i]));

            apr_hash_set(r->trackers, key, sizeof(*key), first);
        }
    }
    return 0;
}

/* The first reading of a run: up to r->run visits, each line checked (a chunk at a
 * time, in two halves at once), then sorted by time. 1 with the run ready and its
 * trackers on s's batch; 0 at the end of the input, at a read error (nothing of the
 * run is handed out) or at a bad line (s's batch holds the error, and no visit). */
static int import_index_run(qrt_import_reader_t *r, import_slot *s, char **line,
                            size_t *cap)
{
    qrt_import_batch_t *b = &s->b;
    apr_hash_index_t *hi;
    long limit = r->run;
    int nt;

    r->nent = r->pos = 0;
    r->run_line0 = r->lineno;
    apr_pool_clear(r->rp);
    r->trackers = apr_hash_make(r->rp);
    while ((long)r->nent < limit && !r->eof
           && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
        char **text;
        apr_size_t *len, bytes = 0;
        apr_off_t *off;
        apr_int64_t *t, *tid;
        long *lineno, visits = 0;
        import_check_part part[2];
        int nraw = 0, i;
        ssize_t got;
        apr_size_t dropped;

        if (r->nent == 0) {
            r->run_line0 = r->lineno;       /* (blank lines only so far) */
        }
        apr_pool_clear(r->cp);
        text = apr_palloc(r->cp, IMPORT_CHUNK * sizeof(*text));
        len = apr_palloc(r->cp, IMPORT_CHUNK * sizeof(*len));
        off = apr_palloc(r->cp, IMPORT_CHUNK * sizeof(*off));
        lineno = apr_palloc(r->cp, IMPORT_CHUNK * sizeof(*lineno));
        t = apr_palloc(r->cp, IMPORT_CHUNK * sizeof(*t));
        tid = apr_palloc(r->cp, IMPORT_CHUNK * sizeof(*tid));
        /* A run's lines are counted from its first in 32 bits. */
        while (nraw < IMPORT_CHUNK && bytes < IMPORT_CHUNK_BYTES
               && (long)r->nent + visits < limit
               && r->lineno - r->run_line0 < 0xFFFFFFFFL) {
            got = import_getline(r, line, cap, &dropped);
            if (got == -1) {
                r->read_error = import_read_error(r->f);
                r->eof = 1;
                break;
            }
            r->lineno++;
            if (got == -2) {
                b->error = IMPORT_LINE_LONG;
                b->error_line = r->lineno;
                r->eof = 1;
                return 0;
            }
            text[nraw] = apr_pstrmemdup(r->cp, *line, (apr_size_t)got);
            len[nraw] = (apr_size_t)got;
            off[nraw] = r->offset;
            lineno[nraw] = r->lineno;
            r->offset += got;
            bytes += (apr_size_t)got;
            visits += (*line)[strspn(*line, " \t\r\n")] != '\0';
            if ((apr_uint64_t)got > 0xFFFFFFFFULL) {
                b->error = "a line of 4 GB or more";
                b->error_line = r->lineno;
                r->eof = 1;
                return 0;
            }
            nraw++;
        }
        if (r->lineno - r->run_line0 >= 0xFFFFFFFFL) {
            limit = (long)r->nent + visits;    /* this run ends with the chunk */
        }
        for (i = 0; i < 2; i++) {
            memset(&part[i], 0, sizeof(part[i]));
            part[i].p = i ? r->shp : r->sp;
            part[i].text = text;
            part[i].len = len;
            part[i].from = i ? nraw / 2 : 0;
            part[i].to = i ? nraw : nraw / 2;
            part[i].t = t;
            part[i].tid = tid;
        }
        import_in_two(import_check_any, &part[0], &part[1], nraw);
        for (i = 0; i < 2; i++) {
            if (part[i].error) {
                b->error = part[i].error;
                b->error_line = lineno[part[i].error_at];
                r->eof = 1;
                r->nent = 0;
                return 0;
            }
        }
        if (r->read_error || import_add(r, nraw, off, len, lineno, t, tid)) {
            if (!r->read_error) {
                r->read_error = ENOMEM;
            }
            r->eof = 1;
            r->nent = 0;
            return 0;
        }
    }
    if (r->nent == 0 || __atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
        r->nent = 0;
        return 0;
    }
    qsort(r->ent, r->nent, sizeof(*r->ent), import_ent_cmp);
    nt = (int)apr_hash_count(r->trackers);
    b->trackers = apr_palloc(s->p, (apr_size_t)nt * sizeof(*b->trackers));
    b->tracker_line = apr_palloc(s->p, (apr_size_t)nt * sizeof(*b->tracker_line));
    b->ntrackers = 0;
    for (hi = apr_hash_first(s->p, r->trackers); hi; hi = apr_hash_next(hi)) {
        const void *key;
        void *first;

        apr_hash_this(hi, &key, NULL, &first);
        b->trackers[b->ntrackers] = *(const apr_int64_t *)key;
        b->tracker_line[b->ntrackers++] = *(long *)first;
    }
    return 1;
}

/* Reads len bytes at off into buf: 0, or the error (EIO: the file ends before). */
static int import_pread(int fd, char *buf, apr_size_t len, apr_off_t off)
{
    apr_size_t done = 0;

    while (done < len) {
        ssize_t got = pread(fd, buf + done, len - done, off + (apr_off_t)done);

        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return got < 0 ? errno : EIO;
        }
        done += (apr_size_t)got;
    }
    return 0;
}

/* Fills s with the run's next visits in time order, each line read again at its
 * offset (a new run first when the last is handed out): 1 when more follow. */
static int import_fill_by_time(qrt_import_reader_t *r, import_slot *s, char **line,
                               size_t *cap)
{
    qrt_import_batch_t *b = &s->b;
    apr_size_t max, text_bytes = 0;
    char **text;
    apr_size_t *len;
    long *lineno;
    int nraw = 0;

    if (r->pos == r->nent && (r->eof || !import_index_run(r, s, line, cap))) {
        return 0;
    }
    max = (apr_size_t)r->size;
    text = apr_palloc(s->p, max * sizeof(*text));
    len = apr_palloc(s->p, max * sizeof(*len));
    lineno = apr_palloc(s->p, max * sizeof(*lineno));
    while (r->pos < r->nent && (apr_size_t)nraw < max && !import_full(r, text_bytes)) {
        apr_size_t first = r->pos, last = r->pos, span = r->ent[first].len, j;
        char *buf;
        int err;

        /* the lines that follow it in the file and in time too: one read (a file in
         * time order is read by the MB) */
        while (last + 1 < r->nent && (apr_size_t)nraw + (last - first) + 1 < max
               && !import_full(r, text_bytes + span)
               && r->ent[last + 1].off == r->ent[last].off + (apr_off_t)r->ent[last].len
               && span + r->ent[last + 1].len <= IMPORT_SPAN) {
            last++;
            span += r->ent[last].len;
        }
        if (span > IMPORT_SPAN) {
            buf = apr_palloc(s->p, span + 1);           /* one long line */
        }
        else if (!r->span && !(r->span = malloc(IMPORT_SPAN))) {
            err = ENOMEM;
            buf = NULL;
        }
        else {
            buf = r->span;
        }
        if (!buf || (err = import_pread(r->fd, buf, span, r->ent[first].off)) != 0) {
            /* the file shrank, or cannot be read, since its first reading */
            r->read_error = buf ? err : ENOMEM;
            r->pos = r->nent;
            r->eof = 1;
            return 0;
        }
        if (buf != r->span) {
            buf[span] = '\0';                           /* (first == last) */
        }
        for (j = first; j <= last; j++) {
            const import_ent *e = &r->ent[j];
            const char *at = buf + (e->off - r->ent[first].off);

            text[nraw] = buf == r->span ? apr_pstrmemdup(s->p, at, e->len) : buf;
            len[nraw] = e->len;
            lineno[nraw++] = r->run_line0 + (long)e->k;
        }
        text_bytes += span;
        r->pos = last + 1;
    }
    if (r->batches++ == 0) {
        import_parse_halves(r, s, text, len, lineno, nraw);
    }
    else {
        import_part one;

        memset(&one, 0, sizeof(one));
        one.key = r->key;
        one.p = s->p;
        one.text = text;
        one.len = len;
        one.lineno = lineno;
        one.to = nraw;
        one.v = b->v;
        one.line = b->line;
        import_parse(&one);
        b->n = one.n;
        b->error = one.error;
        b->error_line = one.error_line;
    }
    /* A line that changed since its first reading ends the input where it is. */
    if (b->error) {
        r->pos = r->nent;
        r->eof = 1;
        return 0;
    }
    return (r->pos < r->nent || !r->eof) && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED);
}

/* Fills s from the input: 1 when the input goes on after it. */
static int import_fill(qrt_import_reader_t *r, import_slot *s, char **line, size_t *cap)
{
    qrt_import_batch_t *b = &s->b;
    apr_size_t text_bytes = 0, dropped;
    ssize_t got;

    apr_pool_clear(s->p);
    apr_pool_clear(s->hp);
    b->n = 0;
    b->error = NULL;
    b->error_line = 0;
    b->trackers = NULL;
    b->tracker_line = NULL;
    b->ntrackers = 0;
    if (r->run > 0) {
        return import_fill_by_time(r, s, line, cap);
    }
    if (r->lineno == 0) {
        return import_fill_first(r, s, line, cap);
    }
    while (b->n < r->size && !import_full(r, text_bytes)
           && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
        const char *why;
        int rc;

        got = import_getline(r, line, cap, &dropped);
        if (got == -1) {
            r->read_error = import_read_error(r->f);
            return 0;
        }
        r->lineno++;
        if (got == -2) {
            b->error = IMPORT_LINE_LONG;
            b->error_line = r->lineno;
            return 0;
        }
        text_bytes += (apr_size_t)got;
        rc = qrt_import_line(s->p, *line, (apr_size_t)got, r->key, &b->v[b->n], &why);
        if (rc < 0) {
            b->error = why;
            b->error_line = r->lineno;
            return 0;
        }
        if (rc > 0) {
            b->line[b->n++] = r->lineno;
        }
    }
    return !__atomic_load_n(&r->stop, __ATOMIC_RELAXED);
}

static void *APR_THREAD_FUNC import_thread(apr_thread_t *t, void *arg)
{
    qrt_import_reader_t *r = arg;
    char *line = NULL;
    size_t cap = 0;
    int i = 0, more = 1;

    while (more) {
        apr_thread_mutex_lock(r->lock);
        while (!r->stop && r->full[i]) {
            apr_thread_cond_wait(r->cond, r->lock);
        }
        more = !r->stop;
        apr_thread_mutex_unlock(r->lock);
        if (!more) {
            break;
        }
        more = import_fill(r, &r->slot[i], &line, &cap);
        apr_thread_mutex_lock(r->lock);
        if (r->slot[i].b.n > 0 || r->slot[i].b.error) {
            r->full[i] = 1;
        }
        apr_thread_cond_broadcast(r->cond);
        apr_thread_mutex_unlock(r->lock);
        i ^= 1;
    }
    free(line);
    free(r->in);
    r->in = NULL;
    apr_thread_mutex_lock(r->lock);
    r->finished = 1;
    apr_thread_cond_broadcast(r->cond);
    apr_thread_mutex_unlock(r->lock);
    /* A plain return, not apr_thread_exit(): pthread_exit's unwinding makes
     * AddressSanitizer report a stack overflow at the thread's end (as in
     * mod_qrtrack_wal.c). The thread's pool goes with the reader's. */
    (void)t;
    return NULL;
}

static apr_status_t import_pool_gone(void *hp)
{
    apr_pool_destroy(hp);
    return APR_SUCCESS;
}

static apr_status_t import_run_gone(void *r)
{
    free(((qrt_import_reader_t *)r)->ent);
    free(((qrt_import_reader_t *)r)->span);
    return APR_SUCCESS;
}

static qrt_import_reader_t *import_start(apr_pool_t *p, FILE *f, const qrt_visitor_key_t *key,
                                         int size, apr_size_t bytes, long run)
{
    apr_pool_t *rp;
    qrt_import_reader_t *r;
    int i;

    if (size < 1 || apr_pool_create(&rp, p) != APR_SUCCESS) {
        return NULL;
    }
    r = apr_pcalloc(rp, sizeof(*r));
    r->pool = rp;
    r->f = f;
    r->key = key;
    r->size = size;
    r->bytes = bytes;
    r->held = -1;
    for (i = 0; i < 2; i++) {
        r->slot[i].b.v = apr_palloc(rp, (apr_size_t)size * sizeof(qrt_visit_t));
        r->slot[i].b.line = apr_palloc(rp, (apr_size_t)size * sizeof(long));
        if (apr_pool_create(&r->slot[i].p, rp) != APR_SUCCESS
            || apr_pool_create_unmanaged_ex(&r->slot[i].hp, NULL, NULL) != APR_SUCCESS) {
            apr_pool_destroy(rp);
            return NULL;
        }
        apr_pool_cleanup_register(rp, r->slot[i].hp, import_pool_gone, apr_pool_cleanup_null);
    }
    if (run > 0) {
        r->run = run;
        r->fd = fileno(f);
        r->offset = ftello(f);
        apr_pool_cleanup_register(rp, r, import_run_gone, apr_pool_cleanup_null);
        if (r->offset < 0 || apr_pool_create(&r->rp, rp) != APR_SUCCESS
            || apr_pool_create(&r->cp, rp) != APR_SUCCESS
            || apr_pool_create(&r->sp, rp) != APR_SUCCESS
            || apr_pool_create_unmanaged_ex(&r->shp, NULL, NULL) != APR_SUCCESS) {
            apr_pool_destroy(rp);
            return NULL;
        }
        apr_pool_cleanup_register(rp, r->shp, import_pool_gone, apr_pool_cleanup_null);
    }
    if (apr_thread_mutex_create(&r->lock, APR_THREAD_MUTEX_DEFAULT, rp) != APR_SUCCESS
        || apr_thread_cond_create(&r->cond, rp) != APR_SUCCESS
        || apr_thread_create(&r->thread, NULL, import_thread, r, rp) != APR_SUCCESS) {
        apr_pool_destroy(rp);
        return NULL;
    }
    return r;
}

qrt_import_reader_t *qrt_import_start(apr_pool_t *p, FILE *f, const qrt_visitor_key_t *key,
                                      int size, apr_size_t bytes)
{
    return import_start(p, f, key, size, bytes, 0);
}

qrt_import_reader_t *qrt_import_start_by_time(apr_pool_t *p, FILE *f,
                                              const qrt_visitor_key_t *key, int size,
                                              apr_size_t bytes, long run)
{
    struct stat st;

    if (run < 1 || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        return NULL;
    }
    return import_start(p, f, key, size, bytes, run);
}

const qrt_import_batch_t *qrt_import_next(qrt_import_reader_t *r)
{
    const qrt_import_batch_t *b = NULL;

    apr_thread_mutex_lock(r->lock);
    if (r->held >= 0) {
        r->full[r->held] = 0;
        r->held = -1;
        apr_thread_cond_broadcast(r->cond);
    }
    while (!r->full[r->next] && !r->finished) {
        apr_thread_cond_wait(r->cond, r->lock);
    }
    if (r->full[r->next]) {
        r->held = r->next;
        r->next ^= 1;
        b = &r->slot[r->held].b;
    }
    apr_thread_mutex_unlock(r->lock);
    return b;
}

int qrt_import_read_error(const qrt_import_reader_t *r)
{
    return r->read_error;
}

void qrt_import_stop(qrt_import_reader_t *r)
{
    apr_status_t rv;

    if (!r) {
        return;
    }
    apr_thread_mutex_lock(r->lock);
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
    apr_thread_cond_broadcast(r->cond);
    apr_thread_mutex_unlock(r->lock);
    apr_thread_join(&rv, r->thread);
    apr_pool_destroy(r->pool);
}
