-- airlock's ledger mirror on PostgreSQL, schema version 1 (docs/ledger.md,
-- "The mirror"). Applied in one transaction by `airlock ledger mirror init
-- CONNINFO`, connected as the database's owner; embedded into the binary at
-- build time (src/ledger/pgmirror.c).
--
-- The database does not trust the pushing client: every row is written by
-- airlock.push() alone, which the role airlock_pusher may only EXECUTE, and
-- which accepts only a checkpoint that extends what the database holds,
-- checked here with the built-in sha256(): the previous size, the RFC 9162
-- consistency proof from the stored root, and the pushed lines' leaf hashes
-- extending the stored tree (its frontier: the roots of its perfect
-- subtrees, O(log n) per push) to the checkpoint's root. Rows are never
-- changed: triggers refuse UPDATE, DELETE and TRUNCATE on every table, so a
-- log's head is its checkpoint of the largest size (airlock.log_heads).

CREATE SCHEMA airlock;
REVOKE ALL ON SCHEMA airlock FROM PUBLIC;

CREATE TABLE airlock.schema_version (
	version integer PRIMARY KEY,
	applied timestamptz NOT NULL DEFAULT now()
);
INSERT INTO airlock.schema_version (version) VALUES (1);

-- One log per host, pinned at its first push: its origin (the key's name),
-- the key (vkey) and the login role that pushed it. A host that comes back
-- with another key (its ledger re-keyed or replaced) is refused; so is
-- another role (give each host its own login role, a member of
-- airlock_pusher, and one host's credentials cannot append to another's
-- log: the server checks the signature line's key id, not the Ed25519
-- signature itself).
CREATE TABLE airlock.logs (
	origin text PRIMARY KEY,
	host text NOT NULL UNIQUE,
	vkey text NOT NULL,
	pusher name NOT NULL,
	created timestamptz NOT NULL DEFAULT now()
);

-- Every checkpoint accepted, with the frontier of its tree.
CREATE TABLE airlock.checkpoints (
	origin text NOT NULL REFERENCES airlock.logs (origin),
	size bigint NOT NULL CHECK (size > 0),
	root bytea NOT NULL CHECK (length(root) = 32),
	frontier bytea[] NOT NULL,
	checkpoint text NOT NULL,
	pushed timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (origin, size)
);

-- Every entry once: its raw line (the leaf is sha256(0x00 || line)), and
-- the kind, id and path the line names, for a view across hosts.
CREATE TABLE airlock.entries (
	origin text NOT NULL REFERENCES airlock.logs (origin),
	seq bigint NOT NULL CHECK (seq >= 0),
	leaf bytea NOT NULL CHECK (length(leaf) = 32),
	kind text,
	id text,
	path text,
	line text NOT NULL,
	PRIMARY KEY (origin, seq)
);

CREATE VIEW airlock.log_heads AS
	SELECT l.origin, l.host, l.vkey, coalesce(c.size, 0) AS size, c.root, c.checkpoint, c.pushed
	FROM airlock.logs l
	LEFT JOIN LATERAL (SELECT * FROM airlock.checkpoints k WHERE k.origin = l.origin
			   ORDER BY k.size DESC LIMIT 1) c ON true;

CREATE FUNCTION airlock.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'airlock mirror: % on %.% refused: the mirror is append-only',
		TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME USING ERRCODE = 'AL403';
END $$;

CREATE TRIGGER schema_version_append_only BEFORE UPDATE OR DELETE ON airlock.schema_version
	FOR EACH ROW EXECUTE FUNCTION airlock.refuse_change();
CREATE TRIGGER schema_version_no_truncate BEFORE TRUNCATE ON airlock.schema_version
	FOR EACH STATEMENT EXECUTE FUNCTION airlock.refuse_change();
CREATE TRIGGER logs_append_only BEFORE UPDATE OR DELETE ON airlock.logs
	FOR EACH ROW EXECUTE FUNCTION airlock.refuse_change();
CREATE TRIGGER logs_no_truncate BEFORE TRUNCATE ON airlock.logs
	FOR EACH STATEMENT EXECUTE FUNCTION airlock.refuse_change();
CREATE TRIGGER checkpoints_append_only BEFORE UPDATE OR DELETE ON airlock.checkpoints
	FOR EACH ROW EXECUTE FUNCTION airlock.refuse_change();
CREATE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON airlock.checkpoints
	FOR EACH STATEMENT EXECUTE FUNCTION airlock.refuse_change();
CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON airlock.entries
	FOR EACH ROW EXECUTE FUNCTION airlock.refuse_change();
CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON airlock.entries
	FOR EACH STATEMENT EXECUTE FUNCTION airlock.refuse_change();

-- RFC 9162 2.1.1: an interior node.
CREATE FUNCTION airlock.node(l bytea, r bytea) RETURNS bytea
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT pg_catalog.sha256('\x01'::bytea || l || r) $$;

-- The root of the tree whose perfect subtrees' roots, largest first, are f.
CREATE FUNCTION airlock.frontier_root(f bytea[]) RETURNS bytea
	LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	h bytea;
BEGIN
	IF coalesce(cardinality(f), 0) = 0 THEN
		RETURN pg_catalog.sha256(''::bytea);
	END IF;
	h := f[cardinality(f)];
	FOR i IN REVERSE cardinality(f) - 1 .. 1 LOOP
		h := airlock.node(f[i], h);
	END LOOP;
	RETURN h;
END $$;

-- RFC 9162 2.1.4.2: whether proof (32-byte hashes, concatenated) takes the
-- tree of first leaves with root first_hash to the one of second leaves
-- with root second_hash.
CREATE FUNCTION airlock.consistent(first bigint, second bigint, first_hash bytea,
				   second_hash bytea, proof bytea) RETURNS boolean
	LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	c bytea[] := '{}';
	fn bigint;
	sn bigint;
	fr bytea;
	sr bytea;
BEGIN
	IF first < 1 OR first > second OR length(proof) % 32 <> 0 THEN
		RETURN false;
	END IF;
	IF first = second THEN
		RETURN length(proof) = 0 AND first_hash = second_hash;
	END IF;
	FOR i IN 0 .. length(proof) / 32 - 1 LOOP
		c := c || substring(proof FROM i * 32 + 1 FOR 32);
	END LOOP;
	IF first & (first - 1) = 0 THEN
		c := first_hash || c;
	END IF;
	IF cardinality(c) = 0 THEN
		RETURN false;
	END IF;
	fn := first - 1;
	sn := second - 1;
	WHILE fn & 1 = 1 LOOP
		fn := fn >> 1;
		sn := sn >> 1;
	END LOOP;
	fr := c[1];
	sr := c[1];
	FOR i IN 2 .. cardinality(c) LOOP
		IF sn = 0 THEN
			RETURN false;
		END IF;
		IF fn & 1 = 1 OR fn = sn THEN
			fr := airlock.node(c[i], fr);
			sr := airlock.node(c[i], sr);
			WHILE fn & 1 = 0 AND fn <> 0 LOOP
				fn := fn >> 1;
				sn := sn >> 1;
			END LOOP;
		ELSE
			sr := airlock.node(sr, c[i]);
		END IF;
		fn := fn >> 1;
		sn := sn >> 1;
	END LOOP;
	RETURN fr = first_hash AND sr = second_hash AND sn = 0;
END $$;

-- A refusal of a push that does not extend what the mirror holds: SQLSTATE
-- AL409, the size it holds as the detail (the client's -EEXIST).
CREATE FUNCTION airlock.conflict(held bigint, why text) RETURNS void
	LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the mirror holds % entries of this log: %', held, why
		USING ERRCODE = 'AL409', DETAIL = held::text;
END $$;

-- The one way in. p_host names the pushing installation, p_vkey its key;
-- p_old is the size the client believes the mirror holds, p_checkpoint the
-- signed note of the new size, p_proof the consistency proof from p_old to
-- it, p_entries the log's lines p_old.. each ending in a newline. Returns
-- the size held after the push; a push of what is held already is accepted
-- again (a reply lost to a crash).
CREATE FUNCTION airlock.push(p_host text, p_vkey text, p_old bigint, p_checkpoint text,
			     p_proof bytea, p_entries text) RETURNS bigint
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	lines text[];
	body_end int;
	v_origin text;
	v_size bigint;
	v_root bytea;
	key_id bytea;
	signed boolean := false;
	lg airlock.logs;
	held bigint := 0;
	held_root bytea;
	f bytea[] := '{}';
	news text[];
	leaves bytea[] := '{}';
	leaf bytea;
	n bigint;
BEGIN
	IF current_setting('server_encoding') <> 'UTF8' THEN
		RAISE EXCEPTION 'the mirror''s database is not UTF8' USING ERRCODE = 'AL400';
	END IF;
	IF p_host IS NULL OR p_vkey IS NULL OR p_old IS NULL OR p_checkpoint IS NULL
	   OR p_proof IS NULL OR p_entries IS NULL OR p_old < 0 THEN
		RAISE EXCEPTION 'a push names its host, key, old size, checkpoint, proof and entries'
			USING ERRCODE = 'AL400';
	END IF;

	-- The checkpoint: origin, size, root, a blank line, signature lines.
	lines := string_to_array(p_checkpoint, E'\n');
	body_end := array_position(lines, '');
	IF body_end IS NULL OR body_end < 4 OR lines[2] !~ '^(0|[1-9][0-9]{0,17})$'
	   OR lines[3] !~ '^[A-Za-z0-9+/]{43}=$' OR right(p_checkpoint, 1) <> E'\n' THEN
		RAISE EXCEPTION 'not a checkpoint' USING ERRCODE = 'AL400';
	END IF;
	v_origin := lines[1];
	v_size := lines[2]::bigint;
	v_root := decode(lines[3], 'base64');
	-- The key: "<origin>+<8 hex id>+<base64(0x01 || key)>", the id the
	-- first four bytes of sha256(name || 0x0a || 0x01 || key); the note
	-- carries a signature line by that key (its Ed25519 signature is for
	-- readers to verify: PostgreSQL has no Ed25519).
	IF p_vkey !~ '^[^+ ]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$'
	   OR split_part(p_vkey, '+', 1) <> v_origin THEN
		RAISE EXCEPTION 'the key is not the checkpoint''s origin''s' USING ERRCODE = 'AL400';
	END IF;
	key_id := decode(split_part(p_vkey, '+', 2), 'hex');
	IF key_id <> substring(sha256(convert_to(v_origin, 'UTF8') || '\x0a'::bytea
				      || decode(substring(p_vkey FROM '^[^+]+\+[0-9a-f]{8}\+(.*)$'), 'base64'))
			      FROM 1 FOR 4) THEN
		RAISE EXCEPTION 'the key''s id is not its hash' USING ERRCODE = 'AL400';
	END IF;
	FOR i IN body_end + 1 .. cardinality(lines) LOOP
		IF starts_with(lines[i], '— ' || v_origin || ' ')
		   AND split_part(lines[i], ' ', 3) ~ '^[A-Za-z0-9+/]+=*$'
		   AND substring(decode(split_part(lines[i], ' ', 3), 'base64') FROM 1 FOR 4) = key_id THEN
			signed := true;
		END IF;
	END LOOP;
	IF NOT signed THEN
		RAISE EXCEPTION 'the checkpoint carries no signature by the key' USING ERRCODE = 'AL400';
	END IF;

	-- The log, created at its host's first push, then locked: one push of a
	-- log at a time.
	INSERT INTO airlock.logs (origin, host, vkey, pusher)
		VALUES (v_origin, p_host, p_vkey, session_user) ON CONFLICT DO NOTHING;
	SELECT * INTO lg FROM airlock.logs WHERE origin = v_origin FOR UPDATE;
	IF NOT FOUND THEN
		SELECT h.size INTO held FROM airlock.log_heads h WHERE h.host = p_host;
		PERFORM airlock.conflict(coalesce(held, 0),
			format('host %s pushes another log: this checkpoint is signed by another key (re-keyed or replaced ledger)', p_host));
	END IF;
	SELECT k.size, k.root, k.frontier INTO held, held_root, f
		FROM airlock.checkpoints k WHERE k.origin = v_origin ORDER BY k.size DESC LIMIT 1;
	IF NOT FOUND THEN
		held := 0;
		f := '{}';
	END IF;
	IF lg.host <> p_host THEN
		PERFORM airlock.conflict(held, format('the log is host %s''s', lg.host));
	END IF;
	IF lg.pusher <> session_user THEN
		PERFORM airlock.conflict(held, format('the log is pushed by role %s', lg.pusher));
	END IF;
	IF lg.vkey <> p_vkey THEN
		PERFORM airlock.conflict(held, 'the log was pinned to another key');
	END IF;
	IF p_old <> held THEN
		PERFORM airlock.conflict(held, format('the push starts at %s', p_old));
	END IF;
	IF v_size < held THEN
		PERFORM airlock.conflict(held, format('the checkpoint is of %s: the ledger was cut or rolled back', v_size));
	END IF;
	IF v_size = held THEN
		IF v_root <> held_root OR p_entries <> '' THEN
			PERFORM airlock.conflict(held, 'another tree of the same size: a fork');
		END IF;
		RETURN held; -- held already
	END IF;
	IF held > 0 AND NOT airlock.consistent(held, v_size, held_root, v_root, p_proof) THEN
		PERFORM airlock.conflict(held, 'the consistency proof does not take the mirror''s tree to the checkpoint: a rewritten ledger');
	END IF;

	-- The new leaves, hashed here, extend the frontier to the new root.
	IF right(p_entries, 1) <> E'\n' THEN
		RAISE EXCEPTION 'entries end in a newline' USING ERRCODE = 'AL400';
	END IF;
	news := string_to_array(left(p_entries, -1), E'\n');
	IF coalesce(cardinality(news), 0) <> v_size - held THEN
		RAISE EXCEPTION 'the push carries % entries, not %', coalesce(cardinality(news), 0),
			v_size - held USING ERRCODE = 'AL400';
	END IF;
	n := held;
	FOR i IN 1 .. cardinality(news) LOOP
		leaf := sha256('\x00'::bytea || convert_to(news[i], 'UTF8'));
		leaves := leaves || leaf;
		f := f || leaf;
		-- one more leaf: merge the perfect subtrees it completes
		WHILE n & 1 = 1 LOOP
			f := f[1 : cardinality(f) - 2] || airlock.node(f[cardinality(f) - 1], f[cardinality(f)]);
			n := n >> 1;
		END LOOP;
		n := held + i;
	END LOOP;
	IF airlock.frontier_root(f) <> v_root THEN
		PERFORM airlock.conflict(held, 'the entries do not make the checkpoint''s root');
	END IF;

	INSERT INTO airlock.entries (origin, seq, leaf, kind, id, path, line)
		SELECT v_origin, held + t.ord - 1, leaves[t.ord], j ->> 'kind', j ->> 'id', j ->> 'path', t.line
		FROM unnest(news) WITH ORDINALITY AS t(line, ord),
		     LATERAL (SELECT CASE WHEN t.line ~ '^\{' THEN t.line::jsonb END AS j) AS p;
	INSERT INTO airlock.checkpoints (origin, size, root, frontier, checkpoint)
		VALUES (v_origin, v_size, v_root, f, p_checkpoint);
	RETURN v_size;
END $$;

-- The pusher: may call airlock.push() and nothing else.
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'airlock_pusher') THEN
		CREATE ROLE airlock_pusher LOGIN;
	END IF;
END $$;
REVOKE ALL ON ALL TABLES IN SCHEMA airlock FROM PUBLIC, airlock_pusher;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA airlock FROM PUBLIC, airlock_pusher;
GRANT USAGE ON SCHEMA airlock TO airlock_pusher;
GRANT EXECUTE ON FUNCTION airlock.push(text, text, bigint, text, bytea, text) TO airlock_pusher;

-- The reader (`airlock fleet`, docs/fleet.md): reads the tables and the
-- view, and nothing else; a login role of its own for a console that must
-- not push.
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'airlock_reader') THEN
		CREATE ROLE airlock_reader LOGIN;
	END IF;
END $$;
REVOKE ALL ON ALL TABLES IN SCHEMA airlock FROM airlock_reader;
GRANT USAGE ON SCHEMA airlock TO airlock_reader;
GRANT SELECT ON airlock.schema_version, airlock.logs, airlock.checkpoints, airlock.entries,
	airlock.log_heads TO airlock_reader;
