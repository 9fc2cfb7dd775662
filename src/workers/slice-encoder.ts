/**
 * Builds a slice result (see slice-protocol.ts) from storage records, pure.
 * Used by the page worker; kept apart from it so tests can drive it directly.
 */
import { RunPacker, runToRecords, type PackedItem, type Run } from '../main/core/chunk-codec.js';
import type { ChunkRow, SessionEvent } from '../main/core/types.js';
import type { FragmentRunHeader, SliceHeader } from './slice-protocol.js';

function fragments(run: Run): { header: FragmentRunHeader; dt: Buffer; members: Buffer } {
  const dtJson = run.dt.length === 0 ? '' : JSON.stringify(run.dt).slice(1, -1);
  const membersJson = JSON.stringify(run.members).slice(1, -1);
  const dt = Buffer.from(dtJson, 'utf8');
  const members = Buffer.from(membersJson, 'utf8');
  const { dt: _d, members: _m, ...rest } = run;
  return { header: { ...rest, n: run.members.length, dtBytes: dt.length, memberBytes: members.length }, dt, members };
}

export class SliceEncoder {
  private readonly packer: RunPacker;
  private readonly body: string[] = [];
  private started = false;
  private head: Run | null = null;
  frames = 0;
  bytesRead = 0;

  constructor() {
    this.packer = new RunPacker((item) => this.settle(item));
  }

  private settle(item: PackedItem): void {
    if ('run' in item) {
      if (!this.started) {
        this.started = true;
        this.head = item.run;
        return;
      }
      for (const r of runToRecords(item.run)) this.body.push(JSON.stringify(r));
      return;
    }
    this.started = true;
    this.body.push(JSON.stringify(item));
  }

  event(e: SessionEvent): void {
    this.packer.pushEvent(e);
  }

  row(row: ChunkRow, from: number, to: number): void {
    this.packer.pushRow(row, from, to);
  }

  /** The result buffer: exactly sized, freshly allocated, safe to transfer. */
  finish(): ArrayBuffer {
    let tailRun = this.packer.takeOpen();
    let whole = false;
    if (!this.started && tailRun !== null) {
      this.head = tailRun;
      tailRun = null;
      whole = true;
    }
    const head = this.head ? fragments(this.head) : null;
    const tail = tailRun ? fragments(tailRun) : null;
    const body = Buffer.from(this.body.join(','), 'utf8');
    const header: SliceHeader = { head: head?.header ?? null, whole, bodyBytes: body.length, tail: tail?.header ?? null, frames: this.frames, bytesRead: this.bytesRead };
    const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
    const parts: Uint8Array[] = [headerBytes];
    if (head) parts.push(head.dt, head.members);
    parts.push(body);
    if (tail) parts.push(tail.dt, tail.members);
    let total = 4;
    for (const p of parts) total += p.length;
    const ab = new ArrayBuffer(total);
    const out = new Uint8Array(ab);
    new DataView(ab).setUint32(0, headerBytes.length, true);
    let at = 4;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return ab;
  }
}
