/**
 * Commands that work on sessions already there (page, doctor, reindex,
 * repair) refuse a --data folder that does not exist, with one line that
 * says so: a mistyped path is not "no sessions", and nothing is created.
 */
import { localFiles } from '../../storage/local/local-backend.js';
import { quoteInput } from '../../core/excerpt.js';
import { CliError } from './common.js';

export async function assertDataDirExists(dir: string): Promise<void> {
  if ((await localFiles.stat(dir)) === null) throw new CliError(`data directory ${quoteInput(dir, 200)} does not exist (check --data)`, 1);
}
