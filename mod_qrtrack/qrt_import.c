/* qrt_import: the lines of `qrtrack-admin visits import`, read ahead in a thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>
#include <apr_thread_cond.h>
#include <jansson.h>
#include "qrt_date.h"
#include "qrt_import.h"
#include "qrt_ip.h"
#include "qrt_jsonl.h"
#include "qrt_valid.h"

/* Members of a line read in one pass (qrt_jsonl_flat); a line with more goes to jansson. */
#define IMPORT_MEMBERS 32

/* A string member; *bad set when it has the wrong type or is too long. */
static const char *import_str(apr_pool_t *p, const qrt_jv_t *m, int n, const char *k,
                              apr_size_t max, int *bad)
{
    const qrt_jv_t *v = qrt_jsonl_get(m, n, k);

    if (!v || v->type == QRT_JV_NULL) {
        return NULL;
    }
    if (v->type != QRT_JV_STR || v->len > max || qrt_valid_text(v->str, v->len, 1)) {
        *bad = 1;
        return NULL;
    }
    return apr_pstrmemdup(p, v->str, v->len);
}

/* The members of a line that qrt_jsonl_flat declined, read with jansson (in p):
 * NULL when the line is not a JSON object. */
static qrt_jv_t *import_members(apr_pool_t *p, const char *line, int *n)
{
    json_error_t je;
    json_t *o = json_loads(line, 0, &je), *v;
    const char *k;
    qrt_jv_t *m = NULL;

    *n = 0;
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

/* The last second the API writes: 9999-12-31T23:59:59Z (its times start at 1970). */
#define IMPORT_T_MAX 253402300799LL

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

int qrt_import_line(apr_pool_t *p, char *line, apr_size_t len,
                    const qrt_visitor_key_t *key, qrt_visit_t *v, const char **why)
{
    qrt_jv_t fast[IMPORT_MEMBERS], *m = fast;
    const qrt_jv_t *id, *bot;
    const char *when;
    int bad = 0, off, nm = 0;

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
        && (m = import_members(p, line, &nm)) == NULL) {
        *why = "not a JSON object";
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
    v->referer = import_str(p, m, nm, "referer", 2048, &bad);
    v->user_agent = import_str(p, m, nm, "user_agent", 1024, &bad);
    v->destination = import_str(p, m, nm, "destination", QRT_URL_MAX, &bad);
    if (!id || id->type != QRT_JV_INT || id->num <= 0) {
        *why = "bad tracker_id";
    }
    else if (!when || qrt_date_parse(when, &v->visit_start, &off) != 0
             || v->visit_start < 0 || v->visit_start > IMPORT_T_MAX) {
        *why = "bad visit_start";
    }
    else if (!v->source || (strcmp(v->source, "scan") && strcmp(v->source, "click"))) {
        *why = "bad source (scan or click)";
    }
    else if (bot && bot->type != QRT_JV_TRUE && bot->type != QRT_JV_FALSE) {
        *why = "bad bot";
    }
    else if (bad) {
        *why = "bad a text field";
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
    v->tracker_id = id->num;
    v->bot = bot && bot->type == QRT_JV_TRUE;
    if (!v->device) {
        v->device = v->bot ? "bot" : "other";
    }
    v->visitor = qrt_visitor_id(key, v->visit_start, v->ip, v->user_agent);
    return 1;
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

static void *APR_THREAD_FUNC import_helper(apr_thread_t *t, void *arg)
{
    import_parse(arg);
    (void)t;
    return NULL;
}

/* Whether a batch whose lines hold text_bytes bytes takes no more lines. */
static int import_full(const qrt_import_reader_t *r, apr_size_t text_bytes)
{
    return r->bytes > 0 && text_bytes >= r->bytes;
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
    import_part part[2];
    apr_thread_t *helper = NULL;
    apr_status_t rv;
    int nraw = 0, visits = 0, half, head = 0, more = 1, i;
    apr_size_t text_bytes = 0;
    ssize_t got;

    while (visits < r->size && !import_full(r, text_bytes)
           && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
        if ((apr_size_t)nraw == max) {
            break;              /* blank lines by the thousand: the rest next time */
        }
        errno = 0;
        got = getline(line, cap, r->f);
        if (got < 0) {
            r->read_error = ferror(r->f) ? (errno ? errno : EIO) : 0;
            more = 0;
            break;
        }
        r->lineno++;
        text[nraw] = apr_pstrmemdup(s->p, *line, (apr_size_t)got);
        len[nraw] = (apr_size_t)got;
        lineno[nraw++] = r->lineno;
        text_bytes += (apr_size_t)got;
        /* (what qrt_import_line takes for a blank line) */
        visits += (*line)[strspn(*line, " \t\r\n")] != '\0';
    }
    half = nraw / 2;
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
    if (nraw < 64 || apr_thread_create(&helper, NULL, import_helper, &part[1],
                                       s->p) != APR_SUCCESS) {
        helper = NULL;
    }
    import_parse(&part[0]);
    if (helper) {
        apr_thread_join(&rv, helper);
    }
    else {
        import_parse(&part[1]);
    }
    b->n = part[0].n;
    if (part[0].error) {
        b->error = part[0].error;
        b->error_line = part[0].error_line;
        return 0;
    }
    b->n += part[1].n;
    if (part[1].error) {
        b->error = part[1].error;
        b->error_line = part[1].error_line;
        return 0;
    }
    return more && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED);
}

/* Fills s from the input: 1 when the input goes on after it. */
static int import_fill(qrt_import_reader_t *r, import_slot *s, char **line, size_t *cap)
{
    qrt_import_batch_t *b = &s->b;
    apr_size_t text_bytes = 0;
    ssize_t got;

    apr_pool_clear(s->p);
    apr_pool_clear(s->hp);
    b->n = 0;
    b->error = NULL;
    b->error_line = 0;
    if (r->lineno == 0) {
        return import_fill_first(r, s, line, cap);
    }
    while (b->n < r->size && !import_full(r, text_bytes)
           && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
        const char *why;
        int rc;

        errno = 0;
        got = getline(line, cap, r->f);
        if (got < 0) {
            r->read_error = ferror(r->f) ? (errno ? errno : EIO) : 0;
            return 0;
        }
        r->lineno++;
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

qrt_import_reader_t *qrt_import_start(apr_pool_t *p, FILE *f, const qrt_visitor_key_t *key,
                                      int size, apr_size_t bytes)
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
    if (apr_thread_mutex_create(&r->lock, APR_THREAD_MUTEX_DEFAULT, rp) != APR_SUCCESS
        || apr_thread_cond_create(&r->cond, rp) != APR_SUCCESS
        || apr_thread_create(&r->thread, NULL, import_thread, r, rp) != APR_SUCCESS) {
        apr_pool_destroy(rp);
        return NULL;
    }
    return r;
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
