-- airlock's ledger mirror: the migration from schema version 1 to 2
-- (docs/ledger.md, "The mirror"). `airlock ledger mirror init` applies it
-- in the transaction that applies version 1 to a new database, or alone to
-- a database at version 1; embedded at build time (src/ledger/pgmirror.c).
--
-- Version 2 keeps the witnesses' cosignatures of each log's checkpoints
-- (docs/witness.md), so that `airlock fleet` shows each host's last
-- cosigned checkpoint. They come from the host's own `ledger push`, which
-- got them from the witnesses, through airlock.cosign(): only a log's own
-- pusher role adds to it, only for a checkpoint the mirror accepted, and
-- only lines of the cosignature/v1 form. PostgreSQL has no Ed25519: the
-- signatures are for readers to verify (`airlock fleet --policy FILE`).

-- Two inits at once: the second waits here, then finds version 2.
LOCK TABLE airlock.schema_version IN EXCLUSIVE MODE;
DO $$
BEGIN
	IF (SELECT max(version) FROM airlock.schema_version) IS DISTINCT FROM 1 THEN
		RAISE EXCEPTION 'the mirror''s schema is not at version 1: not migrated to 2'
			USING ERRCODE = 'AL400';
	END IF;
END $$;
INSERT INTO airlock.schema_version (version) VALUES (2);

-- One row per cosignature line: the checkpoint it covers (origin, size),
-- the witness's key name (the line's second field) and the line itself,
-- "— <name> <base64(key id 4 || timestamp 8 || Ed25519 signature 64)>".
CREATE TABLE airlock.cosignatures (
	origin text NOT NULL,
	size bigint NOT NULL,
	witness text NOT NULL,
	line text NOT NULL,
	added timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (origin, size, line),
	FOREIGN KEY (origin, size) REFERENCES airlock.checkpoints (origin, size)
);

CREATE TRIGGER cosignatures_append_only BEFORE UPDATE OR DELETE ON airlock.cosignatures
	FOR EACH ROW EXECUTE FUNCTION airlock.refuse_change();
CREATE TRIGGER cosignatures_no_truncate BEFORE TRUNCATE ON airlock.cosignatures
	FOR EACH STATEMENT EXECUTE FUNCTION airlock.refuse_change();

-- The second way in: p_lines (one cosignature line each, newline
-- separated) for the checkpoint of p_size entries of p_origin's log, by
-- the role that pushes that log. Returns how many lines were new; a line
-- held already is skipped (a push repeated after a lost reply).
CREATE FUNCTION airlock.cosign(p_origin text, p_size bigint, p_lines text) RETURNS bigint
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	lg airlock.logs;
	l text;
	w text;
	added bigint := 0;
	n int;
BEGIN
	IF p_origin IS NULL OR p_size IS NULL OR p_lines IS NULL OR p_lines = '' THEN
		RAISE EXCEPTION 'a cosign names the origin, the size and the lines'
			USING ERRCODE = 'AL400';
	END IF;
	SELECT * INTO lg FROM airlock.logs WHERE origin = p_origin;
	IF NOT FOUND OR lg.pusher <> session_user THEN
		RAISE EXCEPTION 'the log % is not pushed by role %', p_origin, session_user
			USING ERRCODE = 'AL403';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM airlock.checkpoints k WHERE k.origin = p_origin AND k.size = p_size) THEN
		RAISE EXCEPTION 'the mirror holds no checkpoint of % entries of log %', p_size, p_origin
			USING ERRCODE = 'AL400';
	END IF;
	FOREACH l IN ARRAY string_to_array(p_lines, E'\n') LOOP
		-- cosignature/v1: 4 + 8 + 64 bytes, 104 base64 characters
		IF l !~ '^— [^ +]+ [A-Za-z0-9+/]{102}==$' OR length(l) > 400
		   OR length(decode(split_part(l, ' ', 3), 'base64')) <> 76 THEN
			RAISE EXCEPTION 'not a cosignature line' USING ERRCODE = 'AL400';
		END IF;
		w := split_part(l, ' ', 2);
		INSERT INTO airlock.cosignatures (origin, size, witness, line)
			VALUES (p_origin, p_size, w, l) ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS n = ROW_COUNT;
		added := added + n;
	END LOOP;
	-- As many as a policy may name witnesses (src/ledger/witness.h): one
	-- host's credentials cannot fill the table readers load.
	IF (SELECT count(*) FROM airlock.cosignatures s WHERE s.origin = p_origin AND s.size = p_size) > 64 THEN
		RAISE EXCEPTION 'more than 64 cosignatures of one checkpoint' USING ERRCODE = 'AL400';
	END IF;
	RETURN added;
END $$;

-- Each log's latest checkpoint with cosignatures, one row per line.
CREATE VIEW airlock.cosigned_heads AS
	SELECT s.origin, s.size, k.checkpoint, s.witness, s.line, s.added
	FROM airlock.cosignatures s
	JOIN airlock.checkpoints k ON k.origin = s.origin AND k.size = s.size
	WHERE s.size = (SELECT max(t.size) FROM airlock.cosignatures t WHERE t.origin = s.origin);

REVOKE ALL ON airlock.cosignatures, airlock.cosigned_heads FROM PUBLIC, airlock_pusher;
REVOKE ALL ON FUNCTION airlock.cosign(text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION airlock.cosign(text, bigint, text) TO airlock_pusher;
GRANT SELECT ON airlock.cosignatures, airlock.cosigned_heads TO airlock_reader;
