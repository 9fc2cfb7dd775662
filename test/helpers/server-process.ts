/**
 * A real `session-pager serve` process (the built bin, as users run it) and
 * a raw-socket HTTP client for it: requests are written byte for byte (bad
 * escapes, raw non-ASCII bytes, oversized heads, bodies in any encoding),
 * which a fetch client would refuse or normalize, and the answer is parsed
 * from the bytes that come back.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'bin', 'session-pager.js');

export interface ServerProcess {
  child: ChildProcess;
  host: string;
  port: number;
  url: string;
  /** Everything the process wrote, for failure messages. */
  output(): string;
  /** SIGTERM, then SIGKILL after a grace period; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * The load sheds a spawned server is started without unless a test asks for them
 * (`shedding: true`): new follows shed in the event loop's busy streaks, and every
 * `/v1` request while the loop lags. On a loaded CI machine (load ~15 on 2 cores) they
 * answer `503 overloaded` to a test that is not about them; the in-process test
 * servers turn them off the same way. The admission gates stay on (they shed only
 * past their sizes, which these tests do not reach). `opts.env` still wins.
 */
export const SHEDDING_OFF: Readonly<Record<string, string>> = { SESSION_PAGER_FOLLOW_SHED_MS: '0', SESSION_PAGER_MAX_EVENT_LOOP_LAG_MS: '0' };

export async function startServerProcess(opts: { dataDir: string; token?: string; args?: string[]; cwd?: string; env?: NodeJS.ProcessEnv; /** Keep the follow streak shed and the lag guard at their defaults (SHEDDING_OFF). */ shedding?: boolean }): Promise<ServerProcess> {
  const args = [BIN, 'serve', '--data', opts.dataDir, '--port', '0', '--log-level', 'warn', '--workers', '1', ...(opts.args ?? [])];
  const env: NodeJS.ProcessEnv = { ...process.env, ...(opts.shedding === true ? {} : SHEDDING_OFF), ...(opts.env ?? {}) };
  delete env.SESSION_PAGER_TOKEN;
  if (opts.token !== undefined) env.SESSION_PAGER_TOKEN = opts.token;
  const child = spawn(process.execPath, args, { cwd: opts.cwd ?? ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within 30 s:\n${out}`)), 30_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const m = /listening on (http:\/\/[^\s)]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolveUrl(m[1] as string);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${out}`));
    });
  });
  const u = new URL(url);
  let stopping: Promise<number | null> | undefined;
  return {
    child,
    host: u.hostname,
    port: Number(u.port),
    url,
    output: () => out,
    stop: () =>
      (stopping ??= (async () => {
        if (child.exitCode !== null) return child.exitCode;
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        const code = await exited;
        clearTimeout(t);
        return code;
      })()),
  };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawResult {
  /** The first complete response, or undefined when none came. */
  answer?: RawAnswer;
  /** Bytes received in all. */
  received: Buffer;
  /** How the exchange ended: a complete answer, the peer closing, a socket error, or the timeout. */
  ended: 'answer' | 'closed' | 'error' | 'timeout';
  error?: string;
}

/** Parse one HTTP/1.1 response from the start of `buf`; undefined while incomplete. */
export function parseResponse(buf: Buffer, closed: boolean, head = false): { answer: RawAnswer; rest: Buffer } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (!m) throw new Error(`not an HTTP response: ${JSON.stringify(buf.subarray(0, 80).toString('latin1'))}`);
  const status = Number(m[1]);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const c = l.indexOf(':');
    if (c > 0) {
      const k = l.slice(0, c).trim().toLowerCase();
      const v = l.slice(c + 1).trim();
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
    }
  }
  let at = end + 4;
  if (head || status === 304 || status === 204 || (status >= 100 && status < 200)) {
    return { answer: { status, headers, body: Buffer.alloc(0) }, rest: buf.subarray(at) };
  }
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    if (buf.length < at + n) return undefined;
    return { answer: { status, headers, body: buf.subarray(at, at + n) }, rest: buf.subarray(at + n) };
  }
  if ((headers['transfer-encoding'] ?? '').toLowerCase().includes('chunked')) {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at);
      if (lineEnd === -1) return undefined;
      const size = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16);
      if (!Number.isFinite(size)) throw new Error('bad chunk size');
      if (size === 0) {
        const trailerEnd = buf.indexOf('\r\n\r\n', lineEnd);
        if (trailerEnd === -1 && buf.indexOf('\r\n', lineEnd + 2) !== lineEnd + 2) return undefined;
        return { answer: { status, headers, body: Buffer.concat(parts) }, rest: Buffer.alloc(0) };
      }
      if (buf.length < lineEnd + 2 + size + 2) return undefined;
      parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
  }
  // Neither length nor chunks: the body runs to the close.
  if (!closed) return undefined;
  return { answer: { status, headers, body: buf.subarray(at) }, rest: Buffer.alloc(0) };
}

/**
 * Write `request` (the head, then the body in slices, honouring
 * backpressure) and read until one whole response came, the server closed,
 * or `timeoutMs`. The client never half-closes (as browsers and curl do not):
 * node treats a half-closed request as aborted.
 */
