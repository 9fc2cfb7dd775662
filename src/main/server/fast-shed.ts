/**
 * Page and follow requests that admission would shed at once are answered
 * before the framework sees them (issue 16 item 8, issue 15's capacity).
 *
 * Past capacity most requests of clients that ignore Retry-After are shed,
 * and every shed answer is main-thread time taken from the pages admitted.
 * Through fastify a shed cost a request and reply object, the router, the
 * root and auth hooks, a PagerError with its stack trace, the error handler
 * and three onSend hooks, about 0.3 ms each (a CPU profile at 256
 * connections), and the objects of a request held for its shed delay lived
 * long enough to be promoted to the old generation. Here it is a path test,
 * the admission check, a timer and a prepared body; the request is counted
 * (errors_total{code="overloaded"}, and admission_shed_total or, for a
 * follow, follow_shed_total; a follow shed for the loop's busy streak in
 * load_shed_total{reason="follow_loop_busy"}), not logged.
 *
 * Only what the framework's path would shed at once is answered here, in the
 * same order of checks: not while the server closes, a URL within the limit,
 * a Host header on HTTP/1.1, a valid token (a client without one still gets
 * 401), CORS off (its headers are the CORS plugin's). Everything else, and
 * every request admission would queue, goes to the framework as before.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Admission } from './admission.js';
import { bodyUnread } from './early-answer.js';
import type { ServerMetrics } from './metrics.js';
import type { ShedPacer } from './overload.js';
import type { LoopStreak } from './saturation.js';
import { REQUEST_ID_HEADER, genReqId } from './request-id.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface FastShedOptions {
  admission: Admission;
  /** The pacer the page routes use: a connection's shed streak is one, whichever path shed it. */
  pacer: ShedPacer;
  /** Whether an Authorization header value is accepted (auth.ts's tokenChecker). */
  authorized: (authorization: string | undefined) => boolean;
  maxUrlLength: number;
  retryAfterSeconds: number;
  metrics: ServerMetrics;
  /** The server is closing (its own hook answers then). */
  closing: () => boolean;
  /** The event loop's busy streak: whether to shed a new follow (saturation.ts); absent: never. */
  streak?: LoopStreak;
  /** The hold of a follow shed on the streak, ms (times a random 0.5-1.5). */
  followHoldMs?: number;
}

/** The admitted routes (routes.ts: page and follow), GET only; the id is checked by the route when admitted. */
const ADMITTED_PATH = /^\/v1\/sessions\/[^/?#]+\/(page|follow)(?:\?|$)/;

/** A handler that answers a request admission would shed at once, and says whether it did. */
export function fastShedder(o: FastShedOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const gateBody = Buffer.from(JSON.stringify({ error: { code: 'overloaded', message: 'server is overloaded (no page slot free soon enough); retry shortly' } }));
  const loopBody = Buffer.from(JSON.stringify({ error: { code: 'overloaded', message: 'server is overloaded (new follows wait too long for the event loop); retry shortly' } }));
  const retryAfter = String(o.retryAfterSeconds);
  const gateLength = String(gateBody.length);
  const loopLength = String(loopBody.length);
  const streak = o.streak;
  return (req, res) => {
    // Every request looks at the streak: it starts at the first look after the loop last blocked.
    const busy = streak === undefined ? 0 : streak.streak();
    const url = req.url;
    // A GET with a body goes the framework's way: its answer settles the body (early-answer.ts).
    if (req.method !== 'GET' || url === undefined || bodyUnread(req) || url.length > o.maxUrlLength) return false;
    const route = ADMITTED_PATH.exec(url)?.[1];
    if (route === undefined) return false;
    // The gate first (its count is admission's); else a new follow while the loop is saturated.
    const admission = route === 'follow' ? o.admission.follows : o.admission;
    const gate = admission.shedsAtOnce();
    if ((!gate && !(route === 'follow' && streak?.shed(busy) === true)) || o.closing()) return false;
    if (req.httpVersion === '1.1' && req.headers.host === undefined) return false;
    if (!o.authorized(req.headers.authorization)) return false;
    if (gate) admission.countShed();
    else o.metrics.loadShed.inc({ reason: 'follow_loop_busy' });
    const body = gate ? gateBody : loopBody;
    const length = gate ? gateLength : loopLength;
    o.metrics.errors.inc({ code: 'overloaded' });
    const socket = req.socket;
    const id = genReqId(req);
    const answer = () => {
      if (res.destroyed || socket.destroyed) return;
      res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'content-length': length, 'retry-after': retryAfter, [REQUEST_ID_HEADER]: id });
      res.end(body);
    };
    // Held as the framework's path holds it (overload.ts: holdShed, ShedPacer). A follow shed
    // on the streak is held a random 0.5-1.5 times its own base (growing as the pacer's on a
    // connection shed again): the follows shed in one streak, all held alike, came back together
    // as the next burst (docs/benchmarks.md, rel third round of the thirteenth session); and a
    // client kept away the page's 500 ms for each follow shed took more snapshots/s away than
    // the queue was over its bound (rel, fourteenth session).
    const delay = gate ? o.pacer.shed(socket) : o.pacer.shed(socket, undefined, o.followHoldMs) * (0.5 + Math.random());
    if (delay > 1) setTimeout(answer, delay);
    else answer();
    return true;
  };
}

/** Put `shed` in front of the server's request listeners (fastify's handler, or the early listener's). */
export function installFastShed(server: Server, shed: (req: IncomingMessage, res: ServerResponse) => boolean): void {
  const listeners = server.listeners('request') as Handler[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (shed(req, res)) return;
    for (const l of listeners) l.call(server, req, res);
  });
}
