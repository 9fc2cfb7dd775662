/**
 * The store's in-process session writers: one per session (holding its
 * lease), opened on first append, closed after `idleMs` without appends,
 * each append published to the subscriptions once durable.
 */
import type { StorageBackend } from '../../storage/backend.js';
import type { FrameEncoding } from '../../streams/frame-codec.js';
import { PagerError } from '../../core/errors.js';
import type { SessionEvent } from '../../core/types.js';
import type { SessionMeta } from '../meta-file.js';
import { SessionWriter, type AppendResult } from '../session-writer.js';

export class SessionWriters {
  private readonly writers = new Map<string, Promise<SessionWriter>>();
  private readonly idleTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly storage: StorageBackend,
    private readonly format: FrameEncoding,
    private readonly idleMs: number,
    /** Told of every durable append, in order. */
    private readonly onAppend: (id: string, events: readonly SessionEvent[]) => void,
    /** Told when a writer closes: what it knew is to be read from storage again. */
    private readonly onClose: (id: string) => void,
  ) {}

  has(id: string): boolean {
    return this.writers.has(id);
  }

  /** The committed metadata of the session's open writer, if this store has one. */
  async committed(id: string): Promise<SessionMeta | undefined> {
    return (await this.writers.get(id)?.catch(() => undefined))?.metadata;
  }

  private touch(id: string): void {
    clearTimeout(this.idleTimers.get(id));
    // No one awaits an idle close: a failure of it must not become an unhandled rejection (the
    // process's end). The writer's lock is released whatever failed (SessionWriter.close).
    const t = setTimeout(() => void this.closeOne(id).catch(() => undefined), this.idleMs);
    t.unref();
    this.idleTimers.set(id, t);
  }

  private async closeOne(id: string): Promise<void> {
    const w = this.writers.get(id);
    clearTimeout(this.idleTimers.get(id));
    this.idleTimers.delete(id);
    if (w === undefined) return;
    this.writers.delete(id);
    this.onClose(id);
    await (await w.catch(() => undefined))?.close();
  }

  private attach(id: string, writer: SessionWriter): SessionWriter {
    writer.onAppend((events) => this.onAppend(id, events));
    this.touch(id);
    return writer;
  }

  private open(id: string): Promise<SessionWriter> {
    let w = this.writers.get(id);
    if (w === undefined) {
      w = SessionWriter.open(this.storage, id).then((wr) => this.attach(id, wr));
      this.writers.set(id, w);
      w.catch(() => this.writers.delete(id));
    }
    return w;
  }

  /** Open the session's writer now (not at its next append); its committed next seq. */
  async reopen(id: string): Promise<number> {
    return (await this.open(id)).metadata.nextSeq;
  }

  async create(id: string, header: unknown, format: FrameEncoding | undefined): Promise<void> {
    if (this.writers.has(id)) throw new PagerError('session_exists', `session ${id} already exists`);
    const w = SessionWriter.create(this.storage, id, header, { format: format ?? this.format }).then((wr) => this.attach(id, wr));
    this.writers.set(id, w);
    try {
      await w;
    } catch (err) {
      this.writers.delete(id);
      throw err;
    }
  }

  async append(id: string, events: unknown): Promise<AppendResult> {
    const w = await this.open(id);
    const result = await w.append(events);
    this.touch(id);
    return result;
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.writers.keys()].map((id) => this.closeOne(id)));
  }
}
