import { describe, expect, it } from 'vitest';
import { RequestAbort } from '../src/main/server/request-abort.js';
import { DecodeBudget } from '../src/main/store/decode-budget.js';

/** What a reader of the signal sees: aborted, reason, and what throwIfAborted throws. */
function seen(s: { aborted: boolean; reason: unknown; throwIfAborted(): void }): { aborted: boolean; reason: unknown; thrown: unknown } {
  let thrown: unknown = 'nothing';
  try {
    s.throwIfAborted();
  } catch (err) {
    thrown = err;
  }
  return { aborted: s.aborted, reason: s.reason, thrown };
}

describe('a page request abort made lazily (request-abort.ts)', () => {
  it('reads as an AbortController signal does, before and after abort, with and without a reason', () => {
    for (const reason of [new Error('timed out'), 'why', undefined]) {
      const lazy = new RequestAbort();
      const real = new AbortController();
      expect(seen(lazy)).toEqual(seen(real.signal));
      lazy.abort(reason);
      real.abort(reason);
      const l = seen(lazy);
      const r = seen(real.signal);
      expect(l.aborted).toBe(true);
      expect(l.aborted).toBe(r.aborted);
      if (reason === undefined) {
        // No reason: an AbortError, as AbortController#abort() gives.
        expect((l.reason as DOMException).name).toBe('AbortError');
        expect(l.thrown).toBe(l.reason);
      } else {
        expect(l.reason).toBe(reason);
        expect(l.thrown).toBe(reason);
      }
      // The first abort holds.
      lazy.abort(new Error('later'));
      expect(lazy.reason).toBe(l.reason);
      expect(lazy.signal.aborted).toBe(true);
      expect(lazy.signal.reason).toBe(l.reason);
    }
  });

  it('calls a listener added before the abort once, not one removed, and its signal is the one aborted', () => {
    const a = new RequestAbort();
    const calls: string[] = [];
    const kept = () => calls.push('kept');
    const dropped = () => calls.push('dropped');
    a.addEventListener('abort', kept, { once: true });
    a.addEventListener('abort', dropped);
    a.removeEventListener('abort', dropped);
    const signal = a.signal;
    let viaSignal = 0;
    signal.addEventListener('abort', () => viaSignal++);
    expect(signal.aborted).toBe(false);
    a.abort(new Error('left'));
    a.abort(new Error('again'));
    expect(calls).toEqual(['kept']);
    expect(viaSignal).toBe(1);
    expect(a.signal).toBe(signal);
    // Removing from one never listened to is harmless.
    new RequestAbort().removeEventListener('abort', kept);
  });

  it('takes a page waiting for room out of the decode budget when it aborts', async () => {
    const budget = new DecodeBudget(100);
    const first = await budget.acquire(100);
    const a = new RequestAbort();
    const waiting = budget.acquire(50, a);
    expect(budget.stats().waiting).toBe(1);
    const why = new Error('client left');
    a.abort(why);
    await expect(waiting).rejects.toBe(why);
    expect(budget.stats().waiting).toBe(0);
    first();
    // Aborted already: refused at once.
    await expect(budget.acquire(1, a)).rejects.toBe(why);
  });
});
