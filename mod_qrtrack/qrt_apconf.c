/* qrt_apconf: DBDriver and DBDParams from an Apache configuration (see qrt_apconf.h). */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include <apr_tables.h>

#include "qrt_apconf.h"

typedef struct {
    dev_t dev;
    ino_t ino;
} apconf_id;

typedef struct {
    apr_pool_t *p;             /* what is kept: values, defines */
    qrt_apconf_dbd_t *out;
    const char *root;          /* ServerRoot */
    apr_table_t *defines;      /* Define NAME VALUE */
    apr_array_header_t *open;  /* apconf_id of the files and directories being read */
    const char *err;
} apconf_ctx;

/* A growing line buffer (malloc'd: one per file, reused line after line). */
typedef struct {
    char *s;
    size_t len, cap;
} apconf_buf;

static int apconf_read(apconf_ctx *c, const char *file, int depth, int main_file);

/* Appends n bytes; -1 (nothing appended) when b would pass QRT_APCONF_MAX_LINE. */
static int apconf_put(apconf_buf *b, const char *s, size_t n)
{
    if (n > QRT_APCONF_MAX_LINE - b->len) {
        return -1;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *bigger;

        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        if (!(bigger = realloc(b->s, cap))) {
            return -1;
        }
        b->s = bigger;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
    return 0;
}

/* Appends the next physical line of f to b, without its newline: 1, 0 at the end of
 * the file (nothing read), -1 when b would pass QRT_APCONF_MAX_LINE. */
static int apconf_getline(FILE *f, apconf_buf *b)
{
    char chunk[256];
    size_t n = 0;
    int ch, any = 0;

    while ((ch = getc(f)) != EOF) {
        any = 1;
        if (ch == '\n') {
            break;
        }
        chunk[n++] = (char)ch;
        if (n == sizeof(chunk)) {
            if (apconf_put(b, chunk, n)) {
                return -1;
            }
            n = 0;
        }
    }
    if (apconf_put(b, chunk, n)) {
        return -1;
    }
    return any;
}

/* Is id among the files and directories being read? If not, it is now (pushed). */
static int apconf_enter(apconf_ctx *c, const struct stat *st, const char *path)
{
    const apconf_id *ids = (const apconf_id *)c->open->elts;
    apconf_id *id;
    int i;

    for (i = 0; i < c->open->nelts; i++) {
        if (ids[i].dev == st->st_dev && ids[i].ino == st->st_ino) {
            c->err = apr_psprintf(c->p, "%s: includes nested in a loop (it is being "
                                  "read already)", path);
            return 1;
        }
    }
    id = apr_array_push(c->open);
    id->dev = st->st_dev;
    id->ino = st->st_ino;
    return 0;
}

char *qrt_apconf_word(apr_pool_t *p, const char **line)
{
    const char *s = *line, *start;
    char *w, *o;
    char quote;

    while (*s && apr_isspace(*s)) {
        s++;
    }
    if (!*s) {
        *line = s;
        return apr_pstrdup(p, "");
    }
    if (*s == '"' || *s == '\'') {
        quote = *s++;
        o = w = apr_palloc(p, strlen(s) + 1);
        while (*s && *s != quote) {
            if (*s == '\\' && s[1] == quote) {
                s++;
            }
            *o++ = *s++;
        }
        *o = '\0';
        if (*s) {
            s++;
        }
    }
    else {
        start = s;
        while (*s && !apr_isspace(*s)) {
            s++;
        }
        w = apr_pstrmemdup(p, start, s - start);
    }
    while (*s && apr_isspace(*s)) {
        s++;
    }
    *line = s;
    return w;
}

/* s with each ${NAME} replaced by its Define, else its environment value (left as it
 * is when neither has it), in one pass: values are not expanded again. NULL when the
 * result would pass QRT_APCONF_MAX_LINE. */
/* The next "${" in s, NULL when none. Not strstr: AddressSanitizer's strstr reads all
 * of s at each call, which makes a line of many ${} quadratic under make test-asan. */
static const char *apconf_next_var(const char *s)
{
    while ((s = strchr(s, '$')) != NULL && s[1] != '{') {
        s++;
    }
    return s;
}

static const char *apconf_expand(apconf_ctx *c, apr_pool_t *lp, const char *s)
{
    apconf_buf b = { NULL, 0, 0 };
    const char *open, *close, *v;
    char *out;
    int rc = 0;

    if (!apconf_next_var(s)) {
        return s;
    }
    while (!rc && (open = apconf_next_var(s)) != NULL
           && (close = strchr(open + 2, '}')) != NULL) {
        const char *name = apr_pstrmemdup(lp, open + 2, close - open - 2);

        v = apr_table_get(c->defines, name);
        if (!v) {
            v = getenv(name);
        }
        rc = apconf_put(&b, s, open - s);
        if (!rc) {
            rc = v ? apconf_put(&b, v, strlen(v)) : apconf_put(&b, open, close + 1 - open);
        }
        s = close + 1;
    }
    if (!rc) {
        rc = apconf_put(&b, s, strlen(s));
    }
    out = rc ? NULL : apr_pstrmemdup(lp, b.s ? b.s : "", b.len);
    free(b.s);
    return out;
}

static const char *apconf_path(apconf_ctx *c, apr_pool_t *lp, const char *path)
{
    if (path[0] == '/' || !c->root) {
        return path;
    }
    return apr_pstrcat(lp, c->root, "/", path, NULL);
}

/* Include and IncludeOptional: a file, a directory (its files, in order, and its
 * directories, each a level deeper) or a glob. */
static int apconf_include(apconf_ctx *c, apr_pool_t *lp, const char *pattern, int depth)
{
    struct stat st;
    glob_t g;
    size_t i;
    int rc = 0, dir = 0;

    if (depth > QRT_APCONF_MAX_DEPTH) {
        c->err = apr_psprintf(c->p, "%s: includes nested more than %d deep (a loop?)",
                              pattern, QRT_APCONF_MAX_DEPTH);
        return 1;
    }
    if (stat(pattern, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (apconf_enter(c, &st, pattern)) {
            return 1;
        }
        dir = 1;
        pattern = apr_pstrcat(lp, pattern, "/*", NULL);
    }
    else if (!strpbrk(pattern, "*?[")) {
        /* A plain file: one that is missing stops httpd itself (Include). */
        return apconf_read(c, pattern, depth, 0);
    }
    memset(&g, 0, sizeof(g));
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (i = 0; i < g.gl_pathc && !rc; i++) {
            const char *f = apr_pstrdup(lp, g.gl_pathv[i]);

            if (stat(f, &st) == 0 && S_ISDIR(st.st_mode)) {
                rc = apconf_include(c, lp, f, depth + 1);
            }
            else {
                rc = apconf_read(c, f, depth, 0);
            }
        }
        globfree(&g);
    }
    if (dir && !rc) {
        c->open->nelts--;
    }
    return rc;
}

/* Sections read through: their conditions are not evaluated. */
static int apconf_transparent(const char *name)
{
    static const char *const names[] = { "ifmodule", "ifdefine", "ifversion", "iffile",
                                         "ifdirective", "ifsection", NULL };
    int i;

    for (i = 0; names[i]; i++) {
        if (!strcasecmp(name, names[i])) {
            return 1;
        }
    }
    return 0;
}

/* One logical line (continuations joined, comment lines skipped), its scratch in lp.
 * *opaque counts the open sections that are not at server level. */
static int apconf_line(apconf_ctx *c, apr_pool_t *lp, const char *file, int lineno,
                       const char *line, int depth, int *opaque, apr_array_header_t *stack)
{
    const char *rest = line, *arg;
    char *word;

    if (*rest == '<') {
        if (rest[1] == '/') {
            if (stack->nelts > 0) {
                int closed = ((int *)stack->elts)[--stack->nelts];

                *opaque -= !closed;
            }
            return 0;
        }
        word = qrt_apconf_word(lp, &rest);
        word = word + 1;
        word[strcspn(word, ">")] = '\0';
        *(int *)apr_array_push(stack) = apconf_transparent(word);
        *opaque += !apconf_transparent(word);
        return 0;
    }
    if (*opaque) {
        return 0;
    }
    word = qrt_apconf_word(lp, &rest);
    if (strcasecmp(word, "DBDriver") && strcasecmp(word, "DBDParams")
        && strcasecmp(word, "ServerRoot") && strcasecmp(word, "Define")
        && strcasecmp(word, "UnDefine") && strcasecmp(word, "Include")
        && strcasecmp(word, "IncludeOptional")) {
        return 0;
    }
    if (!(rest = apconf_expand(c, lp, rest))) {
        c->err = apr_psprintf(c->p, "%s:%d: a line longer than %d bytes once its ${} "
                              "are expanded", file, lineno, QRT_APCONF_MAX_LINE);
        return 1;
    }
    if (!strcasecmp(word, "DBDriver") || !strcasecmp(word, "DBDParams")) {
        arg = qrt_apconf_word(c->p, &rest);
        if (!strcasecmp(word, "DBDriver")) {
            c->out->driver = arg;
            c->out->driver_at = apr_psprintf(c->p, "%s:%d", file, lineno);
        }
        else {
            c->out->params = arg;
            c->out->params_at = apr_psprintf(c->p, "%s:%d", file, lineno);
        }
    }
    else if (!strcasecmp(word, "ServerRoot")) {
        c->root = qrt_apconf_word(c->p, &rest);
    }
    else if (!strcasecmp(word, "Define")) {
        word = qrt_apconf_word(c->p, &rest);
        apr_table_set(c->defines, word, qrt_apconf_word(c->p, &rest));
    }
    else if (!strcasecmp(word, "UnDefine")) {
        apr_table_unset(c->defines, qrt_apconf_word(lp, &rest));
    }
    else {
        while (*(arg = qrt_apconf_word(lp, &rest))) {
            if (apconf_include(c, lp, apconf_path(c, lp, arg), depth + 1)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Reads one file, a regular one (httpd refuses others: Include /dev/zero). */
static int apconf_read(apconf_ctx *c, const char *file, int depth, int main_file)
{
    FILE *f;
    struct stat st;
    apconf_buf b = { NULL, 0, 0 };
    apr_pool_t *lp;
    const char *line;
    int fd, got, lineno = 0, first = 0, opaque = 0, rc = 0;
    apr_array_header_t *stack;

    if (depth > QRT_APCONF_MAX_DEPTH) {
        c->err = apr_psprintf(c->p, "%s: includes nested more than %d deep (a loop?)",
                              file, QRT_APCONF_MAX_DEPTH);
        return 1;
    }
    /* O_NONBLOCK: a FIFO is refused below, not waited for. */
    fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (main_file) {
            c->out->missing = (errno == ENOENT);
            c->err = apr_psprintf(c->p, "cannot read the Apache configuration %s: %s",
                                  file, strerror(errno));
            return 1;
        }
        return 0;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        c->err = apr_psprintf(c->p, "%s: not a regular file", file);
        return 1;
    }
    if (c->out->files >= QRT_APCONF_MAX_FILES) {
        close(fd);
        c->err = apr_psprintf(c->p, "%s: more than %d configuration files (an include "
                              "loop?)", file, QRT_APCONF_MAX_FILES);
        return 1;
    }
    if (apconf_enter(c, &st, file)) {
        close(fd);
        return 1;
    }
    if (!(f = fdopen(fd, "r"))) {
        close(fd);
        c->open->nelts--;
        return 0;
    }
    c->out->files++;
    apr_pool_create(&lp, c->p);
    stack = apr_array_make(lp, 8, sizeof(int));
    for (;;) {
        size_t start = b.len;

        if ((got = apconf_getline(f, &b)) == 0) {
            break;
        }

        if (!first) {
            first = lineno + 1;
        }
        lineno++;
        if (got < 0) {
            c->err = apr_psprintf(c->p, "%s:%d: a line longer than %d bytes", file,
                                  first, QRT_APCONF_MAX_LINE);
            rc = 1;
            break;
        }
        while (b.len > start && (b.s[b.len - 1] == '\n' || b.s[b.len - 1] == '\r')) {
            b.s[--b.len] = '\0';
        }
        if (b.len > start && b.s[b.len - 1] == '\\') {
            b.s[--b.len] = '\0';
            continue;
        }
        line = b.s ? b.s : "";
        while (*line && apr_isspace(*line)) {
            line++;
        }
        if (*line && *line != '#') {
            apr_pool_t *sp;

            /* The line's scratch: its own pool (an Include reads on inside it). */
            apr_pool_create(&sp, lp);
            rc = apconf_line(c, sp, file, first, line, depth, &opaque, stack);
            apr_pool_destroy(sp);
        }
        b.len = 0;
        first = 0;
        if (rc) {
            break;
        }
    }
    free(b.s);
    fclose(f);
    apr_pool_destroy(lp);
    if (!rc) {
        c->open->nelts--;
    }
    return rc;
}

const char *qrt_apconf_read_dbd(apr_pool_t *p, const char *file, const char *server_root,
                                qrt_apconf_dbd_t *out)
{
    apconf_ctx c;

    memset(out, 0, sizeof(*out));
    memset(&c, 0, sizeof(c));
    c.p = p;
    c.out = out;
    c.defines = apr_table_make(p, 4);
    c.open = apr_array_make(p, 8, sizeof(apconf_id));
    c.root = server_root;
    if (!c.root) {
        const char *slash = strrchr(file, '/');

        c.root = slash ? apr_pstrmemdup(p, file, slash == file ? 1 : slash - file) : ".";
    }
    apconf_read(&c, file, 0, 1);
    return c.err;
}
