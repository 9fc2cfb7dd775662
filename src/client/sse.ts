/**
 * A Server-Sent-Events parser (the WHATWG "event stream" interpretation),
 * pure and incremental: feed it decoded text as it arrives, take whole
 * events out. A frame cut by a dropped connection is never dispatched: only
 * a blank line dispatches, so a partial frame is simply discarded.
 */
export interface SseFrame {
  /** The `event:` field, or "message". */
  event: string;
  data: string;
  /** The `id:` field of this frame, if it had one. */
  id: string | undefined;
}

export class SseParser {
  /**
   * The unfinished line's pieces, joined once its end arrives: a snapshot's page is one
   * `data:` line of up to megabytes, arriving in many chunks, and scanning (or flattening)
   * the whole pending line again for every chunk made the parser quadratic (half of the load
   * harness's CPU at 64 followers, docs/benchmarks.md). Each chunk is scanned once.
   */
  private parts: string[] = [];
  private partsLength = 0;
  /** The last chunk ended on a CR: a LF opening the next one is that CRLF's second half. */
  private afterCr = false;
  private data: string[] = [];
  private event = '';
  private id: string | undefined;
  private hasData = false;
  private started = false;
  /** The last `retry:` value seen (ms). */
  retryMs: number | undefined;
  /** Comment lines seen (heartbeats). */
  comments = 0;

  /** Feed text; returns the events completed by it. */
  push(text: string): SseFrame[] {
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const out: SseFrame[] = [];
    const n = text.length;
    let at = 0;
    if (this.afterCr && n > 0) {
      this.afterCr = false;
      if (text.charCodeAt(0) === 10) at = 1;
    }
    // Next line break at or after `at`, found with native searches (each kept until passed).
    let lf = text.indexOf('\n', at);
    let cr = text.indexOf('\r', at);
    for (;;) {
      if (lf !== -1 && lf < at) lf = text.indexOf('\n', at);
      if (cr !== -1 && cr < at) cr = text.indexOf('\r', at);
      const i = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (i === -1) break;
      let line = text.slice(at, i);
      if (this.parts.length > 0) {
        this.parts.push(line);
        line = this.parts.join('');
        this.parts = [];
        this.partsLength = 0;
      }
      this.line(line, out);
      if (i === cr) {
        if (i + 1 < n) at = text.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
        else {
          this.afterCr = true;
          at = n;
        }
      } else at = i + 1;
    }
    if (at < n) {
      this.parts.push(text.slice(at));
      this.partsLength += n - at;
    }
    return out;
  }

  /** Characters of a line still incomplete (for diagnostics). */
  get pending(): number {
    return this.partsLength;
  }

  private line(line: string, out: SseFrame[]): void {
    if (line === '') {
      if (this.hasData) out.push({ event: this.event || 'message', data: this.data.join('\n'), id: this.id });
      this.data = [];
      this.event = '';
      this.id = undefined;
      this.hasData = false;
      return;
    }
    if (line.charCodeAt(0) === 58 /* : */) {
      this.comments++;
      return;
    }
    const c = line.indexOf(':');
    const field = c === -1 ? line : line.slice(0, c);
    let value = c === -1 ? '' : line.slice(c + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    switch (field) {
      case 'data':
        this.data.push(value);
        this.hasData = true;
        break;
      case 'event':
        this.event = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.id = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break; // unknown fields are ignored, as the standard says
    }
  }
}
