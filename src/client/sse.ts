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
  private buf = '';
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
    let s = this.buf + text;
    if (!this.started && s.length > 0) {
      this.started = true;
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
    }
    const out: SseFrame[] = [];
    let at = 0;
    for (;;) {
      let i = at;
      const n = s.length;
      while (i < n) {
        const c = s.charCodeAt(i);
        if (c === 10 || c === 13) break;
        i++;
      }
      if (i >= n) break;
      // A CR at the very end may be the first half of CRLF: wait for more.
      if (s.charCodeAt(i) === 13 && i + 1 >= n) break;
      this.line(s.slice(at, i), out);
      at = s.charCodeAt(i) === 13 && s.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
    }
    this.buf = s.slice(at);
    return out;
  }

  /** Bytes of a frame still incomplete (for diagnostics). */
  get pending(): number {
    return this.buf.length;
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
