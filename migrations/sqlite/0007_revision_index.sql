-- Revision lists and image-reference checks without reading revision contents (review
-- finding M1): each revision's slide count, and the images each revision uses.
ALTER TABLE slide_revisions ADD COLUMN slide_count BIGINT NOT NULL DEFAULT 0;
UPDATE slide_revisions SET slide_count = COALESCE(json_array_length(content, '$.slides'), 0);

CREATE TABLE slide_revision_assets (
    revision_id TEXT NOT NULL REFERENCES slide_revisions (id) ON DELETE CASCADE,
    deck_id     TEXT NOT NULL,
    asset_id    TEXT NOT NULL,
    PRIMARY KEY (revision_id, asset_id)
);
CREATE INDEX slide_revision_assets_asset ON slide_revision_assets (deck_id, asset_id);
INSERT OR IGNORE INTO slide_revision_assets (revision_id, deck_id, asset_id)
SELECT r.id, r.deck_id, json_extract(b.value, '$.asset_id')
FROM slide_revisions r, json_each(r.content, '$.slides') s, json_each(s.value, '$.blocks') b
WHERE json_extract(b.value, '$.type') = 'image';

CREATE INDEX slide_idempotency_created ON slide_idempotency (created_at);
