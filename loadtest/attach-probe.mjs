/**
 * Loaded into the server process by the overload suite's `--phases` (node --import): where an
 * attach's time goes on the server's side, per connection, on the machine's monotonic clock
 * (CLOCK_MONOTONIC, the same in every process, so loadtest/attach-phases.mjs matches these with
 * the clients' own times by the client's port): when the server's loop accepted the connection,
 * when the request's head was parsed ('request'), and when the server first wrote to the socket
 * (the response head, corked with the snapshot's start). A request arriving while the server's
 * loop is busy (a collection, other work) waits in the kernel's accept queue: the server's
 * latency histogram, which starts at 'request', cannot see it.
 *
 * On SIGUSR2 the records so far go to $SESSION_PAGER_PROBE_OUT (written whole, then renamed:
 * the suite waits for the file) and are cleared. Diagnostics only: not part of the server.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { Server } from 'node:http';

const now = () => Number(process.hrtime.bigint()) / 1e6;
let records = [];
const emit = Server.prototype.emit;
Server.prototype.emit = function probedEmit(event, arg) {
  if (event === 'connection') {
    const socket = arg;
    const r = { port: socket.remotePort, accept: now(), request: null, write: null };
    records.push(r);
    socket.attachProbe = r;
    // The first write, whichever path it takes (write, or writev when corked pieces are flushed).
    for (const k of ['write', '_writev']) {
      const original = socket[k];
      if (typeof original !== 'function') continue;
      socket[k] = function probedWrite(...args) {
        r.write ??= now();
        return original.apply(this, args);
      };
    }
  } else if (event === 'request') {
    const r = arg.socket?.attachProbe;
    if (r !== undefined && r.request === null) r.request = now();
  }
  return emit.apply(this, arguments);
};

process.on('SIGUSR2', () => {
  const out = process.env.SESSION_PAGER_PROBE_OUT;
  if (!out) return;
  const taken = records;
  records = [];
  writeFileSync(`${out}.tmp`, JSON.stringify(taken));
  renameSync(`${out}.tmp`, out);
});
