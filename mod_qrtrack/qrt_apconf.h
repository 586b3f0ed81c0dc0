/* qrt_apconf: mod_dbd's DBDriver and DBDParams read from an Apache httpd
 * configuration file and the files it includes, for qrtrack-admin (no httpd header).
 *
 * What it reads as httpd does: one directive a line, `\` at the end of a line
 * continues it, `#` starts a comment line, directive names in any case, arguments
 * split like ap_getword_conf (double or single quotes, `\` before the quote), ${VAR}
 * from `Define` or the environment, `ServerRoot`, `Include`/`IncludeOptional` with
 * globs and directories, relative to the ServerRoot. `<IfModule>`, `<IfDefine>`,
 * `<IfVersion>`, `<IfFile>`, `<IfDirective>` and `<IfSection>` are read through (their
 * conditions are not evaluated); what lies inside any other section (`<VirtualHost>`,
 * `<Directory>`, ...) is not at server level and is skipped, includes too. As in
 * mod_dbd (and mod_qrtrack), the last value at server level wins. */
#ifndef QRT_APCONF_H
#define QRT_APCONF_H

#include <apr_pools.h>

/* Bounds, as httpd has its own: includes (and directories) nested deeper than this
 * are taken for a loop; a file or directory that is already being read is one; at
 * most this many files are read; a logical line (continuations joined, ${VAR}
 * expanded) is at most QRT_APCONF_MAX_LINE bytes (httpd: 16 MB). Only regular
 * files are read. Each is an error message. */
#define QRT_APCONF_MAX_DEPTH 64
#define QRT_APCONF_MAX_FILES 4096
#define QRT_APCONF_MAX_LINE  (16 * 1024 * 1024)

typedef struct {
    const char *driver;       /* DBDriver's value, unquoted, or NULL */
    const char *params;       /* DBDParams's value, unquoted, or NULL */
    const char *driver_at;    /* "FILE:LINE" of the DBDriver used, or NULL */
    const char *params_at;    /* "FILE:LINE" of the DBDParams used, or NULL */
    int files;                /* configuration files read */
    int missing;              /* the main file does not exist (nothing read) */
} qrt_apconf_dbd_t;

/* Reads file (relative paths against server_root, which the ServerRoot directive
 * changes; NULL: the main file's directory) and what it includes. Returns NULL, or an
 * error message (the main file cannot be read, a bound above is passed); a main file
 * that does not exist is an error with out->missing set. */
const char *qrt_apconf_read_dbd(apr_pool_t *p, const char *file, const char *server_root,
                                qrt_apconf_dbd_t *out);

/* The next argument of a directive line, as ap_getword_conf splits it: quotes
 * removed, `\` before the quote character dropped. Advances *line; "" at its end. */
char *qrt_apconf_word(apr_pool_t *p, const char **line);

#endif
