/**
 * The commands of `session-pager`, in the order help and README list them.
 * Each module is loaded only when asked for, so `page` does not pay for
 * fastify and `serve` does not pay for the generator; `--help` and the
 * README generator load them all.
 */
import type { Command } from './command.js';

export const COMMANDS: Record<string, () => Promise<{ command: Command }>> = {
  serve: () => import('./serve.js') as Promise<{ command: Command }>,
  import: () => import('./import.js') as Promise<{ command: Command }>,
  gen: () => import('./gen.js') as Promise<{ command: Command }>,
  page: () => import('./page.js') as Promise<{ command: Command }>,
  doctor: () => import('./doctor.js') as Promise<{ command: Command }>,
  reindex: () => import('./reindex.js') as Promise<{ command: Command }>,
  repair: () => import('./repair.js') as Promise<{ command: Command }>,
  loadtest: () => import('./loadtest.js') as Promise<{ command: Command }>,
};

export async function loadCommand(name: string): Promise<Command | undefined> {
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  return load === undefined ? undefined : (await load()).command;
}

export async function loadAllCommands(): Promise<Command[]> {
  return Promise.all(Object.values(COMMANDS).map(async (load) => (await load()).command));
}
