/* qrt_resolve: the database server's address, found within a bound of time
 * (qrt_resolve.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <apr_strings.h>

#include "qrt_clock.h"
#include "qrt_resolve.h"

/* ---- libpq's connection string ------------------------------------------------------ */

/* The next `key = value` of a connection string (libpq's rules: a value in single quotes
 * or up to white space, a backslash escaping the next character). 1, 0 at its end, -1
 * when it is not one libpq reads. */
static int conninfo_next(apr_pool_t *p, const char **sp, char **key, char **val)
{
    const char *s = *sp, *k;
    char *v;
    apr_size_t n = 0;

    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v') {
        s++;
    }
    if (!*s) {
        return 0;
    }
    for (k = s; *s && *s != '=' && *s != ' ' && *s != '\t' && *s != '\n'; s++) {
    }
    *key = apr_pstrndup(p, k, (apr_size_t)(s - k));
    while (*s == ' ' || *s == '\t' || *s == '\n') {
        s++;
    }
    if (*s != '=' || s == k) {
        return -1;
    }
    s++;
    while (*s == ' ' || *s == '\t' || *s == '\n') {
        s++;
    }
    v = apr_palloc(p, strlen(s) + 1);
    if (*s == '\'') {
        for (s++; *s && *s != '\''; s++) {
            if (*s == '\\' && s[1]) {
                s++;
            }
            v[n++] = *s;
        }
        if (*s != '\'') {
            return -1;
        }
        s++;
    }
    else {
        for (; *s && *s != ' ' && *s != '\t' && *s != '\n'; s++) {
            if (*s == '\\' && s[1]) {
                s++;
            }
            v[n++] = *s;
        }
    }
    v[n] = '\0';
    *val = v;
    *sp = s;
    return 1;
}

const char *qrt_resolve_pg_host(apr_pool_t *p, const char *params)
{
    const char *s = params, *host = NULL;
    char *key, *val;
    int rc;

    if (!params || !strncmp(params, "postgresql://", 13) || !strncmp(params, "postgres://", 11)) {
        return NULL;
    }
    while ((rc = conninfo_next(p, &s, &key, &val)) == 1) {
        if (!strcmp(key, "hostaddr") && *val) {
            return NULL;
        }
        if (!strcmp(key, "host")) {
            host = val;
        }
    }
    if (rc < 0 || !host || !*host || *host == '/' || *host == '@' || strchr(host, ',')
        || qrt_resolve_addrs_valid(host)) {
        return NULL;
    }
    return host;
}

const char *qrt_resolve_pg_params(apr_pool_t *p, const char *params, const char *host,
                                  const char *addr)
{
    const char *hosts = "", *a;
    char *q = apr_palloc(p, strlen(host) * 2 + 1), *o = q;

    for (a = host; *a; a++) {
        if (*a == '\'' || *a == '\\') {
            *o++ = '\\';
        }
        *o++ = *a;
    }
    *o = '\0';
    for (a = addr; a; a = strchr(a + 1, ',')) {
        hosts = apr_pstrcat(p, hosts, *hosts ? "," : "", q, NULL);
    }
    return apr_pstrcat(p, params, " host='", hosts, "' hostaddr=", addr, NULL);
}

const char *qrt_resolve_pg_connect_within(apr_pool_t *p, const char *params, int seconds)
{
    const char *s = params;
    char *key, *val;
    int rc;

    if (!params || !strncmp(params, "postgresql://", 13) || !strncmp(params, "postgres://", 11)) {
        return params;
    }
    while ((rc = conninfo_next(p, &s, &key, &val)) == 1) {
        if (!strcmp(key, "connect_timeout")) {
            return params;
        }
    }
    return rc < 0 ? params : apr_psprintf(p, "%s connect_timeout=%d", params, seconds);
}

int qrt_resolve_is_final(int code)
{
    return code == EAI_NONAME
#ifdef EAI_NODATA
           || code == EAI_NODATA
#endif
           || code == EAI_FAMILY || code == EAI_SERVICE || code == EAI_BADFLAGS;
}

