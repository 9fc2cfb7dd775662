/**
 * `session-pager` command dispatcher (SPEC section 7). Each command lives in
 * its own module under cli/ and is loaded only when asked for, so `page`
 * does not pay for fastify and `serve` does not pay for the generator.
 */
import { CliError, type CommandModule } from './cli/common.js';
import { isPagerError } from './core/errors.js';

const COMMANDS: Record<string, { summary: string; load: () => Promise<CommandModule> }> = {
  serve: { summary: 'serve the HTTP API (SPEC section 6)', load: () => import('./cli/serve.js') },
  import: { summary: 'import a dsh session.jsonl or session.jsonl.zstd', load: () => import('./cli/import.js') },
  gen: { summary: 'generate synthetic sessions', load: () => import('./cli/gen.js') },
  page: { summary: 'print one page as JSON', load: () => import('./cli/page.js') },
  doctor: { summary: 'diagnose sessions (reads, never writes)', load: () => import('./cli/doctor.js') },
  reindex: { summary: 'rebuild sidecars from the canonical log', load: () => import('./cli/reindex.js') },
  repair: { summary: 'back up, cut an invalid tail, reindex', load: () => import('./cli/repair.js') },
};

function usage(): string {
  const lines = ['usage: session-pager <command> [options]', '', 'commands:'];
  for (const [name, c] of Object.entries(COMMANDS)) lines.push(`  ${name.padEnd(8)} ${c.summary}`);
  lines.push('', 'common options: --data DIR (default ./data)');
  return lines.join('\n') + '\n';
}

/** Run the CLI; resolves to the process exit code. Errors become one line on stderr. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  const cmd = COMMANDS[name];
  if (cmd === undefined) {
    process.stderr.write(`session-pager: unknown command ${JSON.stringify(name)} (try --help)\n`);
    return 2;
  }
  try {
    const mod = await cmd.load();
    return await mod.run(rest);
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`session-pager ${name}: ${err.message}\n`);
      return err.exitCode;
    }
    if (isPagerError(err)) {
      process.stderr.write(`session-pager ${name}: ${err.code}: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`session-pager ${name}: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  }
}
