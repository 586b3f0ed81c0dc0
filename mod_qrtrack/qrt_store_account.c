/* qrt_store_account: accounts and API tokens. */
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "qrt_store.h"
#include "qrt_token.h"

static const char *const plans[] = { "free", "starter", "professional", "enterprise", NULL };

int qrt_plan_valid(const char *plan)
{
    int i;

    for (i = 0; plan && plans[i]; i++) {
        if (strcmp(plan, plans[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

int qrt_plan_has_api(const char *plan)
{
    return plan && (!strcmp(plan, "professional") || !strcmp(plan, "enterprise"));
}

static apr_int64_t account_now(void)
{
    return apr_time_sec(apr_time_now());
}

/* Runs an INSERT ... RETURNING id. */
static apr_status_t account_insert_id(qrt_db_t *db, apr_pool_t *p, const char *label,
                                      const void **args, apr_int64_t *id)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = qrt_db_select(db, p, label, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_EGENERAL;
    while (qrt_db_row(db, p, res, &row) == 0) {
        *id = qrt_db_int(db, row, 0, 0);
        rv = APR_SUCCESS;
    }
    if (rv != APR_SUCCESS && !db->error) {
        db->error = apr_psprintf(p, "%s returned no id", label);
    }
    return rv;
}

apr_status_t qrt_store_account_add(qrt_db_t *db, apr_pool_t *p, const char *name,
                                   const char *plan, apr_int64_t *id)
{
    apr_int64_t now = account_now();
    const void *args[] = { name, plan, &now };

    return account_insert_id(db, p, SQL_account_add, args, id);
}

static void account_read(qrt_db_t *db, apr_pool_t *p, apr_dbd_row_t *row,
                         qrt_account_t *a)
{
    a->id = qrt_db_int(db, row, 0, 0);
    a->name = apr_pstrdup(p, qrt_db_str(db, row, 1));
    a->plan = apr_pstrdup(p, qrt_db_str(db, row, 2));
    a->created_at = qrt_db_int(db, row, 3, 0);
}

apr_status_t qrt_store_account_find(qrt_db_t *db, apr_pool_t *p,
                                    const char *id_or_name, qrt_account_t *out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_int64_t id = 0;
    const char *s;
    const void *args[1];
    apr_status_t rv;
    int numeric = *id_or_name != '\0';

    for (s = id_or_name; *s; s++) {
        if (*s < '0' || *s > '9') {
            numeric = 0;
        }
    }
    if (numeric && strlen(id_or_name) < 19) {
        id = apr_atoi64(id_or_name);
        args[0] = &id;
        rv = qrt_db_select(db, p, SQL_account_by_id, &res, args);
    }
    else {
        args[0] = id_or_name;
        rv = qrt_db_select(db, p, SQL_account_by_name, &res, args);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_NOTFOUND;
    while (qrt_db_row(db, p, res, &row) == 0) {
        account_read(db, p, row, out);
        rv = APR_SUCCESS;
    }
    return rv;
}

apr_status_t qrt_store_account_list(qrt_db_t *db, apr_pool_t *p,
                                    apr_array_header_t **out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[1] = { NULL };
    apr_status_t rv = qrt_db_select(db, p, SQL_account_list, &res, args);

    *out = apr_array_make(p, 8, sizeof(qrt_account_t));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        account_read(db, p, row, apr_array_push(*out));
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_account_set_plan(qrt_db_t *db, apr_pool_t *p,
                                        apr_int64_t id, const char *plan)
{
    const void *args[] = { plan, &id };
    int n = 0;
    apr_status_t rv = qrt_db_exec(db, p, SQL_account_set_plan, &n, args);

    return rv != APR_SUCCESS ? rv : (n ? APR_SUCCESS : APR_NOTFOUND);
}

apr_status_t qrt_store_token_add(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                 const char *name, const char *prefix,
                                 const char *digest, const char *scope,
                                 apr_int64_t expires_at, apr_int64_t *id)
{
    apr_int64_t now = account_now();
    const void *args[] = { &account_id, name, prefix, digest, &now,
                           scope ? scope : QRT_SCOPE_WRITE,
                           expires_at > 0 ? &expires_at : NULL };

    return account_insert_id(db, p, SQL_token_add, args, id);
}

apr_status_t qrt_store_token_list(qrt_db_t *db, apr_pool_t *p, apr_int64_t account_id,
                                  apr_array_header_t **out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { &account_id };
    apr_status_t rv = qrt_db_select(db, p, SQL_token_list, &res, args);

    *out = apr_array_make(p, 8, sizeof(qrt_token_t));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        qrt_token_t *t = apr_array_push(*out);

        t->id = qrt_db_int(db, row, 0, 0);
        t->account_id = qrt_db_int(db, row, 1, 0);
        t->name = apr_pstrdup(p, qrt_db_str(db, row, 2));
        t->prefix = apr_pstrdup(p, qrt_db_str(db, row, 3));
        t->created_at = qrt_db_int(db, row, 4, 0);
        t->revoked_at = qrt_db_int(db, row, 5, 0);
        t->scope = apr_pstrdup(p, qrt_db_str(db, row, 6));
        t->expires_at = qrt_db_int(db, row, 7, 0);
    }
    return APR_SUCCESS;
}

apr_status_t qrt_store_token_revoke(qrt_db_t *db, apr_pool_t *p, apr_int64_t id)
{
    apr_int64_t now = account_now();
    const void *args[] = { &now, &id };
    int n = 0;
    apr_status_t rv = qrt_db_exec(db, p, SQL_token_revoke, &n, args);

    return rv != APR_SUCCESS ? rv : (n ? APR_SUCCESS : APR_NOTFOUND);
}

apr_status_t qrt_store_token_auth(qrt_db_t *db, apr_pool_t *p, const char *digest,
                                  qrt_auth_t *out)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    apr_int64_t now = account_now();
    const void *args[] = { digest, &now };
    apr_status_t rv = qrt_db_select(db, p, SQL_token_auth, &res, args);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = APR_NOTFOUND;
    while (qrt_db_row(db, p, res, &row) == 0) {
        out->token_id = qrt_db_int(db, row, 0, 0);
        out->account_id = qrt_db_int(db, row, 1, 0);
        out->account_name = apr_pstrdup(p, qrt_db_str(db, row, 2));
        out->plan = apr_pstrdup(p, qrt_db_str(db, row, 3));
        out->token_name = apr_pstrdup(p, qrt_db_str(db, row, 4));
        /* Anything but an explicit write scope is read-only. */
        out->read_only = !qrt_db_str(db, row, 5)
                         || strcmp(qrt_db_str(db, row, 5), QRT_SCOPE_WRITE) != 0;
        out->expires_at = qrt_db_int(db, row, 6, 0);
        rv = APR_SUCCESS;
    }
    return rv;
}

/* ---- the installation's settings (qrt_settings) ---------------------------------- */

apr_status_t qrt_store_setting_get(qrt_db_t *db, apr_pool_t *p, const char *name,
                                   const char **value)
{
    apr_dbd_results_t *res;
    apr_dbd_row_t *row = NULL;
    const void *args[] = { name };
    apr_status_t rv = qrt_db_select(db, p, SQL_setting_get, &res, args);

    *value = NULL;
    if (rv != APR_SUCCESS) {
        return rv;
    }
    while (qrt_db_row(db, p, res, &row) == 0) {
        if (!*value) {
            const char *v = qrt_db_str(db, row, 0);

            *value = apr_pstrdup(p, v ? v : "");
        }
    }
    return *value ? APR_SUCCESS : APR_NOTFOUND;
}

apr_status_t qrt_store_setting_set(qrt_db_t *db, apr_pool_t *p, const char *name,
                                   const char *value)
{
    const void *args[] = { value, name };
    int n = 0;
    apr_status_t rv = qrt_db_exec(db, p, SQL_setting_set, &n, args);

    return rv != APR_SUCCESS ? rv : (n ? APR_SUCCESS : APR_NOTFOUND);
}

apr_status_t qrt_store_visitor_key(qrt_db_t *db, apr_pool_t *p, qrt_visitor_key_t *k)
{
    const char *key = NULL, *rotation = NULL;
    apr_status_t rv = qrt_store_setting_get(db, p, "visitor_key", &key);

    if (rv == APR_SUCCESS) {
        rv = qrt_store_setting_get(db, p, "visitor_rotation", &rotation);
    }
    if (rv != APR_SUCCESS) {
        memset(k, 0, sizeof(*k));
        return rv;
    }
    return qrt_visitor_key_parse(k, key, rotation) == 0 ? APR_SUCCESS : APR_EINVAL;
}
