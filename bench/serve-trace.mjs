#!/usr/bin/env node
// A fresh `serve` over peer-bench's "many" workload with V8 flags of your choice (e.g. --trace-opt
// --trace-deopt --trace-gc), its stdout (where V8 traces go) to a file, then random 50-message pages
// from bench/http-load.mjs: 4 s at 1 connection, then two 6 s phases at N connections. Prints the
// pages/s of each phase and the file's line count at each phase's end, so a trace can be cut by phase
// (`sed -n FROM,TOp FILE`): what V8 compiles, deoptimizes and collects while the server is loaded.
//
//   node bench/serve-trace.mjs DATA_DIR CONNECTIONS "V8 FLAGS" OUT_FILE [CHECKOUT]
//
// (issue 15; docs/benchmarks.md, "proof (ninth session, 2026-12-03)".)
import { spawn, spawnSync } from 'node:child_process';
import { openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { linkedDataDir } from './servers.mjs';

const root = new URL('..', import.meta.url).pathname;
const [data, conns, flags, out, checkout = root] = process.argv.slice(2);
if (out === undefined) throw new Error('usage: serve-trace.mjs DATA_DIR CONNECTIONS "V8 FLAGS" OUT_FILE [CHECKOUT]');
const token = 'bench-token-0123456789';
const pages = join(data, 'pages-many.json');
const ids = [...new Set(JSON.parse(readFileSync(pages, 'utf8')).map((p) => p.id))];
const dir = linkedDataDir(data, ids, join(data, `trace-${process.pid}`));
const child = spawn(process.execPath, [...flags.split(' ').filter(Boolean), join(checkout, 'bin/session-pager.js'), 'serve', '--data', dir, '--port', '0', '--workers', '2', '--log-level', 'warn'], {
  env: { ...process.env, SESSION_PAGER_TOKEN: token },
  stdio: ['ignore', openSync(out, 'w'), 'pipe'],
});
let err = '';
child.stderr.on('data', (d) => (err += d));
let port;
for (let i = 0; port === undefined; i++) {
  if (i > 600) throw new Error(`serve did not start: ${err}`);
  await new Promise((r) => setTimeout(r, 100));
  port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(err)?.[1];
}
const url = `http://127.0.0.1:${port}`;
while (!(await fetch(`${url}/readyz`).then((r) => r.ok, () => false))) await new Promise((r) => setTimeout(r, 50));
const lines = () => readFileSync(out, 'utf8').split('\n').length;
const load = (c, s) => JSON.parse(spawnSync(process.execPath, [join(root, 'bench/http-load.mjs'), '--url', url, '--token', token, '--pages', pages, '--random', '--connections', c, '--seconds', s], { encoding: 'utf8' }).stdout.trim().split('\n').pop());
const marks = [{ phase: 'ready', line: lines() }];
for (const [c, s] of [['1', '4'], [conns, '6'], [conns, '6']]) marks.push({ phase: `${c} connections ${s} s`, okPerSec: load(c, s).okPerSec, line: lines() });
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify(marks)}\n`);
