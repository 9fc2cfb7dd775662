/**
 * glibc's malloc as this process can reach it from JavaScript: malloc_trim
 * and mallopt. Node 20 has no API for either, so they are called through
 * ffi-rs, an N-API binding whose prebuilt binary comes in a per-platform npm
 * package (nothing compiles or downloads at install). Why the server calls
 * them: main/heap-release.ts.
 *
 * Linux with glibc only. Elsewhere (macOS, musl, a platform the binding has
 * no binary for) openGlibcHeap says why not, and the server runs as it did
 * before: these calls only ever return memory sooner or keep it longer,
 * they never change an answer.
 */
import { createRequire } from 'node:module';

/** mallopt's parameters (malloc.h). */
export const M_TRIM_THRESHOLD = -1;
export const M_MMAP_THRESHOLD = -3;

export interface GlibcHeap {
  /** malloc_trim(0): every arena's free memory given back to the system; true when some was. */
  trim(): boolean;
  /** mallopt(param, value); false when glibc refused it (an unknown parameter or value). */
  mallopt(param: number, value: number): boolean;
}

export type HeapOpen = { heap: GlibcHeap } | { unavailable: string };

export interface FfiRs {
  open(params: { library: string; path: string }): void;
  load(params: { library: string; funcName: string; retType: unknown; paramsType: unknown[]; paramsValue: unknown[] }): unknown;
  DataType: { I32: unknown; String: unknown };
}

/** The name ffi-rs knows the C library by (its own registry of opened libraries). */
const LIBRARY = 'session-pager-libc';

let opened: HeapOpen | undefined;

/** This process's glibc heap, or why it cannot be reached (the same answer every call). */
export function openGlibcHeap(): HeapOpen {
  return (opened ??= openHeap());
}

/** What openHeap finds the heap with; the tests give other values to reach its refusals. */
export interface HeapFinding {
  platform: string;
  loadFfi: () => FfiRs;
  libc: string;
}

const FINDING: HeapFinding = { platform: process.platform, loadFfi: loadFfiRs, libc: 'libc.so.6' };

/**
 * ffi-rs tells glibc from musl by `process.report.getReport()` as it loads; a report lists the
 * network interfaces, whose lookups can stall a host with slow name resolution, on the serving
 * thread. They are left out of that one report (the setting put back after).
 */
function loadFfiRs(): FfiRs {
  const report = process.report as { excludeNetwork?: boolean } | undefined;
  const before = report?.excludeNetwork;
  if (report !== undefined) report.excludeNetwork = true;
  try {
    return createRequire(import.meta.url)('ffi-rs') as FfiRs;
  } finally {
    if (report !== undefined && before !== undefined) report.excludeNetwork = before;
  }
}

/** A fresh look for the heap (openGlibcHeap keeps the first). */
export function openHeap(f: HeapFinding = FINDING): HeapOpen {
  if (f.platform !== 'linux') return { unavailable: `glibc's malloc is Linux's (this is ${f.platform})` };
  let ffi: FfiRs;
  const library = `${LIBRARY}:${f.libc}`;
  try {
    ffi = f.loadFfi();
  } catch (err) {
    return { unavailable: `the ffi-rs binding did not load: ${firstLine(err)}` };
  }
  try {
    ffi.open({ library, path: f.libc });
    // Only glibc has this function: musl's libc (no libc.so.6 as a rule) or a stand-in fails here.
    const version = ffi.load({ library, funcName: 'gnu_get_libc_version', retType: ffi.DataType.String, paramsType: [], paramsValue: [] });
    if (typeof version !== 'string') return { unavailable: 'libc.so.6 is not glibc' };
  } catch (err) {
    return { unavailable: `no glibc: ${firstLine(err)}` };
  }
  const i32 = (funcName: string, args: number[]): number =>
    ffi.load({ library, funcName, retType: ffi.DataType.I32, paramsType: args.map(() => ffi.DataType.I32), paramsValue: args }) as number;
  return {
    heap: {
      trim: () => i32('malloc_trim', [0]) === 1,
      mallopt: (param, value) => i32('mallopt', [param, value]) === 1,
    },
  };
}

function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split('\n')[0] ?? '';
}
