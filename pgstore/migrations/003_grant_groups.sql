-- An application's people: its grants grouped by person, the people in
-- byte order ("C", whatever the database's collation, so that PostgreSQL
-- and bbolt list alike), each person's grants in order of creation. The
-- operator's page of people, a person's whole connection to an
-- application (a disconnect), and the count of people per application
-- read it. A person's own grants stay with grants_live_by_subject (002):
-- they are few, and sorted by application as they are read.
--
-- 002's grants_live_by_client_created stays: builds still running during
-- a rolling upgrade list an application's grants from it.
CREATE INDEX grants_live_by_client_subject ON grants
	(site_id, client_id COLLATE "C", (data->'identity'->>'sub') COLLATE "C", created_at, id COLLATE "C")
	WHERE revoked_at IS NULL;
