#!/usr/bin/env node
// Import of one JSON document holding a top-level array of events (an export
// of SessionEvent[]), in a fresh `session-pager import` process: wall time and
// peak RSS as the OS reports it (/usr/bin/time's maximum resident set size,
// else the child's VmHWM from /proc). The document is written once and kept.
//   node bench/import-array-bench.mjs [--mb 1024] [--dir /tmp/session-pager-import-bench] [--format jsonl|binary]
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseScriptArgs } from './args.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: { mb: { type: 'string', default: '1024' }, dir: { type: 'string', default: '/tmp/session-pager-import-bench' }, format: { type: 'string', default: 'jsonl' } },
});
const bytes = Number(values.mb) * 1024 * 1024;
const dir = values.dir;
const doc = join(dir, `export-${values.mb}mb.json`);
const data = join(dir, 'data');
const bin = fileURLToPath(new URL('../bin/session-pager.js', import.meta.url));
mkdirSync(dir, { recursive: true });

/** A long session as an agent host would export it: mostly streamed text chunks, a message every 40 events. */
async function writeDocument() {
  const w = createWriteStream(doc);
  const words = 'the quick brown fox jumps over the lazy dog while the agent streams tokens '.split(' ');
  let written = 0;
  let buf = '[';
  let seq = 0;
  while (written + buf.length < bytes) {
    const text = words[seq % words.length] + ' ';
    const e =
      seq % 40 === 0
        ? { type: seq % 80 === 0 ? 'user/message' : 'assistant/message', seq, time: 1_700_000_000_000 + seq * 7, data: { message: { role: 'assistant', content: [{ type: 'text', text: words.join(' ').repeat(3) }] } } }
        : { type: 'assistant/chunk', seq, time: 1_700_000_000_000 + seq * 7, data: { turn: Math.floor(seq / 40), step: 0, chunk: { type: 'text-delta', index: 0, text } } };
    buf += (seq === 0 ? '' : ',') + JSON.stringify(e);
    seq++;
    if (buf.length > 1 << 20) {
      written += buf.length;
      if (!w.write(buf)) await new Promise((r) => w.once('drain', r));
      buf = '';
    }
  }
  w.end(buf + ']');
  await new Promise((r) => w.once('finish', r));
  return seq;
}

if (!existsSync(doc)) {
  const t = Date.now();
  const n = await writeDocument();
  console.log(`wrote ${doc}: ${(statSync(doc).size / 2 ** 20).toFixed(0)} MiB, ${n.toLocaleString('en')} events, ${((Date.now() - t) / 1000).toFixed(1)} s`);
}
rmSync(data, { recursive: true, force: true });

const useTime = existsSync('/usr/bin/time');
const args = [bin, 'import', doc, '--id', 'bench-export', '--format', values.format, '--data', data];
const cmd = useTime ? '/usr/bin/time' : process.execPath;
const argv = useTime ? ['-f', 'maxrss_kb=%M elapsed_s=%e', process.execPath, ...args] : args;
console.log(`$ ${useTime ? '/usr/bin/time -f "maxrss_kb=%M elapsed_s=%e" ' : ''}node ${args.map((a) => (a === bin ? 'bin/session-pager.js' : a)).join(' ')}`);
const t0 = Date.now();
const child = spawn(cmd, argv, { stdio: ['ignore', 'inherit', 'pipe'] });
let stderr = '';
child.stderr.on('data', (d) => (stderr += d));
// Without /usr/bin/time: sample the child's high-water mark until it exits.
let hwm = 0;
const timer = useTime
  ? null
  : setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) hwm = Math.max(hwm, Number(m[1]));
      } catch {}
    }, 20);
const code = await new Promise((r) => child.on('exit', r));
if (timer) clearInterval(timer);
const wall = (Date.now() - t0) / 1000;
const m = /maxrss_kb=(\d+)/.exec(stderr);
const peakKb = m ? Number(m[1]) : hwm;
process.stderr.write(stderr.replace(/maxrss_kb=.*\n?/, ''));
const log = join(data, 'sessions', 'bench-export.events');
console.log(
  `exit ${code}; ${(statSync(doc).size / 2 ** 20).toFixed(0)} MiB document -> ${existsSync(log) ? (statSync(log).size / 2 ** 20).toFixed(0) : '?'} MiB log in ${wall.toFixed(1)} s (${(statSync(doc).size / 2 ** 20 / wall).toFixed(1)} MiB/s); peak RSS ${(peakKb / 1024).toFixed(0)} MB (${m ? '/usr/bin/time' : 'VmHWM'})`,
);
rmSync(data, { recursive: true, force: true });
process.exitCode = code === 0 ? 0 : 1;
