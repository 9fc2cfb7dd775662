/**
 * The elements of one JSON document whose top level is an array, read as a
 * stream with stream-json's tokenizer: memory holds one element (plus a
 * bounded queue of tokens), never the document.
 *
 * The values are built here, not with stream-json's Assembler, so they
 * equal what JSON.parse gives: a `__proto__` key is an own property (the
 * Assembler's assignment would set the prototype), numbers are read with
 * JSON's grammar.
 */
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import Parser from 'stream-json/Parser.js';

type Token = { name: string; value?: string };
type Container = unknown[] | Record<string, unknown>;

/** Builds top-level array elements from tokens; `done` receives each finished element. */
class ElementBuilder {
  private readonly stack: { c: Container; key: string | null }[] = [];
  private depth = 0;
  private started = false;
  private ended = false;
  private pendingKey: string | null = null;
  index = 0;

  constructor(private readonly done: (value: unknown) => void) {}

  private save(v: unknown): void {
    const top = this.stack[this.stack.length - 1];
    if (top === undefined) {
      this.done(v);
      this.index++;
      return;
    }
    if (Array.isArray(top.c)) top.c.push(v);
    else {
      const k = this.pendingKey as string;
      if (k === '__proto__') Object.defineProperty(top.c, k, { value: v, enumerable: true, writable: true, configurable: true });
      else top.c[k] = v;
      this.pendingKey = null;
    }
  }

  private open(c: Container): void {
    this.stack.push({ c, key: this.pendingKey });
    this.pendingKey = null;
  }

  token(t: Token): void {
    if (this.ended) throw new Error('unexpected data after the top-level array');
    if (!this.started) {
      if (t.name !== 'startArray') throw new Error('the document is not a JSON array (its first value is not "[")');
      this.started = true;
      this.depth = 1;
      return;
    }
    switch (t.name) {
      case 'startObject':
        this.depth++;
        this.open({});
        return;
      case 'startArray':
        this.depth++;
        this.open([]);
        return;
      case 'endObject':
      case 'endArray': {
        this.depth--;
        if (this.depth === 0) {
          this.ended = true;
          return;
        }
        const { c, key } = this.stack.pop() as { c: Container; key: string | null };
        this.pendingKey = key;
        this.save(c);
        return;
      }
      case 'keyValue':
        this.pendingKey = t.value as string;
        return;
      case 'stringValue':
        this.save(t.value);
        return;
      case 'numberValue':
        this.save(Number(t.value));
        return;
      case 'nullValue':
        this.save(null);
        return;
      case 'trueValue':
        this.save(true);
        return;
      case 'falseValue':
        this.save(false);
        return;
    }
  }

  finish(): void {
    if (!this.started) throw new Error('the document is empty');
    if (!this.ended) throw new Error('the document ends inside the array');
  }
}

/** Tokens buffered between the tokenizer and the builder (the bound on memory besides one element). */
const TOKEN_QUEUE = 4096;

/**
 * Feed `chunks` (the document's bytes) through the tokenizer; `onElement`
 * is awaited for each element, in order, before more input is read.
 */
export async function forEachArrayElement(
  chunks: AsyncIterable<Uint8Array>,
  onElement: (value: unknown, index: number) => Promise<void>,
  signal?: AbortSignal,
): Promise<number> {
  let ready: unknown[] = [];
  /** An error of `onElement` (passed on as it is), as opposed to one of the document. */
  let failed: unknown = null;
  const builder = new ElementBuilder((v) => ready.push(v));
  const sink = new Writable({
    objectMode: true,
    highWaterMark: TOKEN_QUEUE,
    writev(items: { chunk: Token }[], cb: (err?: Error | null) => void) {
      void (async () => {
        for (const { chunk } of items) {
          builder.token(chunk);
          if (ready.length > 0) {
            const batch = ready;
            ready = [];
            const first = builder.index - batch.length;
            for (let k = 0; k < batch.length; k++) {
              try {
                await onElement(batch[k], first + k);
              } catch (err) {
                failed = err;
                throw err;
              }
            }
          }
        }
      })().then(() => cb(), cb);
    },
    final(cb: (err?: Error | null) => void) {
      try {
        builder.finish();
        cb();
      } catch (err) {
        cb(err as Error);
      }
    },
  });
  const parser = new Parser({ packValues: true, streamValues: false });
  try {
    await pipeline(Readable.from(chunks, { objectMode: false }), parser, sink, ...(signal ? [{ signal }] : []));
  } catch (err) {
    if (failed !== null || signal?.aborted) throw err;
    // The tokenizer's and builder's own words, with where in the document they stopped.
    throw new Error(`${(err as Error).message} (after ${builder.index} complete element${builder.index === 1 ? '' : 's'})`);
  }
  return builder.index;
}
