/** `session-pager repair`: not built yet (see its issue). */
import { CliError } from './common.js';

export async function run(_argv: string[]): Promise<number> {
  throw new CliError('repair is not implemented yet', 1);
}
