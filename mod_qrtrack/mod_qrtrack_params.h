/* mod_qrtrack_params.c: query parameters shared by several endpoints. */
#ifndef MOD_QRTRACK_PARAMS_H
#define MOD_QRTRACK_PARAMS_H

#include "mod_qrtrack_private.h"

typedef struct {
    int has_start, has_end;
    apr_int64_t start, end;     /* epoch seconds, both inclusive */
    int offset;                 /* seconds east of UTC of visit_start (else of
                                 * visit_start_end, else 0): days of date rows */
} qrt_window_t;
/* visit_start / visit_start_end in every accepted form; 422 naming the parameter
 * (also when the start is after the end). */
qrt_err_t *qrt_params_window(qrt_req_t *q, qrt_window_t *w);
/* 1 when key names list name's values: name, name[] or name[<index>], in any case. */
int qrt_params_list_key(const char *key, const char *name);
/* Every value of a list parameter: name=1&name=2, name[]=1, name[0]=1, name=1,2. */
apr_array_header_t *qrt_query_list(qrt_req_t *q, const char *name);
/* Tracker ids of a list parameter (name and name[]): 422 for a non-integer, 403 when
 * any is not the caller's live tracker; none given -> every tracker of the account.
 * *ids is an array of apr_int64_t. */
qrt_err_t *qrt_params_trackers(qrt_req_t *q, const char *name, apr_array_header_t **ids);
/* 422 when a parameter of t (the query's or a form body's) other than the lists
 * (trackers, tags: qrt_params_list_key) is given more than once (names compared without
 * case, as the table reads them): which of the values was meant is not for the server to
 * guess, and the first one went through unchecked. */
qrt_err_t *qrt_params_once(qrt_req_t *q, const apr_table_t *t);
/* 422 naming the query's parameters (the first five) that q->params (space-separated
 * names; "trackers[]" a list: any key "trackers[...]", which the list's own check
 * reads) does not name, in any case as the table reads them; api_token and "_" (a
 * cache buster) are taken everywhere. NULL q->params: nothing checked. A typo
 * ("tracker=5" for trackers) was ignored: a report over every tracker, answered as if
 * it were what was asked. */
qrt_err_t *qrt_params_known(qrt_req_t *q);
/* A POST of a read endpoint (reports, crosstab, dashboard): the body's parameters (an
 * urlencoded or multipart form with the query's names, or a JSON object whose values are
 * strings, integers, true or false, or lists of strings and integers; null leaves one
 * out) added to the query's, so that the GET's code reads them. 422 for a parameter
 * in both, one the route does not take (qrt_params_known), or a value of another JSON
 * type; 413 past QRT_FORM_FIELDS_MAX values. */
qrt_err_t *qrt_params_from_body(qrt_req_t *q);
/* page and rows (rows 1..1000, default 25): 422 naming the parameter. */
qrt_err_t *qrt_params_paging(qrt_req_t *q, apr_int64_t *page, apr_int64_t *rows);
/* The paging "meta" object of a list. */
json_t *qrt_paging_meta(apr_int64_t page, apr_int64_t rows, apr_int64_t total);

#endif
