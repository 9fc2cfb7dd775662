/**
 * glibc's malloc reached through ffi-rs (src/main/glibc-heap.ts): on this
 * Linux/glibc machine the real calls answer; each way it can be missing (not
 * Linux, the binding not loading, no glibc) is an answer saying why, not a throw.
 */
import { describe, expect, it } from 'vitest';
import { M_TRIM_THRESHOLD, openGlibcHeap, openHeap, type FfiRs } from '../src/main/glibc-heap.js';
import { createRequire } from 'node:module';

const realFfi = (): FfiRs => createRequire(import.meta.url)('ffi-rs') as FfiRs;

describe('openGlibcHeap', () => {
  it('reaches glibc here: malloc_trim answers, mallopt takes glibc’s default trim threshold', () => {
    const report = process.report as unknown as { excludeNetwork: boolean };
    expect(report.excludeNetwork).toBe(false);
    const found = openGlibcHeap();
    // The binding's load asked for a report without the network; the process's setting is as it was.
    expect(report.excludeNetwork).toBe(false);
    expect(found).toHaveProperty('heap');
    if (!('heap' in found)) return;
    expect(typeof found.heap.trim()).toBe('boolean');
    expect(found.heap.mallopt(M_TRIM_THRESHOLD, 128 * 1024)).toBe(true);
    expect(openGlibcHeap()).toBe(found);
  });

  it('not Linux: unavailable, saying so', () => {
    expect(openHeap({ platform: 'darwin', loadFfi: realFfi, libc: 'libc.so.6' })).toEqual({ unavailable: "glibc's malloc is Linux's (this is darwin)" });
  });

  it('the binding does not load: unavailable, with its error', () => {
    const found = openHeap({
      platform: 'linux',
      loadFfi: () => {
        throw new Error('Cannot find module @yuuang/ffi-rs-linux-x64-gnu\nrequire stack: ...');
      },
      libc: 'libc.so.6',
    });
    expect(found).toEqual({ unavailable: 'the ffi-rs binding did not load: Cannot find module @yuuang/ffi-rs-linux-x64-gnu' });
  });

  it('no glibc (libc.so.6 cannot be opened, as on musl): unavailable', () => {
    const missing = openHeap({ platform: 'linux', loadFfi: realFfi, libc: 'libsession-pager-none.so.9' });
    expect('unavailable' in missing ? missing.unavailable : '').toMatch(/^no glibc: /);
  });
});
