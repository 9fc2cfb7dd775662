/**
 * SIGINT / SIGTERM sent to a real `import` or `gen` process while it works:
 * it exits 128 + the signal number with one line on stderr, leaves no temp
 * file, no lease and no partial session, and running it again works.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir } from './helpers/maint.js';

const bin = resolve(dirname(fileURLToPath(import.meta.url)), '../bin/session-pager.js');

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Start the CLI, send `sig` once `ready()` holds (polled), and wait for the exit. */
async function interruptWhen(args: string[], ready: () => boolean, sig: NodeJS.Signals): Promise<Exit & { sent: boolean }> {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
  let done = false;
  void exited.then(() => (done = true));
  let sent = false;
  const deadline = Date.now() + 150_000;
  while (!done && Date.now() < deadline) {
    if (ready()) {
      child.kill(sig);
      sent = true;
      break;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  if (!sent && !done) child.kill('SIGKILL');
  const e = await exited;
  return { ...e, stdout, stderr, sent };
}

function run(args: string[]): Promise<Exit> {
  return interruptWhen(args, () => false, 'SIGINT');
}

/** Every file under `dir`, relative (folders themselves not listed). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath ?? (d as unknown as { path: string }).path, d.name).slice(dir.length + 1))
    .sort();
}

const sizeOf = (p: string): number => statSync(p, { throwIfNoEntry: false })?.size ?? 0;
const tempLogs = (dataDir: string): string[] => {
  try {
    return readdirSync(join(dataDir, 'sessions')).filter((f) => f.endsWith('.tmp'));
  } catch {
    return [];
  }
};

/** A synthetic export big enough that importing it takes a while: JSONL, or one JSON array. */
async function writeExport(file: string, events: number, shape: 'jsonl' | 'array'): Promise<void> {
  const w = createWriteStream(file);
  const text = 'lorem ipsum dolor sit amet, '.repeat(4);
  let buf = shape === 'array' ? '[' : '{"type":"session","version":0,"id":"big","createdAt":1}\n';
  for (let i = 0; i < events; i++) {
    const e = i % 40 === 0 ? { type: 'user/message', seq: i, time: 1000 + i, data: { text } } : { type: 'assistant/chunk', seq: i, time: 1000 + i, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: text.slice(0, 10 + (i % 40)) } } };
    buf += shape === 'array' ? (i === 0 ? '' : ',') + JSON.stringify(e) : JSON.stringify(e) + '\n';
    if (buf.length > 1 << 20) {
      if (!w.write(buf)) await new Promise<void>((r) => w.once('drain', () => r()));
      buf = '';
    }
  }
  w.end(shape === 'array' ? buf + ']' : buf);
  await new Promise<void>((r) => w.once('finish', () => r()));
}

