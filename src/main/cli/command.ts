/**
 * One declaration per command: its arguments, its options (type, default,
 * description, environment variable) and an example. Parsing, `--help`, the
 * top-level command list and README's "Command line" block are all made from
 * it, so a flag cannot exist without being documented, or the other way round.
 *
 * To add a flag: add an entry to the command's `options`. To add a command:
 * write a module exporting `command = defineCommand({...})` and list it in
 * cli/registry.ts.
 */
import { parseArgs } from 'node:util';
import { CliError } from './common.js';
import { quoteInput } from '../../core/excerpt.js';

export type OptionType = 'string' | 'int' | 'boolean';

export interface OptionDecl {
  type: OptionType;
  /** One line for --help. */
  describe: string;
  /** Placeholder in usage lines (default N for int, VALUE for string). */
  arg?: string;
  /** Applied when neither the flag nor its environment variable is given. */
  default?: string | number | boolean;
  /** What --help says when there is no fixed default (e.g. "the last committed seq"). */
  defaultText?: string;
  /** Environment variable read when the flag is absent (the flag wins). */
  env?: string;
  /** Allowed values of a string option. */
  choices?: readonly string[];
  /** Bounds of an int option (default min 0). */
  min?: number;
  max?: number;
  /** One-letter alias. */
  short?: string;
}

export interface PositionalDecl {
  name: string;
  describe: string;
  /** Default true. */
  required?: boolean;
}

export type OptionsDecl = Record<string, OptionDecl>;

type ValueOf<D extends OptionDecl> = D['type'] extends 'boolean' ? boolean : D['type'] extends 'int' ? number : string;
type HasDefault<D extends OptionDecl> = D['type'] extends 'boolean' ? true : D extends { default: string | number | boolean } ? true : false;

export type OptionValues<O extends OptionsDecl> = {
  [K in keyof O]: HasDefault<O[K]> extends true ? ValueOf<O[K]> : ValueOf<O[K]> | undefined;
};

export interface Parsed<O extends OptionsDecl> {
  values: OptionValues<O>;
  positionals: string[];
  /** Options given on the command line or through the environment (not defaulted). */
  given: Set<keyof O & string>;
}

export interface CommandDecl<O extends OptionsDecl> {
  name: string;
  /** One line, for the command list and README. */
  summary: string;
  /** More lines for --help (optional). */
  description?: string;
  positionals?: readonly PositionalDecl[];
  /** More positionals than declared are refused unless this is set (name of the rest). */
  options: O;
  examples: readonly string[];
  /**
   * Name of the option holding a data directory that must exist (commands
   * on existing sessions): the dispatcher refuses a missing one with exit 1.
   */
  existingDir?: string;
  /** Exit codes beyond 0 / 1 / 2 worth knowing (shown in --help). */
  exitCodes?: readonly string[];
  run(args: Parsed<O>, env: NodeJS.ProcessEnv): Promise<number>;
}

export interface Command<O extends OptionsDecl = OptionsDecl> extends CommandDecl<O> {
  parse(argv: string[], env?: NodeJS.ProcessEnv): Parsed<O>;
  help(): string;
  synopsis(): string;
}

/** `--help` is implicit on every command. */
const HELP: OptionDecl = { type: 'boolean', describe: 'show this help and exit' };

export function defineCommand<const O extends OptionsDecl>(decl: CommandDecl<O>): Command<O> {
  const cmd: Command<O> = {
    ...decl,
    parse: (argv, env = process.env) => parseCommand(decl, argv, env),
    help: () => commandHelp(decl),
    synopsis: () => commandSynopsis(decl),
  };
  return cmd;
}

/** The usage hint printed with a usage error. */
export function usageHint(decl: CommandDecl<OptionsDecl>): string {
  return `usage: session-pager ${decl.name}${positionalUsage(decl)} [options] (session-pager ${decl.name} --help)`;
}

function positionalUsage(decl: CommandDecl<OptionsDecl>): string {
  return (decl.positionals ?? []).map((p) => (p.required === false ? ` [${p.name}]` : ` <${p.name}>`)).join('');
}

function placeholder(o: OptionDecl): string {
  if (o.type === 'boolean') return '';
  if (o.arg) return o.arg;
  if (o.choices) return o.choices.join('|');
  return o.type === 'int' ? 'N' : 'VALUE';
}

function flagText(name: string, o: OptionDecl): string {
  const p = placeholder(o);
  return `--${name}${p ? ` ${p}` : ''}`;
}

function defaultOf(o: OptionDecl): string | null {
  if (o.defaultText !== undefined) return o.defaultText;
  if (o.default === undefined) return o.type === 'boolean' ? 'off' : null;
  if (o.type === 'boolean') return o.default ? 'on' : 'off';
  return String(o.default);
}

/** `session-pager <name> <positionals> [--flag ARG] ...`: the one-line synopsis README shows. */
export function commandSynopsis(decl: CommandDecl<OptionsDecl>): string {
  const flags = Object.entries(decl.options).map(([n, o]) => `[${flagText(n, o)}]`);
  return `session-pager ${decl.name}${positionalUsage(decl)}${flags.length ? ' ' + flags.join(' ') : ''}`;
}

const HELP_WIDTH = 100;
const LABEL_MAX = 24;

function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      out.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  out.push(line);
  return out;
}

