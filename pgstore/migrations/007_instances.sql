-- The gateway instances that use the database: each writes its own row
-- every few seconds (instances.go), and the rows written lately are the
-- live instances, among which a school's budget is divided.
CREATE TABLE gateway_instances (
	id   text PRIMARY KEY,
	seen timestamptz NOT NULL
);
