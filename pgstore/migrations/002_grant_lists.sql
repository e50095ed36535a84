-- A person's page lists their grants, an operator's page the grants of
-- one client, both in order of creation and a page at a time; the partial
-- indexes hold live grants only, so a revocation takes a grant out of
-- them with no statement of its own. The subject is read from the grant's
-- payload through an expression rather than a column of its own: a
-- previous build, still running during a rolling upgrade, inserts grants
-- without knowing of it, and they are indexed all the same.
CREATE INDEX grants_live_by_subject ON grants (site_id, (data->'identity'->>'sub'), created_at, id)
	WHERE revoked_at IS NULL;
CREATE INDEX grants_live_by_client_created ON grants (site_id, client_id, created_at, id)
	WHERE revoked_at IS NULL;

-- When one of the grant's refresh tokens was last rotated: written by the
-- rotation, which locks the grant's row already, and never by a request
-- for a protected resource.
ALTER TABLE grants ADD COLUMN refreshed_at timestamptz;
