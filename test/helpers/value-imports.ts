import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The value imports (not `import type`) of the packages `packages` matches in the .ts files
 * of `dir`, as `file: package`: the check that a folder loads its CommonJS packages by
 * require() only (test/server-cjs, test/worker-cjs).
 */
export function valueImportsOf(dir: string, packages: RegExp): string[] {
  const found: string[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
    const src = readFileSync(join(dir, f), 'utf8');
    for (const m of src.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)';/gms)) {
      if (m[1] === undefined && packages.test(m[2] as string)) found.push(`${f}: ${m[2]}`);
    }
  }
  return found;
}
