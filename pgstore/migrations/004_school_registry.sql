-- A platform's schools (registry.Record): one row per school, written by
-- operators and deploy tools through any instance and read by all. A
-- school's data is its sites row and what hangs from it, made when the
-- school first starts; removing the school's row here keeps it.
CREATE TABLE schools (
	issuer     text PRIMARY KEY,
	-- The aliases in the record's order; school_hosts holds each host
	-- once, the issuer's included.
	hosts      text[] NOT NULL DEFAULT '{}',
	disabled   boolean NOT NULL DEFAULT false,
	-- json, not jsonb: the configuration is kept as it was written, so
	-- that every instance reads the same bytes.
	config     json NOT NULL,
	version    bigint NOT NULL,
	updated_at timestamptz NOT NULL
);

-- Every host a school answers on, in registry.HostKey's spelling. The
-- primary key makes a host one school's, whichever instances write at
-- once; a school's removal frees its hosts.
CREATE TABLE school_hosts (
	host   text PRIMARY KEY,
	issuer text NOT NULL REFERENCES schools (issuer) ON DELETE CASCADE
);
CREATE INDEX school_hosts_issuer ON school_hosts (issuer);

-- The count of the registry's writes, announced with each, so that the
-- periodic check tells an instance that missed a notification that it
-- did. One row.
CREATE TABLE schools_version (
	one     boolean PRIMARY KEY DEFAULT true CHECK (one),
	version bigint NOT NULL
);
INSERT INTO schools_version (version) VALUES (0);
