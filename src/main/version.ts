/**
 * The package's version (package.json sits two levels above both src/main/
 * and dist/main/). Loaded as a module, the way Node resolves the package
 * itself, so `--version`, the OpenAPI document and the banner agree.
 */
import { createRequire } from 'node:module';

let cached: string | undefined;

export function packageVersion(): string {
  cached ??= (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
  return cached;
}
