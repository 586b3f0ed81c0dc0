-- Statements of mod_qrtrack/qrt_store_account.c (see docs/design.md, "The SQL statements").

-- name: account_add
INSERT INTO accounts (name, plan, created_at)
    VALUES (%s, %s, %lld)
    RETURNING id

-- taken in a transaction before an account's webhooks or styles are counted for a new
-- one, so that requests at once cannot pass the limit together (SQLite's writers follow
-- one another already)
-- name: account_lock
SELECT id
    FROM accounts
    WHERE id = %lld

-- name: account_lock [pgsql]
SELECT id
    FROM accounts
    WHERE id = %lld
    FOR UPDATE

-- name: account_by_id
SELECT id, name, plan, created_at
    FROM accounts
    WHERE id = %lld

-- name: account_by_name
SELECT id, name, plan, created_at
    FROM accounts
    WHERE name = %s

-- name: account_list
SELECT id, name, plan, created_at
    FROM accounts
    ORDER BY id

-- name: account_set_plan
UPDATE accounts
    SET plan = %s
    WHERE id = %lld

-- name: token_add
INSERT INTO tokens (account_id, name, prefix, digest, created_at, scope, expires_at)
    VALUES (%lld, %s, %s, %s, %lld, %s, %lld)
    RETURNING id

-- name: token_list
SELECT id, account_id, name, prefix, created_at, revoked_at, scope, expires_at
    FROM tokens
    WHERE account_id = %lld
    ORDER BY id

-- name: token_revoke
UPDATE tokens
    SET revoked_at = %lld
    WHERE id = %lld AND revoked_at IS NULL

-- a live token: not revoked, not expired at the time given (schema 29)
-- name: token_auth
SELECT t.id, a.id, a.name, a.plan, t.name, t.scope, t.expires_at
    FROM tokens t
    JOIN accounts a ON a.id = t.account_id
    WHERE t.digest = %s AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > %lld)

-- name: setting_get
SELECT value
    FROM qrt_settings
    WHERE name = %s

-- name: setting_set
UPDATE qrt_settings
    SET value = %s
    WHERE name = %s