describe('interrupting gen', () => {
  let tmp: { dir: string; cleanup: () => void };
  beforeAll(() => {
    tmp = tempDataDir('sp-interrupt-gen-');
  });
  afterAll(() => tmp.cleanup());

  const noLeftovers = (data: string, id: string): void => {
    // Nothing of the session (log, sidecars, projections), no lease, no temp file.
    expect(filesUnder(data).filter((f) => f.includes(id))).toEqual([]);
    expect(filesUnder(data).some((f) => f.endsWith('.lock') || f.endsWith('.tmp'))).toBe(false);
  };

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s mid-run: exit %i, the unfinished session removed; the same command again runs to the end', async (sig, code) => {
    const data = join(tmp.dir, `one-${sig}`);
    const args = ['gen', '--data', data, '--events', '200000', '--seed', '2', '--id-prefix', 'g'];
    const i = await interruptWhen(args, () => sizeOf(join(data, 'sessions', 'g-2-0.events')) > 100_000, sig);
    expect(i.sent).toBe(true);
    expect(i.code).toBe(code);
    expect(i.stderr).toBe(`session-pager gen: interrupted by ${sig}; nothing unfinished was left behind\n`);
    expect(i.stdout).toBe('');
    noLeftovers(data, 'g-2-0');
    const again = await run(args);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^g-2-0 200000 events \d+ bytes\n$/);
    expect((await run(['doctor', 'g-2-0', '--data', data])).code).toBe(0);
  }, 180_000);

  it('SIGKILL mid-run (nothing can clean up): the session left shows degraded, "gen did not finish", never as a healthy shorter one', async () => {
    const data = join(tmp.dir, 'killed');
    const args = ['gen', '--data', data, '--events', '200000', '--seed', '3', '--id-prefix', 'g'];
    const i = await interruptWhen(args, () => sizeOf(join(data, 'sessions', 'g-3-0.events')) > 100_000, 'SIGKILL');
    expect(i.sent).toBe(true);
    expect(i.signal).toBe('SIGKILL');
    const doctor = await run(['doctor', '--json', '--data', data]);
    const sessions = (JSON.parse(doctor.stdout) as { sessions: { id: string; status: string; eventCount: number | null; issues: { message: string }[] }[] }).sessions;
    expect(sessions.map((s) => s.id)).toEqual(['g-3-0']);
    expect(sessions[0]!.status).toBe('degraded');
    expect(sessions[0]!.eventCount).toBeLessThan(200_000);
    expect(sessions[0]!.issues.map((x) => x.message).join('; ')).toMatch(/gen did not finish writing this session/);
  }, 180_000);

  it('SIGINT during the second of two sessions: the first, complete, stays; the second is removed', async () => {
    const data = join(tmp.dir, 'two');
    const args = ['gen', '--data', data, '--events', '200000', '--sessions', '2', '--seed', '2', '--id-prefix', 'g'];
    const i = await interruptWhen(args, () => sizeOf(join(data, 'sessions', 'g-2-1.events')) > 100_000, 'SIGINT');
    expect(i.sent).toBe(true);
    expect(i.code).toBe(130);
    expect(i.stdout).toMatch(/^g-2-0 200000 events \d+ bytes\n$/);
    noLeftovers(data, 'g-2-1');
    const doctor = await run(['doctor', '--json', '--data', data]);
    expect(doctor.code).toBe(0);
    expect((JSON.parse(doctor.stdout) as { sessions: { id: string; status: string }[] }).sessions.map((s) => [s.id, s.status])).toEqual([['g-2-0', 'ok']]);
  }, 180_000);
});

describe('interrupting import', () => {
  let tmp: { dir: string; cleanup: () => void };
  const inputs: Record<string, string> = {};
  beforeAll(async () => {
    tmp = tempDataDir('sp-interrupt-import-');
    inputs.array = join(tmp.dir, 'big.json');
    inputs.jsonl = join(tmp.dir, 'big.jsonl');
    await writeExport(inputs.array, 120_000, 'array');
    // JSONL imports fast (~100 MB/s): this one is big enough to be caught mid-way.
    await writeExport(inputs.jsonl, 600_000, 'jsonl');
  }, 180_000);
  afterAll(() => tmp.cleanup());

  it.each([
    ['array', 'SIGINT', 130],
    ['array', 'SIGTERM', 143],
    ['jsonl', 'SIGINT', 130],
  ] as const)('%s input, %s mid-run: exit %i, no temp file, no lease, no session; a rerun works', async (shape, sig, code) => {
    const data = join(tmp.dir, `${shape}-${sig}`);
    const file = inputs[shape] as string;
    // Once the temp log has grown, the import is mid-way.
    const i = await interruptWhen(['import', file, '--id', 'big', '--data', data], () => tempLogs(data).some((f) => sizeOf(join(data, 'sessions', f)) > 1_000_000), sig);
    expect(i.sent).toBe(true);
    expect(i.code).toBe(code);
    expect(i.stderr).toBe(`session-pager import: interrupted by ${sig}; nothing unfinished was left behind\n`);
    expect(filesUnder(data)).toEqual([]);
    const again = await run(['import', file, '--id', 'big', '--data', data]);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^imported big from /);
    expect((await run(['doctor', 'big', '--data', data])).code).toBe(0);
  }, 180_000);
});