export function commandHelp(decl: CommandDecl<OptionsDecl>): string {
  const out: string[] = [`usage: session-pager ${decl.name}${positionalUsage(decl)} [options]`, '', decl.summary];
  if (decl.description) out.push('', ...decl.description.split('\n').flatMap((p) => wrap(p, HELP_WIDTH)));
  const pos = decl.positionals ?? [];
  const rows = (items: [string, string][]): string[] => {
    // Labels up to LABEL_MAX wide share the line with their text; longer ones put it on the next.
    const w = Math.min(LABEL_MAX, Math.max(...items.map(([l]) => l.length)));
    return items.flatMap(([l, d]) => {
      const text = wrap(d, HELP_WIDTH - w - 4);
      const first = l.length <= w ? [`  ${l.padEnd(w)}  ${text[0]}`] : [`  ${l}`, `  ${''.padEnd(w)}  ${text[0]}`];
      return [...first, ...text.slice(1).map((t) => `  ${''.padEnd(w)}  ${t}`)];
    });
  };
  if (pos.length > 0) {
    out.push('', 'arguments:');
    out.push(...rows(pos.map((p) => [p.required === false ? `[${p.name}]` : `<${p.name}>`, p.describe + (p.required === false ? ' (optional)' : '')])));
  }
  const opts: [string, string][] = Object.entries(decl.options).map(([n, o]) => {
    const notes: string[] = [];
    if (o.choices && o.arg) notes.push(`one of ${o.choices.join(', ')}`);
    const d = defaultOf(o);
    if (d !== null) notes.push(`default: ${d}`);
    if (o.env) notes.push(`env ${o.env}`);
    return [`${o.short ? `-${o.short}, ` : ''}${flagText(n, o)}`, `${o.describe}${notes.length ? ` (${notes.join('; ')})` : ''}`];
  });
  opts.push(['-h, --help', HELP.describe]);
  out.push('', 'options:', ...rows(opts));
  if (decl.exitCodes && decl.exitCodes.length > 0) out.push('', 'exit codes:', ...decl.exitCodes.map((e) => `  ${e}`));
  out.push('', decl.examples.length > 1 ? 'examples:' : 'example:', ...decl.examples.map((e) => `  ${e}`));
  return out.join('\n') + '\n';
}

function usageError(decl: CommandDecl<OptionsDecl>, message: string): CliError {
  return new CliError(`${message}; ${usageHint(decl)}`, 2);
}

function convert(decl: CommandDecl<OptionsDecl>, o: OptionDecl, raw: string, from: string): string | number {
  if (o.type === 'int') {
    const min = o.min ?? 0;
    // Named by its real lower bound: "-1" is refused by "an integer >= 1", not "non-negative".
    if (!/^[0-9]+$/.test(raw)) throw usageError(decl, `${from} must be ${min === 0 ? 'a non-negative integer' : `an integer >= ${min}`}, got ${quoteInput(raw)}`);
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < min) throw usageError(decl, `${from} must be an integer >= ${min}`);
    if (o.max !== undefined && n > o.max) throw usageError(decl, `${from} must be at most ${o.max}`);
    return n;
  }
  if (o.choices && !o.choices.includes(raw)) {
    throw usageError(decl, `${from} must be ${o.choices.length === 2 ? o.choices.join(' or ') : `one of ${o.choices.join(', ')}`}, got ${quoteInput(raw)}`);
  }
  return raw;
}

export function parseCommand<O extends OptionsDecl>(decl: CommandDecl<O>, argv: string[], env: NodeJS.ProcessEnv = process.env): Parsed<O> {
  const config: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const [n, o] of Object.entries(decl.options)) config[n] = { type: o.type === 'boolean' ? 'boolean' : 'string', ...(o.short ? { short: o.short } : {}) };
  let r: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    r = parseArgs({ args: argv, options: config, allowPositionals: true, strict: true }) as typeof r;
  } catch (err) {
    // parseArgs explains some errors over several lines; the CLI contract is one line.
    const msg = (err as Error).message.replace(/\s*\n\s*/g, ' ').replace(/ To specify a positional argument starting with a '-'.*$/, '').replace(/\.$/, '').trim();
    throw usageError(decl as CommandDecl<OptionsDecl>, msg);
  }
  if (r.values.help === true) throw new HelpRequested(commandHelp(decl as CommandDecl<OptionsDecl>));
  const pos = decl.positionals ?? [];
  const required = pos.filter((p) => p.required !== false).length;
  if (r.positionals.length < required) throw usageError(decl as CommandDecl<OptionsDecl>, `missing <${(pos[r.positionals.length] as PositionalDecl).name}>`);
  if (r.positionals.length > pos.length) throw usageError(decl as CommandDecl<OptionsDecl>, `unexpected argument ${quoteInput(r.positionals[pos.length] as string)}`);
  const values: Record<string, string | number | boolean | undefined> = {};
  const given = new Set<string>();
  for (const [n, o] of Object.entries(decl.options)) {
    const raw = r.values[n];
    if (raw !== undefined) {
      given.add(n);
      values[n] = typeof raw === 'boolean' ? raw : convert(decl as CommandDecl<OptionsDecl>, o, raw, `--${n}`);
      continue;
    }
    const fromEnv = o.env !== undefined ? env[o.env] : undefined;
    if (fromEnv !== undefined && fromEnv.trim() !== '') {
      given.add(n);
      if (o.type === 'boolean') values[n] = !/^(0|false|no|off)$/i.test(fromEnv);
      else values[n] = convert(decl as CommandDecl<OptionsDecl>, o, fromEnv, o.env as string);
      continue;
    }
    values[n] = o.default ?? (o.type === 'boolean' ? false : undefined);
  }
  return { values: values as OptionValues<O>, positionals: r.positionals, given: given as Set<keyof O & string> };
}

/** Thrown by parse on --help: the dispatcher prints the help on stdout and exits 0. */
export class HelpRequested extends Error {
  constructor(readonly text: string) {
    super('help requested');
    this.name = 'HelpRequested';
  }
}

/** `--data DIR`, shared by every command that works on a data directory. */
export const DATA_DIR = { type: 'string', arg: 'DIR', default: './data', describe: 'data directory' } as const satisfies OptionDecl;
