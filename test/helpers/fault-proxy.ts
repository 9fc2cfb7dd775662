/**
 * Proxies that break a connection the way networks and intermediaries do,
 * in front of a real server, on 127.0.0.1:
 * - `TcpProxy`: forwards bytes; `cut()` drops every open connection, and
 *   `cutNextFollowAfter(n)` drops the next follow connection once n bytes
 *   of its answer passed (mid-frame, mid-chunk: wherever n lands).
 * - `SseProxy` (HTTP level): forwards requests; on follow streams it can
 *   drop events (a lossy intermediary), rewind `Last-Event-ID` (a server
 *   that resends what the client had), advance it once (a resume that loses
 *   events) or strip it (a server that ignores it and sends a new snapshot).
 */
import { createServer as createHttpServer, request as httpRequest, type Server as HttpServer } from 'node:http';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private server!: Server;
  private readonly pairs = new Set<[Socket, Socket]>();
  /**
   * Arm a cut: the next follow request seen makes its connection drop once
   * `bytes` more bytes of the answer went to the client (once).
   */
  cutNextFollowAfter(bytes: number): void {
    this.pendingCut = bytes;
  }
  private pendingCut: number | undefined;
  connections = 0;
  cuts = 0;
  url = '';

  constructor(private readonly target: { host: string; port: number }) {}

  async listen(): Promise<this> {
    this.server = createServer((down) => {
      this.connections++;
      const up = connect(this.target.port, this.target.host);
      const pair: [Socket, Socket] = [down, up];
      this.pairs.add(pair);
      let left: number | undefined;
      const kill = () => {
        this.pairs.delete(pair);
        down.destroy();
        up.destroy();
      };
      down.on('data', (d: Buffer) => {
        if (this.pendingCut !== undefined && d.includes('/follow')) {
          left = this.pendingCut;
          this.pendingCut = undefined;
        }
        up.write(d);
      });
      up.on('data', (d: Buffer) => {
        if (left !== undefined && d.length >= left) {
          down.write(d.subarray(0, left), () => {
            this.cuts++;
            kill();
          });
          left = 0;
          up.pause();
          return;
        }
        if (left !== undefined) left -= d.length;
        down.write(d);
      });
      down.on('close', kill);
      up.on('close', kill);
      down.on('error', kill);
      up.on('error', kill);
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Drop every open connection now. */
  cut(): void {
    for (const [down, up] of this.pairs) {
      this.cuts++;
      down.destroy();
      up.destroy();
    }
    this.pairs.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

export interface SseFaults {
  /** Event seqs never passed on (each only once). */
  drop?: Set<number>;
  /** On a resume, ask the server for this many seqs before the client's Last-Event-ID. */
  rewind?: number;
  /** On a resume, remove Last-Event-ID (the server answers with a new snapshot). */
  stripLastEventId?: boolean;
  /**
   * On the first reconnect only (a follow request after the first one), ask the server for this
   * many seqs past the client's Last-Event-ID (a resume that loses events: the stream goes on
   * after a gap the client must repair).
   */
  skipOnResume?: number;
  /** Close the follow stream after passing this many event frames. */
  cutAfterEvents?: number;
}

export class SseProxy {
  private server!: HttpServer;
  url = '';
  follows = 0;
  resumes = 0;
  dropped = 0;
  private readonly open = new Set<() => void>();

  constructor(
    private readonly target: { host: string; port: number },
    readonly faults: SseFaults = {},
  ) {}

  async listen(): Promise<this> {
    this.server = createHttpServer((req, res) => {
      const isFollow = /\/follow(\?|$)/.test(req.url ?? '');
      const headers = { ...req.headers };
      if (isFollow) {
        this.follows++;
        // It edits the event stream as text: a proxy that rewrites a body asks for it uncoded
        // (follow streams are coded when the client accepts it, issue 12).
        headers['accept-encoding'] = 'identity';
        const last = headers['last-event-id'];
        if (typeof last === 'string') {
          this.resumes++;
          if (this.faults.stripLastEventId) delete headers['last-event-id'];
          else if (this.faults.rewind) headers['last-event-id'] = String(Math.max(-1, Number(last) - this.faults.rewind));
          else if (this.faults.skipOnResume && this.follows > 1) {
            headers['last-event-id'] = String(Number(last) + this.faults.skipOnResume);
            delete this.faults.skipOnResume;
          }
        }
      }
      const up = httpRequest({ host: this.target.host, port: this.target.port, method: req.method, path: req.url, headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        if (!isFollow || ur.statusCode !== 200) {
          ur.pipe(res);
          return;
        }
        const stop = () => {
          ur.destroy();
          res.destroy();
        };
        this.open.add(stop);
        res.on('close', () => {
          this.open.delete(stop);
          ur.destroy();
        });
        let buf = '';
        let events = 0;
        ur.setEncoding('utf8');
        ur.on('data', (chunk: string) => {
          buf += chunk;
          let end: number;
          while ((end = buf.indexOf('\n\n')) !== -1) {
            const frame = buf.slice(0, end + 2);
            buf = buf.slice(end + 2);
            const id = /^id: (-?\d+)$/m.exec(frame)?.[1];
            const isEvent = /^event: event$/m.test(frame);
            if (isEvent && id !== undefined && this.faults.drop?.has(Number(id))) {
              this.faults.drop.delete(Number(id));
              this.dropped++;
              continue;
            }
            if (isEvent && this.faults.cutAfterEvents !== undefined && ++events >= this.faults.cutAfterEvents) {
              // Drop the connection once this frame is out, as a network would after it.
              ur.destroy();
              res.write(frame, () => res.destroy());
              return;
            }
            res.write(frame);
          }
        });
        ur.on('end', () => res.end(buf));
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Drop every open follow stream now. */
  cut(): void {
    for (const stop of [...this.open]) stop();
  }

  async close(): Promise<void> {
    this.cut();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
