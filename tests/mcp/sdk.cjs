// The official TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in
// tests/mcp/versions.txt) drives `airlock mcp` over StdioClientTransport:
// list tools, call each, ping, cancel a long run (its processes are gone),
// progress, a failure that blocks a mutating run, a fixes run that closes it.
// usage: node tests/mcp/sdk.cjs BUILD_MCP_DIR   (AIRLOCK: the binary)
'use strict';
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createRequire } = require('node:module');

const req = createRequire(path.resolve(process.argv[2] || 'build-mcp') + '/node_modules/');
const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = req('@modelcontextprotocol/sdk/client/stdio.js');
const AIRLOCK = process.env.AIRLOCK;
assert.ok(AIRLOCK, 'set AIRLOCK to the airlock binary');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-mcp-sdk.'));
const work = path.join(tmp, 'work');
fs.mkdirSync(work);

let failures = 0, n = 0;
async function test(name, fn) {
	n++;
	try {
		await fn();
		console.log(`ok ${n} ${name}`);
	} catch (e) {
		failures++;
		console.log(`not ok ${n} ${name}`);
		console.log(String(e.stack || e).split('\n').map((l) => '# ' + l).join('\n'));
	}
}

function alive(marker) {
	try {
		execFileSync('pgrep', ['-f', marker]);
		return true;
	} catch {
		return false;
	}
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connect(state = 'state') {
	const transport = new StdioClientTransport({
		command: AIRLOCK,
		args: ['mcp', '--state-dir', path.join(tmp, state), '--workspace', work],
		cwd: work,
		stderr: 'inherit',
	});
	const client = new Client({ name: 'airlock-sdk-test', version: '1' });
	await client.connect(transport);
	return client;
}

const text = (r) => r.content.map((c) => c.text).join('\n');

(async () => {
	console.log('1..9');
	const client = await connect();

	await test('initialize negotiated 2025-11-25; the server is airlock', async () => {
		assert.equal(client.getServerVersion().name, 'airlock');
		assert.ok(client.getServerCapabilities().tools);
	});

	await test('tools/list: ten tools, each with inputSchema and outputSchema', async () => {
		const { tools } = await client.listTools();
		assert.deepEqual(tools.map((t) => t.name).sort(), ['classify', 'dryrun', 'gate', 'ledger_status', 'list_receipts', 'permit_exec', 'permit_propose', 'permit_status', 'run', 'show_receipt']);
		for (const t of tools) {
			assert.equal(t.inputSchema.type, 'object', t.name);
			assert.equal(t.outputSchema.type, 'object', t.name);
		}
	});

	await test('ping', async () => {
		assert.deepEqual(await client.ping(), {});
	});

	await test('each tool answers with structured content the SDK validates', async () => {
		const run = await client.callTool({ name: 'run', arguments: { argv: ['sh', '-c', 'echo hello'] } });
		assert.equal(run.isError, false);
		assert.equal(run.structuredContent.exit_code, 0);
		assert.equal(run.structuredContent.stdout, 'hello\n');
		const id = run.structuredContent.receipt;
		const shown = await client.callTool({ name: 'show_receipt', arguments: { id } });
		assert.equal(shown.structuredContent.receipt.id, id);
		assert.equal(shown.structuredContent.receipt.source, 'mcp');
		const list = await client.callTool({ name: 'list_receipts', arguments: { last: 5 } });
		assert.ok(list.structuredContent.receipts.some((e) => e.id === id));
		const cls = await client.callTool({ name: 'classify', arguments: { argv: ['rm', '-rf', '/'] } });
		assert.equal(cls.structuredContent.risk, 5);
		const gate = await client.callTool({ name: 'gate', arguments: {} });
		assert.equal(gate.structuredContent.open, 0);
		const dry = await client.callTool({ name: 'dryrun', arguments: { argv: ['sh', '-c', 'echo x > dry.txt'], expect: ['dry.txt'] } });
		assert.equal(dry.structuredContent.dryrun.changes[0].path, 'dry.txt');
		assert.ok(!fs.existsSync(path.join(work, 'dry.txt')), 'a dry run leaves the workspace alone');
		// make is risk 3 (a build): exec dry-runs and applies it itself
		fs.writeFileSync(path.join(work, 'Makefile'), 'gen:\n\techo p > permitted.txt\n');
		const prop = await client.callTool({ name: 'permit_propose', arguments: { proposal: { argv: ['make', '-s', 'gen'], reason: 'sdk test', expected_paths: ['permitted.txt'] } } });
		assert.equal(prop.isError, false, text(prop));
		const pid = prop.structuredContent.permit.id;
		const status = await client.callTool({ name: 'permit_status', arguments: { id: pid } });
		assert.equal(status.structuredContent.permit.state, 'PROPOSED');
		const exec = await client.callTool({ name: 'permit_exec', arguments: { id: pid } });
		assert.equal(exec.isError, false, text(exec));
		assert.equal(exec.structuredContent.permit.state, 'APPLIED', text(exec));
		assert.equal(fs.readFileSync(path.join(work, 'permitted.txt'), 'utf8'), 'p\n');
		const ledger = await client.callTool({ name: 'ledger_status', arguments: {} });
		assert.ok(ledger.structuredContent.size > 0);
	});

	await test('a tool error: bad arguments are isError, not a protocol error', async () => {
		const r = await client.callTool({ name: 'show_receipt', arguments: { id: 'x' } });
		assert.equal(r.isError, true);
	});

	await test('progress notifications for a long run with a progress token', async () => {
		const seen = [];
		const r = await client.callTool({ name: 'run', arguments: { argv: ['sleep', '2.5'] } }, undefined, { onprogress: (p) => seen.push(p), timeout: 30000 });
		assert.equal(r.structuredContent.exit_code, 0);
		assert.ok(seen.length >= 2, `progress seen: ${JSON.stringify(seen)}`);
		assert.ok(seen[1].progress > seen[0].progress);
	});

	// A cancelled run is recorded as cancelled (docs/gate.md, "Cancelled
	// runs"); in a state directory of its own all the same.
	await test('cancelling a long run ends its whole process tree', async () => {
		const other = await connect('state-cancel');
		const ac = new AbortController();
		const call = other.callTool({ name: 'run', arguments: { argv: ['sh', '-c', 'sleep 4171 & sleep 4172'] } }, undefined, { signal: ac.signal, timeout: 60000 });
		for (let i = 0; i < 50 && !alive('sleep 417[12]'); i++) await sleep(100);
		assert.ok(alive('sleep 4172'), 'the run started');
		ac.abort('test');
		await assert.rejects(call);
		for (let i = 0; i < 50 && alive('sleep 417[12]'); i++) await sleep(100);
		assert.ok(!alive('sleep 417[12]'), 'the run\'s processes are gone');
		assert.deepEqual(await other.ping(), {}, 'the server goes on');
		const list = await other.callTool({ name: 'list_receipts', arguments: { last: 1 } });
		const last = list.structuredContent.receipts[0];
		assert.equal(last.status, 'cancelled');
		await other.close();
	});

	let failed;
	await test('a failure blocks a mutating run with the hooks\' message', async () => {
		const r = await client.callTool({ name: 'run', arguments: { argv: ['sh', '-c', 'test -f fixed'] } });
		assert.equal(r.structuredContent.exit_code, 1);
		assert.equal(r.structuredContent.failure_opened, true);
		failed = r.structuredContent.receipt;
		const blocked = await client.callTool({ name: 'run', arguments: { argv: ['touch', 'fixed'] } });
		assert.equal(blocked.isError, true);
		assert.match(text(blocked), new RegExp(`airlock receipt ${failed} is an open failure`));
		assert.match(text(blocked), /does not run while the failure is open/);
		assert.ok(!fs.existsSync(path.join(work, 'fixed')));
		const gate = await client.callTool({ name: 'gate', arguments: {} });
		assert.equal(gate.structuredContent.open, 1);
	});

	await test('a fixes run that passes, and whose re-run passes, closes it', async () => {
		const r = await client.callTool({ name: 'run', arguments: { argv: ['touch', 'fixed'], fixes: failed } });
		assert.equal(r.isError, false, text(r));
		assert.equal(r.structuredContent.exit_code, 0);
		assert.equal(r.structuredContent.rerun.exit_code, 0);
		const gate = await client.callTool({ name: 'gate', arguments: {} });
		assert.equal(gate.structuredContent.open, 0);
		const after = await client.callTool({ name: 'run', arguments: { argv: ['touch', 'other'] } });
		assert.equal(after.isError, false);
	});

	await client.close();
	fs.rmSync(tmp, { recursive: true, force: true });
	process.exit(failures ? 1 : 0);
})().catch((e) => {
	console.log('not ok - ' + String(e.stack || e).replace(/\n/g, '\n# '));
	process.exit(1);
});
