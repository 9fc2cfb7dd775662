/**
 * Token-sized text for generated sessions. Streams in real logs are made of
 * short model tokens (a word with its leading space, a punctuation mark, a
 * fragment of code), a few bytes each: that is what makes chunk rows pay off,
 * so generated deltas have the same grain. A few multi-byte tokens keep UTF-8
 * paths honest.
 */
import type { Rng } from './prng.js';

const PROSE = (
  ' the a to of and is in that it for this we be on with as I not can file test should ' +
  'user wants me look at code function error output run check first then need will ' +
  'let see if there are what which value type return call build write read change ' +
  'line path module import export case because so now next step make sure already ' +
  'works fails passes config option default index page session event seq time data'
)
  .split(' ')
  .filter((w) => w.length > 0);

const PUNCT = ['.', ',', ':', ';', '?', '!', "'s", "'ll", ' —', '\n', '\n\n', ' (', ')', ' `', '`', '-', ' "', '"'];
const CODE = ['const', ' x', ' =', ' {', '}', '(', ')', ';', '\n', '  ', 'return', ' await', ' =>', '[]', '.map', '.length', ' if', ' else', 'fn', '::', '->', '"', '\\n', '\t'];
const WIDE = [' café', ' naïve', ' 文件', ' 结构', ' über', ' ✓', ' →', ' π'];

/** Words that are safe inside a JSON string without escaping (tool arguments). */
const SHELL = [' ls', ' -la', ' src', ' &&', ' cat', ' grep', ' -rn', ' test', ' npm', ' run', ' build', ' git', ' status', ' diff', ' find', ' .', ' -name', " '*.ts'", ' |', ' head', ' -n', ' 20', ' node', ' dist', ' main', ' wc', ' -l'];

export const TOOL_NAMES = ['bash', 'read', 'write', 'edit', 'grep', 'glob'] as const;

/** One streamed token of prose (reasoning or an answer). */
export function proseToken(rng: Rng, codeish: boolean): string {
  const r = rng.next();
  if (r < 0.72) return ' ' + rng.pick(PROSE);
  if (r < 0.9) return rng.pick(PUNCT);
  if (r < 0.985) return codeish ? rng.pick(CODE) : ' ' + rng.pick(PROSE);
  return rng.pick(WIDE);
}

/** A short sentence, for user messages, titles and tool output. */
export function sentence(rng: Rng, words: number): string {
  let s = rng.pick(['Please', 'Now', 'Can you', 'Next,', 'Then', 'Also']);
  for (let i = 0; i < words; i++) s += ' ' + rng.pick(PROSE);
  return s + '.';
}

/**
 * The argument deltas of one tool call, exactly `n` pieces (n >= 1) whose
 * concatenation is a JSON object, as providers stream them: the opening
 * `{"command": "`, then words, then the closing `"}`.
 */
export function toolArgPieces(rng: Rng, n: number): string[] {
  if (n === 1) return ['{}'];
  const pieces = ['{"command": "'];
  for (let i = 0; i < n - 2; i++) pieces.push(rng.pick(SHELL));
  pieces.push('"}');
  return pieces;
}

/** A few lines of command output. */
export function toolOutput(rng: Rng): string {
  const lines = rng.logInt(1, 40);
  let s = '';
  for (let i = 0; i < lines; i++) s += `src/${rng.pick(PROSE)}/${rng.pick(PROSE)}.ts:${rng.int(1, 900)}: ${rng.pick(PROSE)} ${rng.pick(PROSE)}\n`;
  return s;
}
