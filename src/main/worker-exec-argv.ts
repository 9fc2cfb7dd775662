/**
 * The command-line flags page workers start with. Given none, a worker
 * inherits its parent's and silently skips those a worker cannot take (V8
 * flags such as `--trace-gc` or `--max-old-space-size`, process-wide ones
 * such as `--title`); given a list, as the pool must (worker-pool.ts turns
 * require(esm) off), Node refuses the whole list for one such flag
 * (ERR_WORKER_INVALID_EXEC_ARGV, naming them). So the parent's flags go
 * along minus the ones that refusal named, as inheriting would have had it.
 */

/** What the pool adds to the parent's flags (worker-pool.ts says why). */
export const WORKER_FLAGS: readonly string[] = ['--no-experimental-require-module'];

/** The flags for a worker: `parent` without those in `refused` (a refused flag's separate value goes too), then WORKER_FLAGS. */
export function workerExecArgv(parent: readonly string[], refused: ReadonlySet<string> = new Set()): string[] {
  const kept: string[] = [];
  for (let i = 0; i < parent.length; i++) {
    const flag = parent[i]!;
    if (!refused.has(flag)) {
      kept.push(flag);
      continue;
    }
    // `--flag value` written as two words: the value is not a flag of its own.
    if (!flag.includes('=') && i + 1 < parent.length && !parent[i + 1]!.startsWith('-')) i++;
  }
  return [...kept, ...WORKER_FLAGS];
}

/** The flags a worker refused, from the error of its construction; null for any other error. */
export function refusedFlags(err: unknown): Set<string> | null {
  if (!(err instanceof Error) || (err as NodeJS.ErrnoException).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') return null;
  const listed = /flags: (.*)$/s.exec(err.message);
  if (listed === null) return null;
  return new Set(listed[1]!.split(', ').map((f) => f.trim()).filter((f) => f !== ''));
}
