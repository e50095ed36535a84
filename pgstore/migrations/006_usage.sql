-- A school's usage (store.UsageStore): what its instances served, added
-- up in one row per minute and one per hour, which every instance adds
-- its counts to (usage_sum adds the named counts of the jsonb columns),
-- so that the rows are the school's figures across instances. causes
-- holds the refusals by cause name, latency the durations' histogram
-- by bin number (store.Latency); zeros are left out of both. An addition
-- deletes the rows past their retention, so a school has at most 91
-- minute rows and 26 hour rows. Nothing here names a person.
CREATE TABLE usage_buckets (
	site_id bigint NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
	-- The bucket's span in seconds: 60 or 3600.
	span    integer NOT NULL,
	start   timestamptz NOT NULL,
	tokens  bigint NOT NULL DEFAULT 0,
	refused bigint NOT NULL DEFAULT 0,
	causes  jsonb NOT NULL DEFAULT '{}',
	latency jsonb NOT NULL DEFAULT '{}',
	PRIMARY KEY (site_id, span, start)
);

-- When a school last served a request, at any instance.
CREATE TABLE usage_last_active (
	site_id bigint PRIMARY KEY REFERENCES sites (id) ON DELETE CASCADE,
	at      timestamptz NOT NULL
);

-- usage_sum adds two objects of counts key by key.
CREATE FUNCTION usage_sum(a jsonb, b jsonb) RETURNS jsonb
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $$
		SELECT coalesce(jsonb_object_agg(key, total), '{}'::jsonb) FROM (
			SELECT key, sum(value::numeric) AS total
			FROM (SELECT * FROM jsonb_each_text(a) UNION ALL SELECT * FROM jsonb_each_text(b)) AS counts
			GROUP BY key
		) AS sums
	$$;
