# A process's glibc malloc arenas, read by gdb attached for a moment (nothing is called in the
# process: `gdb -p PID -batch -ex 'source bench/malloc-arenas.py'`; needs glibc's debug symbols).
# One line an arena: the bytes it has from the system, what of them is free (its top chunk, its
# bins and fastbins; tcache left out: a few KB), the rest in use, and the threads attached to it
# (name:thread id). With ARENA_CHUNKS=1, also the in-use chunks of each arena holding more than
# 16 MB, by size (powers of two), from a walk of its heaps: what a leak or a cache is made of.
# bench/rss-lanes.mjs --arenas runs it. glibc >= 2.32 (fastbin pointers are mangled).
import gdb
def arenas():
    a = gdb.parse_and_eval('&main_arena')
    first = int(a)
    out = []
    while True:
        out.append(a)
        a = a['next']
        if int(a) == first: break
    return out
SZ = 8
def csize(p):
    return int(p['mchunk_size']) & ~7
res = {}
for ar in arenas():
    st = ar.dereference()
    free = 0; nfree = 0
    top = st['top']
    topsz = csize(top.dereference()) if int(top) else 0
    for i in range(10):
        p = st['fastbinsY'][i]
        n = 0
        while int(p) and n < 1000000:
            free += csize(p.dereference()); nfree += 1; n += 1
            fdaddr = int(p['fd'].address)
            p = gdb.Value(int(p['fd']) ^ (fdaddr >> 12)).cast(p.type)
    bins = st['bins']
    for i in range(1, 127):
        # bin i header at &bins[(i-1)*2] - offset of fd (2*SZ)
        hdr = int(bins.address) + (i - 1) * 2 * SZ - 2 * SZ
        p = bins[(i - 1) * 2]
        n = 0
        while int(p) != hdr and n < 1000000:
            free += csize(p.dereference()); nfree += 1; n += 1
            p = p['fd']
    res[int(ar)] = (int(st['system_mem']), int(st['max_system_mem']), free, nfree, topsz)
threads = {}
for inf in gdb.inferiors():
    for th in inf.threads():
        th.switch()
        try:
            ta = int(gdb.parse_and_eval('(long)thread_arena'))
        except Exception as e:
            ta = -1
        name = th.name
        threads.setdefault(ta, []).append('%s:%d' % (name, th.ptid[1]))
M = 1048576
for k, (sysm, maxm, free, nfree, topsz) in res.items():
    print('arena %x system %.1f MB max %.1f free %.1f MB in %d chunks (top %.1f) in use %.1f threads %s' % (k, sysm / M, maxm / M, (free + topsz) / M, nfree, topsz / M, (sysm - free - topsz) / M, threads.get(k, [])))

# The in-use chunks of each non-main arena with more than 16 MB in use, by size (a walk of its heaps).
import os
if os.environ.get('ARENA_CHUNKS'):
    HEAP_MAX = 64 << 20
    for ar in arenas():
        if int(ar) == int(gdb.parse_and_eval('&main_arena')):
            continue
        sysm, maxm, free, nfree, topsz = res[int(ar)]
        if sysm - free - topsz < (16 << 20):
            continue
        hist = {}
        h = int(ar['top']) & ~(HEAP_MAX - 1)
        inf = gdb.selected_inferior()
        heaps = []
        while h:
            hi = gdb.parse_and_eval('*(heap_info *)%d' % h)
            heaps.append((h, int(hi['size'])))
            h = int(hi['prev'])
        for (h, size) in heaps:
            start = h + int(gdb.parse_and_eval('sizeof(heap_info)'))
            if start + 0 <= int(ar) < h + size:  # the first heap holds the arena itself
                start = int(ar) + int(gdb.parse_and_eval('sizeof(struct malloc_state)'))
            start = (start + 15) & ~15
            p = start
            end = h + size
            while p < end - 32:
                sz = int.from_bytes(inf.read_memory(p + 8, 8).tobytes(), 'little')
                csz = sz & ~7
                if csz == 0:
                    break
                nxt = p + csz
                if nxt >= end or nxt == int(ar['top']):
                    inuse = True
                else:
                    inuse = bool(int.from_bytes(inf.read_memory(nxt + 8, 8).tobytes(), 'little') & 1)
                if p == int(ar['top']):
                    break
                if inuse:
                    b = 1 << (csz.bit_length() - 1)
                    c, t = hist.get(b, (0, 0))
                    hist[b] = (c + 1, t + csz)
                p = nxt
        print('chunks %x %s' % (int(ar), ' '.join('%dK+:%d=%.1fMB' % (b // 1024, c, t / M) for b, (c, t) in sorted(hist.items()) if t > (1 << 20))))
