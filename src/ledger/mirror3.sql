-- airlock's ledger mirror: the migration from schema version 2 to 3
-- (docs/ledger.md, "The mirror"; docs/fleet.md, "Approving from one
-- place"). `airlock ledger mirror init` applies it after versions 1 and 2
-- to a new database, or alone to a database at version 2; embedded at
-- build time (src/ledger/pgmirror.c).
--
-- Version 3 keeps the approver's signatures of permits made away from the
-- permit's host (`airlock fleet approve HOST ID`), for the host to fetch
-- (`airlock permit exec`). An approval is written only through
-- airlock.approve(), which the role airlock_approver may EXECUTE, and read
-- by a host only through airlock.approvals_for(), which only the host's own
-- pusher role may call. The database is never trusted for an approval: the
-- host commits one only when the signature verifies under its own approver
-- in effect over its own permit's message as the permit is now, naming
-- its own log origin (read from its ledger key, not from here).

-- Two inits at once: the second waits here, then finds version 3.
LOCK TABLE airlock.schema_version IN EXCLUSIVE MODE;
DO $$
BEGIN
	IF (SELECT max(version) FROM airlock.schema_version) IS DISTINCT FROM 2 THEN
		RAISE EXCEPTION 'the mirror''s schema is not at version 2: not migrated to 3'
			USING ERRCODE = 'AL400';
	END IF;
END $$;
INSERT INTO airlock.schema_version (version) VALUES (3);

-- One row per approval sent: the permit's log and id, the message signed
-- (the approval's own "message"), the approval object as the approver's
-- airlock made it, the role that sent it and when.
CREATE TABLE airlock.approvals (
	id bigserial PRIMARY KEY,
	origin text NOT NULL REFERENCES airlock.logs (origin),
	permit bigint NOT NULL CHECK (permit > 0),
	message text NOT NULL,
	approval text NOT NULL,
	approved_by name NOT NULL DEFAULT session_user,
	added timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX approvals_permit ON airlock.approvals (origin, permit);

CREATE TRIGGER approvals_append_only BEFORE UPDATE OR DELETE ON airlock.approvals
	FOR EACH ROW EXECUTE FUNCTION airlock.refuse_change();
CREATE TRIGGER approvals_no_truncate BEFORE TRUNCATE ON airlock.approvals
	FOR EACH STATEMENT EXECUTE FUNCTION airlock.refuse_change();

-- The approver's way in: p_approval (a JSON object: approver, public_key,
-- message, signature) for permit p_permit of host p_host. The form is
-- checked here (the message names the permit and, on its last line, the
-- host's log origin), the signature and the origin by the host. Returns
-- the row's id.
CREATE FUNCTION airlock.approve(p_host text, p_permit bigint, p_approval text) RETURNS bigint
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	v_origin text;
	doc jsonb;
	v_id bigint;
BEGIN
	IF p_host IS NULL OR p_permit IS NULL OR p_permit < 1 OR p_approval IS NULL
	   OR length(p_approval) > 8192 THEN
		RAISE EXCEPTION 'an approval names the host, the permit and the approval'
			USING ERRCODE = 'AL400';
	END IF;
	SELECT origin INTO v_origin FROM airlock.logs WHERE host = p_host;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'the mirror holds no host %', p_host USING ERRCODE = 'AL400';
	END IF;
	BEGIN
		doc := p_approval::jsonb;
	EXCEPTION WHEN others THEN
		RAISE EXCEPTION 'the approval is not JSON' USING ERRCODE = 'AL400';
	END;
	IF jsonb_typeof(doc) <> 'object'
	   OR jsonb_typeof(doc -> 'message') IS DISTINCT FROM 'string'
	   OR (doc ->> 'message') NOT LIKE 'airlock.permit-approval/1' || E'\n' || 'permit=' || p_permit || E'\n%'
	   OR right(doc ->> 'message', length(v_origin) + 9) IS DISTINCT FROM E'\norigin=' || v_origin || E'\n'
	   OR (doc ->> 'public_key') !~ '^[0-9a-f]{64}$'
	   OR (doc ->> 'signature') !~ '^[0-9a-f]{128}$' THEN
		RAISE EXCEPTION 'not an approval of permit % of host % (airlock.permit-approval/1 naming its origin)',
			p_permit, p_host
			USING ERRCODE = 'AL400';
	END IF;
	-- A host loads every approval of its permit: a bound.
	IF (SELECT count(*) FROM airlock.approvals a WHERE a.origin = v_origin AND a.permit = p_permit) >= 16 THEN
		RAISE EXCEPTION 'more than 16 approvals of one permit' USING ERRCODE = 'AL400';
	END IF;
	INSERT INTO airlock.approvals (origin, permit, message, approval)
		VALUES (v_origin, p_permit, doc ->> 'message', p_approval) RETURNING id INTO v_id;
	RETURN v_id;
END $$;

-- The host's way to its own permits' approvals, newest first: only the
-- role that pushes p_host's log (the pusher reads no table).
CREATE FUNCTION airlock.approvals_for(p_host text, p_permit bigint)
	RETURNS TABLE (approval text, approved_by name, added timestamptz)
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	lg airlock.logs;
BEGIN
	SELECT * INTO lg FROM airlock.logs WHERE host = p_host;
	IF NOT FOUND OR lg.pusher <> session_user THEN
		RAISE EXCEPTION 'the host % is not pushed by role %', p_host, session_user
			USING ERRCODE = 'AL403';
	END IF;
	RETURN QUERY SELECT a.approval, a.approved_by, a.added FROM airlock.approvals a
		WHERE a.origin = lg.origin AND a.permit = p_permit ORDER BY a.id DESC;
END $$;

-- The approver: reads what the reader reads, and may call airlock.approve().
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'airlock_approver') THEN
		CREATE ROLE airlock_approver LOGIN;
	END IF;
END $$;
GRANT airlock_reader TO airlock_approver;
REVOKE ALL ON airlock.approvals FROM PUBLIC, airlock_pusher, airlock_approver;
REVOKE ALL ON SEQUENCE airlock.approvals_id_seq FROM PUBLIC, airlock_pusher, airlock_approver;
REVOKE ALL ON FUNCTION airlock.approve(text, bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION airlock.approvals_for(text, bigint) FROM PUBLIC;
GRANT USAGE ON SCHEMA airlock TO airlock_approver;
GRANT EXECUTE ON FUNCTION airlock.approve(text, bigint, text) TO airlock_approver;
GRANT EXECUTE ON FUNCTION airlock.approvals_for(text, bigint) TO airlock_pusher;
GRANT SELECT ON airlock.approvals TO airlock_reader;
