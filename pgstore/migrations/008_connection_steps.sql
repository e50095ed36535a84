-- The connection steps (store.StepStore): what each application's
-- attempts to connect came to, counted rather than repeated, one row per
-- application, person (named on refused steps only, when known), step
-- and reason, which every instance adds to. A school keeps at most
-- store.MaxSteps rows (an addition deletes the rows past it, those of
-- unknown clients first) and the janitor deletes the rows whose last
-- attempt is older than the retention. No token, code, verifier, secret
-- or e-mail is ever written here.
CREATE TABLE connection_steps (
	site_id   bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	client_id text NOT NULL,
	subject   text NOT NULL,
	step      text NOT NULL,
	reason    text NOT NULL,
	error     text NOT NULL,
	detail    text NOT NULL,
	count     bigint NOT NULL,
	first_at  timestamptz NOT NULL,
	last_at   timestamptz NOT NULL,
	PRIMARY KEY (site_id, client_id, subject, step, reason)
);

-- A person's rows: their connected-applications page, their export and
-- their erasure.
CREATE INDEX connection_steps_by_subject ON connection_steps (site_id, subject) WHERE subject <> '';

-- The janitor's purge.
CREATE INDEX connection_steps_by_last ON connection_steps (site_id, last_at);
