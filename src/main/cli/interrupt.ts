/**
 * SIGINT / SIGTERM during a command that writes (import, gen): the first
 * signal aborts the work through an AbortSignal, so it unwinds through its
 * own `finally` blocks (temp files removed, lease released, an unfinished
 * session removed) and the command exits 128 + the signal's number with one
 * line on stderr. A second signal exits at once.
 */
import { constants } from 'node:os';

/** The reason an interrupted command's signal is aborted with. */
export class Interrupted extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`);
    this.name = 'Interrupted';
  }

  /** 130 for SIGINT, 143 for SIGTERM, as shells report them. */
  get exitCode(): number {
    return 128 + (constants.signals[this.signal] ?? 0);
  }
}

export function isInterrupted(err: unknown, signal?: AbortSignal): err is Interrupted {
  return err instanceof Interrupted || (signal?.aborted === true && signal.reason instanceof Interrupted);
}

/** Run `work` with an AbortSignal that SIGINT / SIGTERM abort; the handlers are removed afterwards. */
export async function withInterrupts<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => {
    if (ac.signal.aborted) {
      // The cleanup is taking too long for the user: leave now (what is left is reported by doctor).
      process.exit(128 + (constants.signals[sig] ?? 0));
    }
    ac.abort(new Interrupted(sig));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await work(ac.signal);
  } catch (err) {
    // Whatever error the abort surfaced as (an AbortError from a stream, ours), report the signal.
    if (ac.signal.aborted && ac.signal.reason instanceof Interrupted) throw ac.signal.reason;
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