int qrt_lookup_system(const char *host, char out[QRT_ADDR_MAX])
{
    struct addrinfo hints, *res = NULL, *ai;
    char one[NI_MAXHOST];
    size_t len = 0;
    int rc, n = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        return rc;
    }
    out[0] = '\0';
    for (ai = res; ai && n < QRT_ADDRS; ai = ai->ai_next) {
        size_t k;
        const char *seen;

        if (getnameinfo(ai->ai_addr, ai->ai_addrlen, one, sizeof(one), NULL, 0,
                        NI_NUMERICHOST) != 0 || (k = strlen(one)) > 46) {
            continue;
        }
        /* (each once: a name's address may come for several socket types) */
        for (seen = out; (seen = strstr(seen, one)) != NULL; seen += k) {
            if ((seen == out || seen[-1] == ',') && (seen[k] == ',' || seen[k] == '\0')) {
                break;
            }
        }
        if (seen || len + k + 2 > QRT_ADDR_MAX) {
            continue;
        }
        if (n++) {
            out[len++] = ',';
        }
        memcpy(out + len, one, k + 1);
        len += k;
    }
    freeaddrinfo(res);
    return n ? 0 : EAI_NONAME;
}

/* ---- a process's lookups ------------------------------------------------------------ */

struct qrt_resolver_t {
    pthread_mutex_t lock;
    pthread_cond_t done;            /* on CLOCK_MONOTONIC */
    qrt_lookup_fn fn;
    char *host;
    int busy;                       /* a lookup in flight */
    unsigned long finished;         /* lookups finished */
    int last_code;                  /* the last finished one's: 0 answered */
    char addr[QRT_ADDR_MAX];        /* the last address found, "" none */
    apr_time_t found_at;            /* when (qrt_clock_now), 0 never */
};

int qrt_resolve_addrs_valid(const char *a)
{
    unsigned char buf[sizeof(struct in6_addr)];
    char one[48];
    const char *end;
    int n = 0;

    if (!memchr(a, '\0', QRT_ADDR_MAX) || !*a || a[strlen(a) - 1] == ',') {
        return 0;
    }
    for (; *a; a = *end ? end + 1 : end) {
        size_t k;

        end = strchr(a, ',');
        end = end ? end : a + strlen(a);
        k = (size_t)(end - a);
        if (k == 0 || k >= sizeof(one) || ++n > QRT_ADDRS) {
            return 0;
        }
        memcpy(one, a, k);
        one[k] = '\0';
        if (inet_pton(AF_INET, one, buf) != 1 && inet_pton(AF_INET6, one, buf) != 1) {
            return 0;
        }
    }
    return 1;
}

qrt_resolver_t *qrt_resolver_make(const char *host, const char *known, qrt_lookup_fn fn)
{
    qrt_resolver_t *r = calloc(1, sizeof(*r));
    pthread_condattr_t attr;

    if (!r || !(r->host = strdup(host))) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->done, &attr);
    pthread_condattr_destroy(&attr);
    r->fn = fn ? fn : qrt_lookup_system;
    /* (a parent's copy is checked: it was read as the parent had it when it forked) */
    if (known && qrt_resolve_addrs_valid(known)) {
        strcpy(r->addr, known);
    }
    return r;
}

