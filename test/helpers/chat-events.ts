/**
 * A small conversation for tests that append through a server or the CLI:
 * a user message every fourth event, the rest text chunks of one block per
 * turn (packed into rows on pages, so a page exercises the codec).
 */
import type { SessionEvent } from '../../src/core/types.js';

export const chat = (from: number, n: number): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => {
    const seq = from + i;
    return seq % 4 === 0
      ? { type: 'user/message', seq, time: 1000 + seq, data: { text: `q${seq}` } }
      : { type: 'assistant/chunk', seq, time: 1000 + seq, data: { turn: Math.floor(seq / 4), step: 0, chunk: { type: 'text-delta', index: 0, text: ` w${seq}` } } };
  });
