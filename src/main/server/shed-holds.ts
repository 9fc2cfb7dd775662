/**
 * Shed answers held back, and let go early once admission has room (issue 16
 * item 8, issue 15's capacity).
 *
 * A page request shed by admission is answered no sooner than its hold
 * (overload.ts: ShedPacer, 0.5 s doubling per connection to 4 s), so clients
 * that ignore Retry-After cannot make the server spend itself on 503s. But
 * the hold also keeps those clients from asking while the server could serve
 * them: at 256 connections ignoring Retry-After the gate's page slots were
 * held about half the time on average with requests queued the other half
 * (sampled by loadtest/overload.mjs): once the clients that had been served
 * were shed in turn, every client sat in a hold of up to 4 s and the slots
 * freed by the last pages found nobody asking. The hold is there for a busy
 * server; when a slot frees and nobody waits for it, the oldest held answers,
 * as many as there are free slots, go out at once, and their clients (if they
 * ask again at once) fill the slots.
 */
interface Held {
  timer: NodeJS.Timeout;
  answer: () => void;
}

export class ShedHolds {
  /** In the order they were held (a Set iterates in insertion order). */
  private readonly held = new Set<Held>();
  /** Answers let go before their time (metrics, tests). */
  released = 0;

  get size(): number {
    return this.held.size;
  }

  /** Call `answer` after `ms`, or sooner by release(). */
  hold(ms: number, answer: () => void): void {
    const h: Held = {
      answer,
      timer: setTimeout(() => {
        this.held.delete(h);
        answer();
      }, ms),
    };
    this.held.add(h);
  }

  /** Answer the `n` oldest held answers now. */
  release(n: number): void {
    for (const h of this.held) {
      if (n-- <= 0) return;
      this.held.delete(h);
      clearTimeout(h.timer);
      this.released++;
      h.answer();
    }
  }
}
