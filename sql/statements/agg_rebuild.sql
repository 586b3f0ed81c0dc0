-- Statements of mod_qrtrack/qrt_store_agg_rebuild.c (see docs/design.md, "The SQL statements").

-- rebuild
-- name: agg_clear_cnt
DELETE
    FROM agg_cnt

-- name: agg_clear_link
DELETE
    FROM agg_link

-- name: agg_clear_gap
DELETE
    FROM agg_gaps

-- name: agg_clear_day
DELETE
    FROM agg_day

-- name: agg_clear_tag
DELETE
    FROM agg_tag

-- name: agg_clear_trk
DELETE
    FROM agg_trk

-- name: agg_trk_all
INSERT INTO agg_trk (tracker_id, account_id, type)
    SELECT id, account_id, type
    FROM trackers
    WHERE deleted_at IS NULL

-- name: agg_tag_all
INSERT INTO agg_tag (tracker_id, tag)
    SELECT g.tracker_id, g.tag
    FROM tracker_tags g
    JOIN trackers t ON t.id = g.tracker_id
    WHERE t.deleted_at IS NULL

-- name: agg_trk_load
SELECT tracker_id, account_id
    FROM agg_trk

-- name: agg_tag_load
SELECT tracker_id, tag
    FROM agg_tag

-- name: agg_scan_page
SELECT v.visitor, v.id, v.visit_start, v.tracker_id, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan'
        END, COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.visitor >= %lld AND v.bot = 0
    ORDER BY v.visitor, v.visit_start, v.id
    LIMIT %lld

-- name: agg_scan_one
SELECT v.visitor, v.id, v.visit_start, v.tracker_id, CASE WHEN v.click = 1 THEN 'click' ELSE 'scan'
        END, COALESCE(vu.browser, ''), COALESCE(vp.country, ''), COALESCE(vp.city, '')
    FROM visit_rows v
    LEFT JOIN visit_uas vu ON vu.id = v.ua_id
    LEFT JOIN visit_places vp ON vp.id = v.place_id
    WHERE v.visitor = %lld AND v.bot = 0
    ORDER BY v.visit_start, v.id
