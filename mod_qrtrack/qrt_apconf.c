/* qrt_apconf: DBDriver and DBDParams from an Apache configuration (see qrt_apconf.h). */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include <apr_tables.h>

#include "qrt_apconf.h"

typedef struct {
    apr_pool_t *p;
    qrt_apconf_dbd_t *out;
    const char *root;          /* ServerRoot */
    apr_table_t *defines;      /* Define NAME VALUE */
    const char *err;
} apconf_ctx;

static int apconf_read(apconf_ctx *c, const char *file, int depth, int main_file);

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

/* ${NAME} from Define, else from the environment; left as it is when neither has it. */
static const char *apconf_expand(apconf_ctx *c, const char *s)
{
    const char *open = strstr(s, "${"), *close, *v;
    char *name;

    if (!open) {
        return s;
    }
    close = strchr(open + 2, '}');
    if (!close) {
        return s;
    }
    name = apr_pstrmemdup(c->p, open + 2, close - open - 2);
    v = apr_table_get(c->defines, name);
    if (!v) {
        v = getenv(name);
    }
    if (!v) {
        return apr_pstrcat(c->p, apr_pstrmemdup(c->p, s, close + 1 - s),
                           apconf_expand(c, close + 1), NULL);
    }
    return apr_pstrcat(c->p, apr_pstrmemdup(c->p, s, open - s), v,
                       apconf_expand(c, close + 1), NULL);
}

static const char *apconf_path(apconf_ctx *c, const char *path)
{
    if (path[0] == '/' || !c->root) {
        return path;
    }
    return apr_pstrcat(c->p, c->root, "/", path, NULL);
}

/* Include and IncludeOptional: a file, a directory (its files, in order) or a glob. */
static int apconf_include(apconf_ctx *c, const char *pattern, int depth)
{
    struct stat st;
    glob_t g;
    size_t i;
    int rc = 0;

    if (stat(pattern, &st) == 0 && S_ISDIR(st.st_mode)) {
        pattern = apr_pstrcat(c->p, pattern, "/*", NULL);
    }
    else if (!strpbrk(pattern, "*?[")) {
        /* A plain file: one that is missing stops httpd itself (Include). */
        return apconf_read(c, pattern, depth, 0);
    }
    memset(&g, 0, sizeof(g));
    if (glob(pattern, 0, NULL, &g) != 0) {
        return 0;
    }
    for (i = 0; i < g.gl_pathc && !rc; i++) {
        const char *f = apr_pstrdup(c->p, g.gl_pathv[i]);

        if (stat(f, &st) == 0 && S_ISDIR(st.st_mode)) {
            rc = apconf_include(c, f, depth);
        }
        else {
            rc = apconf_read(c, f, depth, 0);
        }
    }
    globfree(&g);
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

/* One logical line (continuations joined, comment lines skipped). *opaque counts the
 * open sections that are not at server level. */
static int apconf_line(apconf_ctx *c, const char *file, int lineno, const char *line,
                       int depth, int *opaque, apr_array_header_t *stack)
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
        word = qrt_apconf_word(c->p, &rest);
        word = apr_pstrdup(c->p, word + 1);
        word[strcspn(word, ">")] = '\0';
        *(int *)apr_array_push(stack) = apconf_transparent(word);
        *opaque += !apconf_transparent(word);
        return 0;
    }
    if (*opaque) {
        return 0;
    }
    word = qrt_apconf_word(c->p, &rest);
    rest = apconf_expand(c, rest);
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
        apr_table_unset(c->defines, qrt_apconf_word(c->p, &rest));
    }
    else if (!strcasecmp(word, "Include") || !strcasecmp(word, "IncludeOptional")) {
        while (*(arg = qrt_apconf_word(c->p, &rest))) {
            if (apconf_include(c, apconf_path(c, arg), depth + 1)) {
                return 1;
            }
        }
    }
    return 0;
}

static int apconf_read(apconf_ctx *c, const char *file, int depth, int main_file)
{
    FILE *f;
    char *buf = NULL, *s;
    size_t cap = 0;
    ssize_t n;
    const char *line = NULL;
    int lineno = 0, first = 0, opaque = 0, rc = 0;
    apr_array_header_t *stack = apr_array_make(c->p, 8, sizeof(int));

    if (depth > QRT_APCONF_MAX_DEPTH) {
        c->err = apr_psprintf(c->p, "%s: includes nested more than %d deep (a loop?)",
                              file, QRT_APCONF_MAX_DEPTH);
        return 1;
    }
    f = fopen(file, "r");
    if (!f) {
        if (main_file) {
            c->out->missing = (errno == ENOENT);
            c->err = apr_psprintf(c->p, "cannot read the Apache configuration %s: %s",
                                  file, strerror(errno));
            return 1;
        }
        return 0;
    }
    c->out->files++;
    while (!rc && (n = getline(&buf, &cap, f)) >= 0) {
        lineno++;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) {
            buf[--n] = '\0';
        }
        if (!line) {
            first = lineno;
        }
        s = buf;
        if (n > 0 && buf[n - 1] == '\\') {
            buf[n - 1] = '\0';
            line = line ? apr_pstrcat(c->p, line, s, NULL) : apr_pstrdup(c->p, s);
            continue;
        }
        line = line ? apr_pstrcat(c->p, line, s, NULL) : s;
        while (*line && apr_isspace(*line)) {
            line++;
        }
        if (*line && *line != '#') {
            rc = apconf_line(c, file, first, line, depth, &opaque, stack);
        }
        line = NULL;
    }
    free(buf);
    fclose(f);
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
    c.root = server_root;
    if (!c.root) {
        const char *slash = strrchr(file, '/');

        c.root = slash ? apr_pstrmemdup(p, file, slash == file ? 1 : slash - file) : ".";
    }
    apconf_read(&c, file, 0, 1);
    return c.err;
}