static void *resolver_lookup(void *data)
{
    qrt_resolver_t *r = data;
    char out[QRT_ADDR_MAX];
    int code = r->fn(r->host, out);

    pthread_mutex_lock(&r->lock);
    r->busy = 0;
    r->finished++;
    r->last_code = code;
    if (code == 0 && qrt_resolve_addrs_valid(out)) {
        strcpy(r->addr, out);
        r->found_at = qrt_clock_now();
    }
    else if (code == 0) {
        r->last_code = EAI_FAIL;
    }
    else if (qrt_resolve_is_final(code)) {
        /* DNS says the name has none: libpq would find none either */
        r->addr[0] = '\0';
        r->found_at = 0;
    }
    pthread_cond_broadcast(&r->done);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int qrt_resolve(qrt_resolver_t *r, apr_interval_time_t wait, apr_interval_time_t fresh,
                char addr[QRT_ADDR_MAX], const char **why)
{
    apr_time_t now = qrt_clock_now(), until = now + (wait > 0 ? wait : 0);
    unsigned long seen;
    struct timespec ts;
    int answered = 0;

    *why = NULL;
    pthread_mutex_lock(&r->lock);
    if (r->addr[0] && r->found_at && now - r->found_at < fresh) {
        strcpy(addr, r->addr);
        pthread_mutex_unlock(&r->lock);
        return 1;
    }
    seen = r->finished;
    if (!r->busy) {
        pthread_attr_t attr;
        pthread_t t;

        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r->busy = pthread_create(&t, &attr, resolver_lookup, r) == 0;
        pthread_attr_destroy(&attr);
        if (!r->busy) {
            *why = "cannot start a lookup";
        }
    }
    ts.tv_sec = (time_t)(until / APR_USEC_PER_SEC);
    ts.tv_nsec = (long)(until % APR_USEC_PER_SEC) * 1000;
    while (r->busy && r->finished == seen) {
        if (pthread_cond_timedwait(&r->done, &r->lock, &ts) == ETIMEDOUT) {
            break;
        }
    }
    if (r->finished != seen) {
        answered = r->last_code == 0;
        if (!answered) {
            *why = gai_strerror(r->last_code);
        }
    }
    else if (r->busy) {
        *why = "no answer in time";
    }
    if (r->addr[0]) {
        strcpy(addr, r->addr);
        pthread_mutex_unlock(&r->lock);
        return answered;
    }
    pthread_mutex_unlock(&r->lock);
    if (!*why) {
        *why = "no address";
    }
    return -1;
}

void qrt_resolver_known(qrt_resolver_t *r, char addr[QRT_ADDR_MAX])
{
    pthread_mutex_lock(&r->lock);
    strcpy(addr, r->addr);
    pthread_mutex_unlock(&r->lock);
}

/* ---- a lookup in a process of its own ----------------------------------------------- */

typedef struct {
    int code;
    char addr[QRT_ADDR_MAX];
} aside_answer;

int qrt_resolve_aside(const char *host, apr_interval_time_t wait, qrt_lookup_fn fn,
                      char addr[QRT_ADDR_MAX])
{
    aside_answer a;
    struct pollfd pfd;
    apr_time_t until = qrt_clock_now() + wait;
    int fds[2], status;
    pid_t pid;
    ssize_t n = 0;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        return EAI_SYSTEM;
    }
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return EAI_SYSTEM;
    }
    if (pid == 0) {
        /* The child leaves at once; its child, which init reaps, looks the name up
         * with nothing of the caller's open but the pipe (no listening socket of
         * httpd's stays bound by it while a lookup hangs). */
        if (fork() != 0) {
            _exit(0);
        }
        if (fds[1] != 3) {
            dup2(fds[1], 3);
        }
        close_range(4, ~0U, 0);
        memset(&a, 0, sizeof(a));
        a.code = (fn ? fn : qrt_lookup_system)(host, a.addr);
        if (write(3, &a, sizeof(a)) < 0) {
            _exit(1);
        }
        _exit(0);
    }
    close(fds[1]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pfd.fd = fds[0];
    pfd.events = POLLIN;
    for (;;) {
        apr_time_t left = until - qrt_clock_now();
        int rc;

        if (left <= 0) {
            break;
        }
        rc = poll(&pfd, 1, (int)((left + 999) / 1000));
        if (rc > 0) {
            n = read(fds[0], &a, sizeof(a));
            break;
        }
        if (rc < 0 && errno != EINTR) {
            break;
        }
    }
    close(fds[0]);
    if (n != (ssize_t)sizeof(a)) {
        return EAI_AGAIN;
    }
    if (a.code == 0 && !qrt_resolve_addrs_valid(a.addr)) {
        return EAI_FAIL;
    }
    if (a.code == 0) {
        strcpy(addr, a.addr);
    }
    return a.code;
}
