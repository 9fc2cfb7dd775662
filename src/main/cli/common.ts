/**
 * Shared pieces of the CLI commands: the one-line error, and a progress
 * line on terminals only. (Options are declared and parsed in command.ts.)
 */
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
