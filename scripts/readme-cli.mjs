#!/usr/bin/env node
// Rewrite README.md's "Command line" block from the commands' declarations
// (dist/, so build first: `npm run readme:cli` does). `--check` only reports drift (exit 1).
import { readFileSync, writeFileSync } from 'node:fs';
import { cliBlock, withCliBlock } from '../dist/main/cli/readme.js';
import { loadAllCommands } from '../dist/main/cli/registry.js';

const file = new URL('../README.md', import.meta.url);
const readme = readFileSync(file, 'utf8');
const next = withCliBlock(readme, cliBlock(await loadAllCommands()));
if (process.argv.includes('--check')) {
  if (next !== readme) {
    process.stderr.write('README.md command block is out of date: run `npm run readme:cli`\n');
    process.exit(1);
  }
} else if (next !== readme) {
  writeFileSync(file, next);
  process.stdout.write('README.md command block rewritten\n');
} else process.stdout.write('README.md command block is up to date\n');
