-- mod_qrtrack schema, version 24: what a scan of a tracker does beyond redirecting to
-- redirect_url (CONTRACT section 7, "Redirect rules and validity"). A row only for the
-- trackers that use any of it, so plain trackers cost nothing. rules is the canonical
-- JSON text of the rule list (qrt_rules.h); valid_from and valid_until epoch seconds;
-- password_hash a slow salted hash (qrt_password.h), never the password. redirected
-- counts the non-bot scans sent on while max_scans is set: the scan writers raise it in
-- the transaction that records the visit, so the cap holds across processes and nodes.
CREATE TABLE IF NOT EXISTS tracker_routing (
    tracker_id BIGINT PRIMARY KEY REFERENCES trackers (id),
    rules TEXT,
    valid_from BIGINT,
    valid_until BIGINT,
    max_scans BIGINT,
    expired_url VARCHAR(2048),
    password_hash VARCHAR(255),
    redirected BIGINT NOT NULL DEFAULT 0
);
UPDATE qrt_schema SET version = 24;
