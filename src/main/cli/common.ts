/**
 * Shared pieces of the CLI commands: argument parsing with clear errors,
 * integer flags, and a progress line on terminals only.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export interface CommandModule {
  run(argv: string[]): Promise<number>;
}

/** A usage or input error: printed as one line, exit code 2 by default. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface ParsedArgs {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

export function parse(argv: string[], options: NonNullable<ParseArgsConfig['options']>, allowPositionals = true): ParsedArgs {
  try {
    const r = parseArgs({ args: argv, options, allowPositionals, strict: true });
    return { values: r.values as ParsedArgs['values'], positionals: r.positionals };
  } catch (err) {
    // parseArgs explains some errors over several lines; the CLI contract is one line.
    throw new CliError((err as Error).message.replace(/\s*\n\s*/g, ' ').trim());
  }
}

/** A non-negative integer flag, or undefined when absent. */
export function intFlag(name: string, raw: string | undefined, min = 0): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^[0-9]+$/.test(raw)) throw new CliError(`--${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) throw new CliError(`--${name} must be an integer >= ${min}`);
  return n;
}

export const DATA_OPTION = { data: { type: 'string', default: './data' } } as const;

/**
 * A progress line on stderr, redrawn at most every 100 ms, only when stderr
 * is a terminal (logs and pipes stay clean).
 */
export class Progress {
  private last = 0;
  private readonly tty: boolean;
  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly unit = '',
    stream: NodeJS.WriteStream = process.stderr,
  ) {
    this.tty = Boolean(stream.isTTY);
    this.stream = stream;
  }
  private readonly stream: NodeJS.WriteStream;

  update(done: number): void {
    if (!this.tty) return;
    const now = Date.now();
    if (now - this.last < 100 && done < this.total) return;
    this.last = now;
    const frac = this.total > 0 ? Math.min(1, done / this.total) : 1;
    const width = 30;
    const filled = Math.round(frac * width);
    const bar = '#'.repeat(filled) + '-'.repeat(width - filled);
    this.stream.write(`\r${this.label} [${bar}] ${(frac * 100).toFixed(1)}% ${done.toLocaleString('en')}/${this.total.toLocaleString('en')}${this.unit}`);
  }

  done(): void {
    if (this.tty) this.stream.write('\n');
  }
}
