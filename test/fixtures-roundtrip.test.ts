import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expandRecords, packEvents } from '../src/core/chunk-codec.js';
import { decodeWholeLog, referencePage } from '../src/main/reference-reader.js';
import { dshFixtures } from './helpers/fixtures.js';

const files = dshFixtures();

describe('dsh fixtures', () => {
  it('are all present', () => {
    expect(files.length).toBe(121);
  });

  it.each(files.map((f) => [basename(f), f]))('%s: decodes, packs canonically, expands back', (_name, file) => {
    const bytes = readFileSync(file);
    const log = decodeWholeLog(bytes);
    log.events.forEach((e, i) => expect(e.seq).toBe(i));
    const packed = packEvents(log.events);
    expect(expandRecords(packed)).toEqual(log.events);
    // dsh stores runs packed per append batch: re-packing the whole log can only merge, never split.
    expect(packed.length).toBeLessThanOrEqual(log.frames.length);
    const page = referencePage(log, 'x', {});
    expect(page.toSeq).toBe(log.events.length);
    expect(expandRecords(page.records)).toEqual(log.events.slice(page.fromSeq, page.toSeq));
  });
});
