-- One database holds any number of sites (schools). Every row below a
-- site carries its site_id, and every query names it: schools share a
-- database, never tokens. Deleting a site deletes everything it holds.
--
-- Columns hold what is queried or changes after insertion; the JSON in
-- data is the record's immutable payload as the store received it. So a
-- revocation, a rotation or a redemption is one column update, and the
-- payload is never rewritten.
--
-- Primary keys lead with site_id, which makes them the index of their
-- site foreign key too.

CREATE TABLE sites (
	id         bigserial PRIMARY KEY,
	issuer     text NOT NULL UNIQUE,
	-- version counts the changes that instances cache (revocations, keys,
	-- settings, the catalog), so a periodic check can tell that a
	-- notification was missed.
	version    bigint NOT NULL DEFAULT 0,
	created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE keys (
	site_id    bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	kid        text NOT NULL,
	-- AES-GCM of the private JWK, the nonce first: a copy of the database
	-- is no copy of the signing keys.
	sealed     bytea NOT NULL,
	created_at timestamptz NOT NULL,
	sign_from  timestamptz NOT NULL,
	retired_at timestamptz,
	PRIMARY KEY (site_id, kid)
);

CREATE TABLE clients (
	site_id          bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	id               text NOT NULL,
	kind             text NOT NULL,
	registration_key text,
	issued_at        timestamptz NOT NULL,
	data             jsonb NOT NULL,
	PRIMARY KEY (site_id, id)
);
-- An identical dynamic registration returns the client made the first
-- time; the index makes a second one impossible, whatever the code does.
CREATE UNIQUE INDEX clients_registration ON clients (site_id, kind, registration_key)
	WHERE registration_key IS NOT NULL AND registration_key <> '';
CREATE INDEX clients_kind ON clients (site_id, kind);

CREATE TABLE pending (
	site_id    bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	id         text NOT NULL,
	expires_at timestamptz NOT NULL,
	data       jsonb NOT NULL,
	PRIMARY KEY (site_id, id)
);
CREATE INDEX pending_expiry ON pending (site_id, expires_at);

CREATE TABLE consents (
	site_id   bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	client_id text NOT NULL,
	subject   text NOT NULL,
	data      jsonb NOT NULL,
	PRIMARY KEY (site_id, client_id, subject)
);

CREATE TABLE codes (
	site_id    bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	hash       text NOT NULL,
	expires_at timestamptz NOT NULL,
	used_at    timestamptz,
	grant_id   text,
	data       jsonb NOT NULL,
	PRIMARY KEY (site_id, hash)
);
CREATE INDEX codes_expiry ON codes (site_id, expires_at);

-- Grants and tokens reference clients and grants by ID without foreign
-- keys: a grant outlives its client's deletion (it is revoked, then
-- purged), and a token may outlive its grant until the purge.
CREATE TABLE grants (
	site_id    bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	id         text NOT NULL,
	client_id  text NOT NULL,
	revoked_at timestamptz,
	created_at timestamptz NOT NULL,
	data       jsonb NOT NULL,
	PRIMARY KEY (site_id, id)
);
CREATE INDEX grants_live_by_client ON grants (site_id, client_id) WHERE revoked_at IS NULL;
CREATE INDEX grants_revoked ON grants (site_id) WHERE revoked_at IS NOT NULL;

CREATE TABLE tokens (
	site_id    bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	hash       text NOT NULL,
	kind       text NOT NULL,
	grant_id   text NOT NULL,
	client_id  text NOT NULL,
	expires_at timestamptz NOT NULL,
	revoked_at timestamptz,
	rotated_at timestamptz,
	data       jsonb NOT NULL,
	PRIMARY KEY (site_id, hash)
);
CREATE INDEX tokens_expiry ON tokens (site_id, expires_at);
CREATE INDEX tokens_by_grant ON tokens (site_id, grant_id);

CREATE TABLE settings (
	site_id bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	key     text NOT NULL,
	value   bytea NOT NULL,
	PRIMARY KEY (site_id, key)
);

CREATE TABLE catalog (
	site_id    bigint PRIMARY KEY REFERENCES sites (id) ON DELETE CASCADE,
	feed       bytea NOT NULL,
	-- The feed's digest, so an unchanged feed fetched again is no write
	-- and no notification.
	sha256     bytea NOT NULL,
	updated_at timestamptz NOT NULL
);

-- jobs holds, per site and periodic job, when the next run may be
-- claimed, so one instance of the site runs it per period.
CREATE TABLE jobs (
	site_id  bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	name     text NOT NULL,
	next_run timestamptz NOT NULL,
	PRIMARY KEY (site_id, name)
);
