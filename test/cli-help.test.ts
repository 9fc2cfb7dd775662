/**
 * The command line's conventions (SPEC section 7, issue 11): `--version`,
 * `--help` on every command (usage, every flag with its default, an
 * example; exit 0), usage errors exit 2 with the usage hint on stderr, and
 * README's command block is what the declarations say.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commandHelp, parseCommand, type OptionDecl } from '../src/main/cli/command.js';
import { cliBlock, withCliBlock } from '../src/main/cli/readme.js';
import { COMMANDS, loadAllCommands } from '../src/main/cli/registry.js';
import { runCli } from './helpers/maint.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bin = resolve(root, 'bin/session-pager.js');
const names = Object.keys(COMMANDS);
const cli = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });

/** A value the option accepts (its default, else something valid). */
function validValue(o: OptionDecl): string | null {
  if (o.type === 'boolean') return null;
  if (o.choices) return o.choices[0] as string;
  if (o.type === 'int') return String(Math.max(o.min ?? 0, 1));
  return 'x';
}

describe('session-pager --version and --help', () => {
  it('--version prints the package version, exit 0 (a real process)', () => {
    const r = cli('--version');
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`${JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')).version}\n`);
  });

  it('--help lists every command with its summary, exit 0', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    for (const c of await loadAllCommands()) expect(r.stdout).toMatch(new RegExp(`^  ${c.name} +${c.summary.replace(/[()]/g, '\\$&')}$`, 'm'));
  });

  it.each(names)('%s --help: usage, every flag with its default, an example; exit 0, nothing on stderr', async (name) => {
    const r = await runCli([name, '--help']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const cmd = (await loadAllCommands()).find((c) => c.name === name)!;
    expect(r.stdout).toBe(commandHelp(cmd));
    expect(r.stdout.startsWith(`usage: session-pager ${name}`)).toBe(true);
    for (const [flag, o] of Object.entries(cmd.options)) {
      const line = r.stdout.split('\n').findIndex((l) => new RegExp(`^  (-\\w, )?--${flag}\\b`).test(l));
      expect(line, `--${flag} listed`).toBeGreaterThan(0);
      // Its description (possibly wrapped onto the next lines) says the default.
      const text = r.stdout.split('\n').slice(line, line + 4).join(' ').replace(/\s+/g, ' ');
      const def = o.defaultText ?? (o.type === 'boolean' ? (o.default ? 'on' : 'off') : String(o.default));
      expect(text, `--${flag} default`).toContain(`default: ${def}`);
    }
    expect(r.stdout).toMatch(/\nexamples?:\n  session-pager \S+/);
    expect(cmd.examples.every((e) => e.includes(`session-pager ${name}`))).toBe(true);
  });

  it.each(names)('%s -h is --help too', async (name) => {
    const r = await runCli([name, '-h']);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith(`usage: session-pager ${name}`)).toBe(true);
  });

  it('help <command> is <command> --help', async () => {
    expect((await runCli(['help', 'page'])).stdout).toBe((await runCli(['page', '--help'])).stdout);
  });

  it.each(names)('%s parses every flag its help lists (one declaration for both)', async (name) => {
    const cmd = (await loadAllCommands()).find((c) => c.name === name)!;
    const args = (cmd.positionals ?? []).filter((p) => p.required !== false).map(() => 'some-id');
    for (const [flag, o] of Object.entries(cmd.options)) {
      const v = validValue(o);
      const parsed = parseCommand(cmd, [...args, `--${flag}`, ...(v === null ? [] : [v])], {});
      expect(parsed.given.has(flag)).toBe(true);
      expect(parsed.values[flag]).toBe(o.type === 'boolean' ? true : o.type === 'int' ? Number(v) : v);
    }
    // Absent flags take the declared default.
    const bare = parseCommand(cmd, args, {});
    for (const [flag, o] of Object.entries(cmd.options)) expect(bare.values[flag]).toBe(o.default ?? (o.type === 'boolean' ? false : undefined));
  });
});

describe('usage errors: exit 2, the usage hint on stderr, nothing on stdout', () => {
  it.each(names)('%s --no-such-flag (a real process)', (name) => {
    const r = cli(name, '--no-such-flag');
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^session-pager ${name}: unknown option '--no-such-flag'; usage: session-pager ${name}\\b.*\\(session-pager ${name} --help\\)\\n$`, 'i'));
  });

  it.each([
    [['bogus'], /^session-pager: unknown command "bogus"; usage: session-pager <command> \[options\]; commands: serve, import, gen, page, doctor, reindex, repair, loadtest \(session-pager --help\)\n$/],
    [['--bogus'], /^session-pager: unknown option "--bogus"; usage: session-pager <command>/],
    [[], /^session-pager: no command given; usage: session-pager <command>/],
    [['page'], /^session-pager page: missing <id>; usage: session-pager page <id> \[options\]/],
    [['repair', 'a', 'b'], /^session-pager repair: unexpected argument "b"; usage: session-pager repair <id>/],
    [['gen', '--events', 'many'], /^session-pager gen: --events must be a non-negative integer, got "many"; usage: session-pager gen/],
    [['serve', '--log-level', 'loud'], /^session-pager serve: --log-level must be one of fatal, error, warn, info, debug, trace, silent, got "loud"; usage:/],
    [['page', 'x', '--max-messages'], /^session-pager page: option '--max-messages <value>' argument missing; usage:/i],
  ])('%j', async (argv, line) => {
    const r = await runCli(argv as string[]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(line);
    expect(r.stderr.split('\n')).toHaveLength(2);
  });

  it('a usage error names what the input was, quoted and cut, never raw', async () => {
    const r = await runCli(['\u001b[31mred' + 'x'.repeat(200)]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/\u001b/);
    expect(r.stderr).toContain('"\\x1b[31mred');
    expect(r.stderr).toContain('... (');
  });
});

describe('README command block', () => {
  it('is exactly what the commands declare (run `npm run readme:cli` after changing a command)', async () => {
    const readme = readFileSync(resolve(root, 'README.md'), 'utf8');
    expect(withCliBlock(readme, cliBlock(await loadAllCommands()))).toBe(readme);
  });

  it('names every command and every flag', async () => {
    const block = cliBlock(await loadAllCommands());
    for (const c of await loadAllCommands()) {
      expect(block).toContain(`session-pager ${c.name}`);
      for (const flag of Object.keys(c.options)) expect(block, `${c.name} --${flag}`).toContain(`--${flag}`);
    }
  });
});

describe('commands on existing sessions refuse a --data folder that does not exist', () => {
  it.each([
    ['page', ['some-id']],
    ['doctor', []],
    ['doctor', ['some-id']],
    ['doctor', ['--deep', '--json']],
    ['reindex', []],
    ['reindex', ['some-id']],
    ['repair', ['some-id']],
    ['repair', ['some-id', '--dry-run']],
  ])('%s %j: one line naming the folder, exit 1, nothing created (a real process)', (name, args) => {
    const missing = resolve(root, 'no-such-data-dir');
    const r = cli(name, ...(args as string[]), '--data', missing);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`session-pager ${name}: data directory "${missing}" does not exist (check --data)\n`);
    expect(existsSync(missing)).toBe(false);
  });
});
