/**
 * README's library section is examples/library.mjs verbatim, and that file
 * runs: create, append, page, follow and warm-up through the package's own
 * name (`import ... from 'session-pager'` resolves to this checkout's dist/
 * through the `exports` map), with the output its comments promise.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const example = join(root, 'examples/library.mjs');

describe('README library section', () => {
  it('shows examples/library.mjs verbatim', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const m = /<!-- example: examples\/library\.mjs -->\n```js\n([\s\S]*?)```\n/.exec(readme);
    expect(m, 'README has the marked example block').not.toBeNull();
    expect(m![1]).toBe(readFileSync(example, 'utf8'));
  });

  it('uses create, append, page, follow and warmUp', () => {
    const code = readFileSync(example, 'utf8');
    for (const call of ['openStore(', '.warmUp(', '.create(', '.append(', '.page(', '.follow(', '.close(']) expect(code).toContain(call);
  });

  it('runs, and prints what it says', () => {
    const r = spawnSync(process.execPath, [example], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      'appended { fromSeq: 0, toSeq: 2, nextSeq: 2 }',
      'page 0 2 false 2',
      'event 0 user/message',
      'event 1 assistant/message',
      'event 2 user/message',
    ]);
  }, 60_000);
});
