-- The audit trail: one row per event, written in the transaction of the
-- change it describes. The columns are what queries select by; data is
-- the whole event. A person's events are found through subject (the
-- person concerned) and actor_sub (the operator who acted), an
-- application's through client_id, each newest first; the retention
-- purge walks the time index.
CREATE TABLE audit (
	site_id   bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	id        bigint GENERATED ALWAYS AS IDENTITY,
	at        timestamptz NOT NULL,
	type      text NOT NULL,
	subject   text NOT NULL DEFAULT '',
	actor_sub text NOT NULL DEFAULT '',
	client_id text NOT NULL DEFAULT '',
	data      jsonb NOT NULL,
	PRIMARY KEY (site_id, id)
);
CREATE INDEX audit_by_time ON audit (site_id, at, id);
CREATE INDEX audit_by_subject ON audit (site_id, subject, at, id);
CREATE INDEX audit_by_actor ON audit (site_id, actor_sub, at, id);
CREATE INDEX audit_by_client ON audit (site_id, client_id, at, id);
