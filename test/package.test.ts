/**
 * The package as a user gets it: `npm pack` ships only dist (no source maps,
 * nothing that is not built from src/), bin, README, LICENSE and
 * package.json; installed from the tarball into a fresh project it imports
 * as `session-pager` (JavaScript and TypeScript through the `exports` map),
 * its executable imports a session and the library serves a page of it.
 * And the lock file holds no package whose `engines` excludes this Node, so
 * `npm install` prints no engine warning.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
// semver ships no types (it is here through npm's own tree); only satisfies() is used.
// @ts-expect-error no declaration file
import semver from 'semver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The environment without npm's lifecycle variables (`npm test` sets them; they would point the child npm at this repository). */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return env;
}

function run(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, env: cleanEnv(), encoding: 'utf8', timeout: 180_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return `${r.stdout}${r.stderr}`;
}

let dir: string;
let tarball: string;
let packed: string[];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sp-package-'));
  // --ignore-scripts: `prepare` would rebuild dist/ under the other test files reading it (npm test built it first).
  const out = run(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], root);
  const info = JSON.parse(out.slice(out.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  tarball = join(dir, info[0]!.filename);
  packed = info[0]!.files.map((f) => f.path).sort();
}, 120_000);

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('npm pack', () => {
  it('ships dist, bin, README, LICENSE and package.json only', () => {
    const tops = new Set(packed.map((p) => p.split('/')[0]));
    expect([...tops].sort()).toEqual(['LICENSE', 'README.md', 'bin', 'dist', 'package.json']);
    expect(packed.filter((p) => p.endsWith('.map'))).toEqual([]);
    expect(packed).toContain('dist/main/index.js');
    expect(packed).toContain('dist/main/index.d.ts');
    expect(packed).toContain('bin/session-pager.js');
  });

  it('ships nothing in dist that is not built from src (no stale or test-only files)', () => {
    // Made by `npm run build` from src's code, not compiled from a file of its own: the page-path
    // warm-up's session (src/main/warmup/session-snapshot.ts), which serve loads instead of generating it,
    // the same session as a data directory, which the warm-up reads through the local backend, and
    // the page workers' JIT warm-up logs (src/workers/warmup-logs.ts), which the pool hands them,
    // and the routes' validators as code (src/main/server/route-validators.ts), which serve uses instead of ajv.
    const built = [
      'dist/main/warmup/page-path-session.bin',
      'dist/main/warmup/page-path-data/plan.json',
      'dist/main/warmup/page-path-data/sessions/warmup.events',
      'dist/workers/warmup-jsonl.bin',
      'dist/workers/warmup-binary.bin',
      'dist/main/server/route-validators.cjs',
    ];
    const builtDir = 'dist/main/warmup/page-path-data/';
    expect(packed).toEqual(expect.arrayContaining(built));
    const stray = packed.filter((p) => p.startsWith('dist/') && !built.includes(p) && !p.startsWith(builtDir)).filter((p) => {
      const base = p.slice('dist/'.length).replace(/\.d\.ts$|\.js$/, '');
      return !existsSync(join(root, 'src', `${base}.ts`));
    });
    expect(stray).toEqual([]);
  });

  it('has an MIT LICENSE, as package.json says', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { license: string };
    expect(pkg.license).toBe('MIT');
    const text = readFileSync(join(root, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^MIT License/);
    expect(text).toMatch(/Copyright \(c\) \d{4} session-pager contributors/);
  });
});

describe('installed from the tarball into a new project', () => {
  let proj: string;

  beforeAll(() => {
    proj = join(dir, 'project');
    execFileSync('mkdir', ['-p', proj]);
    writeFileSync(join(proj, 'package.json'), JSON.stringify({ name: 'sp-user', version: '1.0.0', private: true, type: 'module' }));
    // Dependencies from the npm cache (`npm ci` filled it), the registry only for what is not there.
    run(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--omit=dev', tarball], proj);
  }, 180_000);

  it('imports as session-pager, its executable imports a session and the store serves a page of it', () => {
    const fixture = join(root, 'test/fixtures/dsh/acp-agent--fs-edit.jsonl');
    const data = join(proj, 'data');
    run(process.execPath, [join(proj, 'node_modules/.bin/session-pager'), 'import', fixture, '--id', 'fs-edit', '--data', data], proj);
    writeFileSync(
      join(proj, 'use.mjs'),
      `import { openStore } from 'session-pager';
const store = await openStore({ dataDir: ${JSON.stringify(data)}, workers: 1 });
const page = await store.page('fs-edit', { maxMessages: 2 });
const info = await store.info('fs-edit');
await store.close();
console.log(JSON.stringify({ status: info.status, lastSeq: info.lastSeq, throughSeq: page.throughSeq, records: page.records.length }));
`,
    );
    const out = JSON.parse(run(process.execPath, ['use.mjs'], proj).trim()) as { status: string; lastSeq: number; throughSeq: number; records: number };
    expect(out.status).toBe('ok');
    expect(out.throughSeq).toBe(out.lastSeq);
    expect(out.lastSeq).toBeGreaterThan(0);
    expect(out.records).toBeGreaterThan(0);
  });

  it('resolves its types through the exports map (TypeScript, NodeNext)', () => {
    writeFileSync(
      join(proj, 'use.ts'),
      `import { openStore, type SessionEvent, type AppendResult } from 'session-pager';
const store = await openStore({ dataDir: './d' });
const events: SessionEvent[] = [{ type: 'user/message', seq: 0, time: 1, data: {} }];
const r: AppendResult = await store.append('s', events);
const n: number = r.nextSeq;
// @ts-expect-error append takes events, not a string
await store.append('s', 'not events');
export { n };
`,
    );
    writeFileSync(
      join(proj, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(root, 'node_modules/@types')] },
        files: ['use.ts'],
      }),
    );
    run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(proj, 'tsconfig.json')], proj);
  }, 60_000);
});

describe('npm install on this Node', () => {
  it('finds no package in the lock file whose engines exclude it (no EBADENGINE warning)', () => {
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string; engines?: { node?: string } | string[]; optional?: boolean; os?: string[]; cpu?: string[] }>;
    };
    const installed = (p: { os?: string[]; cpu?: string[] }) => {
      // Platform packages for other systems are never installed, so npm never checks their engines.
      const ok = (list: string[] | undefined, v: string) => list === undefined || list.includes(v) || (list.every((x) => x.startsWith('!')) && !list.includes(`!${v}`));
      return ok(p.os, process.platform) && ok(p.cpu, process.arch);
    };
    const bad: string[] = [];
    for (const [path, p] of Object.entries(lock.packages)) {
      if (path === '' || p.engines === undefined || Array.isArray(p.engines) || p.engines.node === undefined) continue;
      if (!installed(p)) continue;
      if (!semver.satisfies(process.version, p.engines.node, { includePrerelease: true })) bad.push(`${path}@${p.version} wants node ${p.engines.node}`);
    }
    expect(bad).toEqual([]);
  });
});
