// A process's resident memory by kind of mapping, from /proc/<pid>/smaps (Linux), for the
// start-up benches: the node binary's pages, V8's 256 KiB heap pages, the main thread's malloc
// heap ([heap]), large anonymous mappings (the other threads' malloc arenas, V8's large objects,
// stacks) and small ones. MB per kind.
import { readFileSync } from 'node:fs';

export function rssByMapping(pid) {
  const out = {};
  let name = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = line.match(/^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/);
    if (m) {
      const size = parseInt(m[2], 16) - parseInt(m[1], 16);
      name = m[3] ? (m[3].includes('/node') ? 'node binary' : m[3].startsWith('/') ? 'other files' : m[3]) : size === 262144 ? 'v8 heap pages' : size >= 1 << 20 ? 'anon large' : 'anon small';
      continue;
    }
    const r = line.match(/^Rss:\s+(\d+)/);
    if (r) out[name] = (out[name] ?? 0) + Number(r[1]) / 1024;
  }
  return out;
}
