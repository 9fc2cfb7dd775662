/**
 * The import rules of docs/architecture.md, checked on the source so the
 * layering cannot rot: pure byte formats and core never touch I/O, only the
 * storage backends touch the file system, and each layer imports only the
 * layers under it. A rule's known exceptions are listed by file; the list
 * may only shrink (a listed file that no longer breaks the rule fails too,
 * so it is struck when it is fixed).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? sources(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : []));
}

/** Every module a file names: static imports and re-exports (type-only ones too), and import() of a literal. */
function importsOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) out.push(m[1] as string);
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push(m[1] as string);
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) out.push(m[1] as string);
  return out;
}

interface Module {
  /** Path from src/, with `/`. */
  file: string;
  /** Node built-ins (without `node:`), packages, and files (from src/). */
  builtins: string[];
  packages: string[];
  files: string[];
}

const modules: Module[] = sources(SRC).map((path) => {
  const file = relative(SRC, path).split('\\').join('/');
  const mod: Module = { file, builtins: [], packages: [], files: [] };
  for (const spec of importsOf(readFileSync(path, 'utf8'))) {
    if (spec.startsWith('node:')) mod.builtins.push(spec.slice(5));
    else if (spec.startsWith('.')) mod.files.push(relative(SRC, resolve(dirname(path), spec)).split('\\').join('/').replace(/\.js$/, '.ts'));
    else mod.packages.push(spec);
  }
  return mod;
});

const under = (folder: string) => (m: Module) => m.file.startsWith(folder);

/** Modules that do I/O of any kind (files, sockets, processes, threads). */
const IO_BUILTINS = new Set(['fs', 'fs/promises', 'net', 'http', 'https', 'http2', 'dgram', 'child_process', 'worker_threads', 'cluster', 'os', 'readline', 'tty', 'process']);

/** `rule` broken by these files, and by no other; each listed file must still break it. */
function expectExactly(rule: (m: Module) => string[], known: string[], scope: (m: Module) => boolean = () => true): void {
  const breaking = modules.filter(scope).flatMap((m) => (rule(m).length > 0 ? [`${m.file}: ${rule(m).join(', ')}`] : []));
  expect(breaking.map((b) => b.split(':')[0]).sort(), breaking.join('\n')).toEqual([...known].sort());
}

describe('layering (docs/architecture.md)', () => {
  it('reads the source tree', () => {
    expect(modules.length).toBeGreaterThan(50);
    expect(modules.find((m) => m.file === 'main/store.ts')?.files.length).toBeGreaterThan(3);
  });

  it('core/ is pure: no built-in with I/O, no package, and only core/ itself', () => {
    expectExactly((m) => [...m.builtins.filter((b) => IO_BUILTINS.has(b)), ...m.packages, ...m.files.filter((f) => !f.startsWith('core/'))], [], under('core/'));
  });

  it('streams/ holds pure byte formats: no built-in with I/O; only core/ and streams/', () => {
    expectExactly(
      (m) => [...m.builtins.filter((b) => IO_BUILTINS.has(b)), ...m.files.filter((f) => !f.startsWith('core/') && !f.startsWith('streams/'))],
      [],
      under('streams/'),
    );
  });

  it('storage/ imports only core/, streams/ and storage/ (a backend knows no store, server or CLI)', () => {
    expectExactly((m) => m.files.filter((f) => !f.startsWith('core/') && !f.startsWith('streams/') && !f.startsWith('storage/')), [], under('storage/'));
  });

  it('only the storage backends touch the file system', () => {
    expectExactly(
      (m) => m.builtins.filter((b) => b === 'fs' || b === 'fs/promises'),
      [
        // The demo corpus's folder, the oracle's whole-file read.
        'main/demo.ts',
        'main/reference-reader.ts',
        // Whether the built worker file exists (code, not session data).
        'main/worker-pool.ts',
      ],
      (m) => !m.file.startsWith('storage/local/'),
    );
  });

  it('sockets and servers only in the HTTP server and the serve command', () => {
    expectExactly((m) => m.builtins.filter((b) => ['net', 'http', 'https', 'http2', 'dgram'].includes(b)), [], (m) => !m.file.startsWith('main/server/') && m.file !== 'main/cli/serve.ts');
  });

  it('only the command line (and the HTTP server\'s options) reads the environment: everything else is configured through options', () => {
    const readsEnv = (m: Module) => {
      const code = readFileSync(join(SRC, m.file), 'utf8')
        .split('\n')
        .filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l));
      return code.some((l) => l.includes('process.env')) ? ['process.env'] : [];
    };
    expectExactly(readsEnv, [], (m) => !m.file.startsWith('main/cli/') && m.file !== 'main/cli.ts' && !m.file.startsWith('main/server/'));
  });

  it('the page workers read slices through the storage seam, never a file of their own', () => {
    expectExactly((m) => m.builtins.filter((b) => IO_BUILTINS.has(b)), [], under('workers/'));
  });

  it('the page workers import no store, server or CLI code', () => {
    expectExactly((m) => m.files.filter((f) => f.startsWith('main/') && !['main/gen/session-batches.ts', 'main/gen/script.ts', 'main/gen/batcher.ts', 'main/gen/prng.ts', 'main/gen/shapes.ts', 'main/gen/vocab.ts'].includes(f)), [], under('workers/'));
  });
});
