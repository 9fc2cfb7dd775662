/**
 * Command-line options of the bench/ and loadtest/ scripts: node:util's parseArgs, plus what it
 * leaves to its callers. `--help` (or `-h`) prints the script's usage, which is its header
 * comment (the scripts already describe their options and commands there, so it is not written
 * twice), and exits 0; an unknown option, a missing or misplaced value, a stray positional, or a
 * value the script rejects (`argError`) is one line on stderr with "see --help", exit 2, not a
 * stack trace.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** The header comment of a script (after its `#!` line): a `/** ... *\/` block or leading `//` lines, markers stripped. */
export function usageOf(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  let i = lines[0]?.startsWith('#!') ? 1 : 0;
  const out = [];
  if (lines[i]?.trimStart().startsWith('/*')) {
    for (; i < lines.length; i++) {
      const end = lines[i].includes('*/');
      const text = lines[i].replace(/^\s*\/\*+\s?/, '').replace(/\s*\*+\/\s*$/, '').replace(/^\s*\* ?/, '');
      if (text !== '' || out.length > 0) out.push(text);
      if (end) break;
    }
  } else {
    for (; i < lines.length && lines[i].trimStart().startsWith('//'); i++) out.push(lines[i].replace(/^\s*\/\/ ?/, ''));
  }
  while (out.length > 0 && out.at(-1).trim() === '') out.pop();
  return out.join('\n');
}

/** The script's name for messages: loadtest/overload.mjs. */
const nameOf = (file) => `${basename(dirname(file))}/${basename(file)}`;

/** A rejected value (after parsing: a range, a choice): one line, "see --help", exit 2. */
export function argError(metaUrl, message) {
  const file = fileURLToPath(metaUrl);
  process.stderr.write(`${nameOf(file)}: ${message}\nsee: node ${nameOf(file)} --help\n`);
  process.exit(2);
}

/**
 * parseArgs for a script run from the command line: `metaUrl` is the script's import.meta.url
 * (its usage is its own header comment), `config` parseArgs's ({ options, ... }).
 */
export function parseScriptArgs(metaUrl, config, argv = process.argv.slice(2)) {
  const file = fileURLToPath(metaUrl);
  const options = { ...config.options, help: { type: 'boolean', short: 'h' } };
  let parsed;
  try {
    parsed = parseArgs({ ...config, options, args: argv });
  } catch (err) {
    if (typeof err?.code !== 'string' || !err.code.startsWith('ERR_PARSE_ARGS')) throw err;
    argError(metaUrl, err.message);
  }
  if (parsed.values.help === true) {
    process.stdout.write(`${usageOf(file)}\n`);
    process.exit(0);
  }
  delete parsed.values.help;
  return parsed;
}

/** An option's `K=V,K=V` list as an object, each pair split at its first '=' (a value may hold more). */
export function keyValueList(text) {
  return Object.fromEntries(
    text
      .split(',')
      .filter(Boolean)
      .map((kv) => {
        const i = kv.indexOf('=');
        return i === -1 ? [kv, ''] : [kv.slice(0, i), kv.slice(i + 1)];
      }),
  );
}

/** The median of a list of numbers (the upper middle of an even list): every bench reports medians of alternating runs. */
export function median(xs) {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}