export function rawExchange(
  port: number,
  request: Buffer | string,
  opts: { timeoutMs?: number; head?: boolean; host?: string; /** Stop once the head came when it says so (a stream that never ends). */ headIsEnough?: (status: number, headers: Record<string, string>) => boolean } = {},
): Promise<RawResult> {
  const data = typeof request === 'string' ? Buffer.from(request, 'latin1') : request;
  return new Promise((resolvePromise) => {
    const socket = connect(port, opts.host ?? '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (ended: RawResult['ended'], error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const received = Buffer.concat(chunks);
      let answer: RawAnswer | undefined;
      try {
        answer = parseResponse(received, ended !== 'answer', opts.head)?.answer;
      } catch {
        answer = undefined;
      }
      socket.destroy();
      resolvePromise({ answer, received, ended, ...(error === undefined ? {} : { error }) });
    };
    const timer = setTimeout(() => finish('timeout'), opts.timeoutMs ?? 15_000);
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      try {
        const all = Buffer.concat(chunks);
        if (parseResponse(all, false, opts.head) !== undefined) finish('answer');
        else if (opts.headIsEnough !== undefined) {
          const head = parseResponse(all, false, true)?.answer;
          if (head !== undefined && opts.headIsEnough(head.status, head.headers)) {
            settled = true;
            clearTimeout(timer);
            socket.destroy();
            resolvePromise({ answer: head, received: all, ended: 'answer' });
          }
        }
      } catch {
        finish('answer');
      }
    });
    socket.on('close', () => finish('closed'));
    socket.on('error', (e: NodeJS.ErrnoException) => finish('error', e.code ?? e.message));
    let off = 0;
    const SLICE = 64 * 1024;
    const pump = () => {
      while (off < data.length && !settled) {
        const ok = socket.write(data.subarray(off, off + SLICE));
        off += SLICE;
        if (!ok) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    socket.once('connect', pump);
  });
}

/** A request head (and body) as bytes: `lines` are the request line and headers, without CRLFs. */
export function rawRequestBytes(lines: (string | Buffer)[], body?: Buffer | string): Buffer {
  const parts: Buffer[] = [];
  for (const l of lines) parts.push(typeof l === 'string' ? Buffer.from(l, 'latin1') : l, Buffer.from('\r\n'));
  parts.push(Buffer.from('\r\n'));
  if (body !== undefined) parts.push(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  return Buffer.concat(parts);
}

/**
 * Write the whole request, reading nothing until it is written (a client
 * that sends its body before it looks at an answer), then everything until
 * the close. `endAfterMs` > 0, for keep-alive: hang up once two answers are
 * in, or that long after the write.
 */
export function sendThenRead(port: number, request: Buffer, opts: { endAfterMs?: number; timeoutMs?: number } = {}): Promise<{ text: string; wrote: boolean; error?: string }> {
  const endAfterMs = opts.endAfterMs ?? 0;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let error: string | undefined;
    let wrote = false;
    const s = connect(port, '127.0.0.1', () => {
      s.pause();
      s.write(request, (e) => {
        if (e) return;
        wrote = true;
        s.resume();
        if (endAfterMs > 0) setTimeout(() => s.end(), endAfterMs);
      });
    });
    s.on('data', (c: Buffer) => {
      chunks.push(c);
      if (endAfterMs <= 0) return;
      const text = Buffer.concat(chunks).toString('latin1');
      if ((text.match(/HTTP\/1\.1 \d{3}/g) ?? []).length >= 2 && text.endsWith('}')) s.end();
    });
    // The server closes after its answer (Connection: close): the client then closes too.
    s.on('end', () => s.end());
    s.on('error', (e: NodeJS.ErrnoException) => (error = e.code));
    s.on('close', () => resolve({ text: Buffer.concat(chunks).toString('latin1'), wrote, ...(error ? { error } : {}) }));
    setTimeout(() => s.destroy(), opts.timeoutMs ?? 60_000);
  });
}

export const MiB = 1024 * 1024;
/** The lingering close's byte bound at the default body limit (server/index.ts, lingering-close.ts). */
export const LINGER_BYTES = 64 * MiB;

/**
 * A client that writes an endless body (declared 1 GiB, or chunked) after
 * the head of `lines`, as fast as the socket takes it, reading what comes,
 * and goes on writing after the answer (allowHalfOpen: node's default
 * client would stop at the server's FIN). Never more than 512 MiB: a
 * server that reads without end fails the caller's bound.
 */
export function floodAfter(port: number, lines: string[], framing: 'length' | 'chunked'): Promise<{ bytes: number; received: Buffer; error?: string }> {
  return new Promise((resolve) => {
    let bytes = 0;
    let error: string | undefined;
    const received: Buffer[] = [];
    const chunk = Buffer.alloc(MiB, 0x20);
    const piece = framing === 'length' ? chunk : Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    const head = [...lines, framing === 'length' ? `Content-Length: ${1024 * MiB}` : 'Transfer-Encoding: chunked'];
    const s = connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () => {
      s.write(Buffer.from(head.join('\r\n') + '\r\n\r\n', 'latin1'));
      const pump = () => {
        while (!s.destroyed && bytes < 512 * MiB) {
          bytes += piece.length;
          if (!s.write(piece)) return void s.once('drain', pump);
        }
      };
      pump();
    });
    s.on('data', (c: Buffer) => received.push(c));
    s.on('error', (e: NodeJS.ErrnoException) => (error = e.code));
    s.on('close', () => resolve({ bytes, received: Buffer.concat(received), ...(error ? { error } : {}) }));
    setTimeout(() => s.destroy(), 60_000);
  });
}
