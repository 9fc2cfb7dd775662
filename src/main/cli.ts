/**
 * `session-pager` command dispatcher (SPEC section 7). Commands are declared
 * in cli/<name>.ts (see cli/command.ts) and listed in cli/registry.ts.
 *
 * Exit codes: 0 success; 1 failure (one-line reason on stderr); 2 usage
 * error (unknown command or flag, bad flag value; the usage hint on stderr);
 * some commands add their own (doctor: 3 degraded, 4 repair required).
 */
import { CliError } from './cli/common.js';
import { HelpRequested, type Command } from './cli/command.js';
import { assertDataDirExists } from './cli/data-dir.js';
import { isRemoteStore } from './cli/store-flag.js';
import { Interrupted } from './cli/interrupt.js';
import { COMMANDS, loadAllCommands, loadCommand } from './cli/registry.js';
import { isPagerError } from '../core/errors.js';
import { packageVersion } from './version.js';
import { quoteInput, safeLine } from '../core/excerpt.js';

export async function topLevelHelp(): Promise<string> {
  const cmds = await loadAllCommands();
  const w = Math.max(...cmds.map((c) => c.name.length));
  const lines = [
    'usage: session-pager <command> [options]',
    '       session-pager <command> --help',
    '       session-pager --version',
    '',
    'commands:',
    ...cmds.map((c) => `  ${c.name.padEnd(w)}  ${c.summary}`),
    '',
    'Exit codes: 0 success, 1 failure (one line on stderr), 2 usage error.',
  ];
  return lines.join('\n') + '\n';
}

const TOP_HINT = `usage: session-pager <command> [options]; commands: ${Object.keys(COMMANDS).join(', ')} (session-pager --help)`;

/** Run the CLI; resolves to the process exit code. Errors become one line on stderr. */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    if (name === 'help' && rest[0] !== undefined) return main([rest[0], '--help'], env);
    process.stdout.write(await topLevelHelp());
    return 0;
  }
  if (name === '--version' || name === '-V' || name === '-v') {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  if (name === undefined) {
    process.stderr.write(`session-pager: no command given; ${TOP_HINT}\n`);
    return 2;
  }
  const cmd: Command | undefined = name.startsWith('-') ? undefined : await loadCommand(name);
  if (cmd === undefined) {
    const what = name.startsWith('-') ? 'unknown option' : 'unknown command';
    process.stderr.write(`session-pager: ${what} ${quoteInput(name)}; ${TOP_HINT}\n`);
    return 2;
  }
  try {
    const args = cmd.parse(rest, env);
    // With a remote --store, --data holds only writers' tails: it need not exist yet.
    if (cmd.existingDir !== undefined && !isRemoteStore(args.values.store as string | undefined)) await assertDataDirExists(args.values[cmd.existingDir] as string);
    return await cmd.run(args, env);
  } catch (err) {
    if (err instanceof HelpRequested) {
      process.stdout.write(err.text);
      return 0;
    }
    if (err instanceof Interrupted) {
      process.stderr.write(`session-pager ${name}: ${err.message}; nothing unfinished was left behind\n`);
      return err.exitCode;
    }
    // safeLine: whatever a message holds, the error stays one line without control characters.
    if (err instanceof CliError) {
      process.stderr.write(`session-pager ${name}: ${safeLine(err.message)}\n`);
      return err.exitCode;
    }
    if (isPagerError(err)) {
      process.stderr.write(`session-pager ${name}: ${err.code}: ${safeLine(err.message)}\n`);
      return 1;
    }
    process.stderr.write(`session-pager ${name}: ${safeLine((err as Error)?.message ?? String(err))}\n`);
    return 1;
  }
}
