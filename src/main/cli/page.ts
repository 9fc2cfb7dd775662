/** `session-pager page`: not built yet (see its issue). */
import { CliError } from './common.js';

export async function run(_argv: string[]): Promise<number> {
  throw new CliError('page is not implemented yet', 1);
}
