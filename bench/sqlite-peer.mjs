// The SQLite peer (issue 15): what one would build instead of session-pager.
// The same storage records (each frame's record: an event or a packed row, as
// stored), in better-sqlite3 with WAL:
//   records(session, seq, count, body)   WITHOUT ROWID, PRIMARY KEY (session, seq)
//   messages(session, seq, group_start)  WITHOUT ROWID, PRIMARY KEY (session, seq): counted messages
//   sessions(id PRIMARY KEY, next_seq)
// A page is two index range scans: the last maxMessages counted messages
// before the end (their group starts give the cut), then the records from the
// one holding the cut to the end; rows cut at the page edges and runs split
// across append batches are packed again with the project's own packer
// (core/chunk-codec.js), so the page bytes must equal the service's.
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const dist = new URL('../dist/', import.meta.url);
const { RunPacker, runToRecords, validateRecord } = await import(new URL('core/chunk-codec.js', dist).href);
const { groupStart, isCountedMessage } = await import(new URL('core/page-rule.js', dist).href);
const { decodeFrame } = await import(new URL('streams/frame-codec.js', dist).href);
const { isRowType } = await import(new URL('core/types.js', dist).href);

export function openPeer(path, { readonly = false } = {}) {
  const db = new Database(path, readonly ? { readonly: true } : {});
  if (!readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(`CREATE TABLE IF NOT EXISTS records (session TEXT NOT NULL, seq INTEGER NOT NULL, count INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS messages (session TEXT NOT NULL, seq INTEGER NOT NULL, group_start INTEGER NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, next_seq INTEGER NOT NULL) WITHOUT ROWID;`);
  }
  return db;
}

/** Load one session's storage records from its .events file (one row per frame). */
export function loadSession(db, dataDir, id) {
  const bytes = readFileSync(join(dataDir, 'sessions', `${id}.events`));
  const insR = db.prepare('INSERT INTO records (session, seq, count, body) VALUES (?, ?, ?, ?)');
  const insM = db.prepare('INSERT INTO messages (session, seq, group_start) VALUES (?, ?, ?)');
  let next = 0;
  const tx = db.transaction(() => {
    const head = decodeFrame(bytes, 0, 0, bytes.length);
    let pos = head.length;
    while (pos < bytes.length) {
      const f = decodeFrame(bytes, pos, pos, bytes.length);
      if (!f.ok) throw new Error(`${id} at ${pos}: ${f.message}`);
      const r = validateRecord(f.record);
      const row = isRowType(r.type) && 'seq0' in r;
      const seq = row ? r.seq0 : r.seq;
      const count = row ? (r.type === 'tool-call-chunks' ? r.data.args.length : r.data.texts.length) : 1;
      insR.run(id, seq, count, JSON.stringify(r));
      if (!row && isCountedMessage(r)) insM.run(id, seq, groupStart(r));
      next = seq + count;
      pos += f.length;
    }
    db.prepare('INSERT INTO sessions (id, next_seq) VALUES (?, ?)').run(id, next);
  });
  tx();
  return next;
}

export class PeerReader {
  constructor(path) {
    this.db = openPeer(path, { readonly: true });
    this.qNext = this.db.prepare('SELECT next_seq FROM sessions WHERE id = ?').pluck();
    this.qMsgs = this.db.prepare('SELECT group_start FROM messages WHERE session = ? AND seq < ? ORDER BY seq DESC LIMIT ?').pluck();
    this.qStart = this.db.prepare('SELECT seq FROM records WHERE session = ? AND seq <= ? ORDER BY seq DESC LIMIT 1').pluck();
    this.qRecs = this.db.prepare('SELECT body FROM records WHERE session = ? AND seq >= ? AND seq < ? ORDER BY seq').pluck();
  }

  /** The page of SPEC sections 4 and 5 (maxBytes not supported), as bytes. */
  page(id, params = {}) {
    const next = this.qNext.get(id);
    if (next === undefined) throw new Error(`no session ${id}`);
    const through = params.throughSeq ?? next - 1;
    const end = Math.min(through + 1, params.beforeSeq ?? Number.MAX_SAFE_INTEGER);
    const max = params.maxMessages ?? 50;
    const starts = this.qMsgs.all(id, end, max);
    let cut = 0;
    if (starts.length === max) {
      cut = end;
      for (const g of starts) if (g < cut) cut = g;
    }
    const records = [];
    const packer = new RunPacker((item) => {
      if ('event' in item) records.push(item);
      else for (const r of runToRecords(item.run)) records.push(r);
    });
    if (end > cut) {
      const first = this.qStart.get(id, cut) ?? 0;
      for (const body of this.qRecs.iterate(id, first, end)) {
        const r = JSON.parse(body);
        if (isRowType(r.type) && 'seq0' in r) {
          const n = r.type === 'tool-call-chunks' ? r.data.args.length : r.data.texts.length;
          const from = Math.max(0, cut - r.seq0);
          const to = Math.min(n, end - r.seq0);
          if (to > from) packer.pushRow(r, from, to);
        } else if (r.seq >= cut && r.seq < end) packer.pushEvent(r);
      }
    }
    packer.flush();
    return Buffer.from(JSON.stringify({ sessionId: id, throughSeq: through, fromSeq: cut, toSeq: end, hasMore: cut > 0, records }));
  }

  close() {
    this.db.close();
  }
}
