/**
 * README's "Command line" block, made from the commands' declarations (the
 * same ones --help and parsing use). `npm run readme:cli` rewrites it;
 * test/cli-help.test.ts fails when README and the declarations drift.
 */
import type { Command } from './command.js';

export const BEGIN = '<!-- cli:begin (generated from the commands\' declarations by `npm run readme:cli`; edit src/main/cli/*.ts, not this block) -->';
export const END = '<!-- cli:end -->';
const WIDTH = 100;

function wrapSynopsis(synopsis: string): string[] {
  // Continuation lines start under the first flag.
  const first = synopsis.indexOf(' [');
  const parts = synopsis.split(/ (?=\[)/);
  const indent = ' '.repeat(first < 0 ? 4 : synopsis.split(/ (?=\[)/)[0]!.length + 1);
  const lines: string[] = [];
  let line = parts[0] as string;
  for (const p of parts.slice(1)) {
    if (line.length + 1 + p.length > WIDTH) {
      lines.push(line);
      line = indent + p;
    } else line += ` ${p}`;
  }
  lines.push(line);
  return lines;
}

export function cliBlock(commands: readonly Command[]): string {
  const out = ['```sh'];
  for (const c of commands) out.push(`# ${c.summary}`, ...wrapSynopsis(c.synopsis()));
  out.push('# every command: --help (usage, every flag with its default, an example)', 'session-pager <command> --help', 'session-pager --version', '```');
  return [BEGIN, ...out, END].join('\n');
}

/** README with its block replaced; throws when the markers are missing. */
export function withCliBlock(readme: string, block: string): string {
  const a = readme.indexOf(BEGIN);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error(`README has no ${BEGIN} ... ${END} block`);
  return readme.slice(0, a) + block + readme.slice(b + END.length);
}
