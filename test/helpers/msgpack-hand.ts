/**
 * MessagePack built by hand, for tests: every integer, string and container
 * width a foreign encoder may choose (msgpackr always picks the shortest),
 * and bytes msgpackr never writes. `foreignNode` turns a JSON value into
 * such a payload with widths chosen by fractions handed in.
 */
export type Node =
  | { t: 'int'; v: number; width: number }
  | { t: 'float'; v: number; f32: boolean }
  | { t: 'str'; bytes: Uint8Array; width: number }
  | { t: 'lit'; byte: number }
  | { t: 'raw'; bytes: Uint8Array }
  | { t: 'arr'; items: Node[]; width: number }
  | { t: 'map'; entries: [Node, Node][]; width: number };

export function encodeNode(n: Node, out: number[]): void {
  const be = (v: number, bytes: number): void => {
    for (let k = bytes - 1; k >= 0; k--) out.push(Math.floor(v / 2 ** (8 * k)) & 0xff);
  };
  switch (n.t) {
    case 'int': {
      const v = n.v;
      if (n.width === 0 && v >= 0 && v < 128) out.push(v);
      else if (n.width === 0 && v < 0 && v >= -32) out.push(v & 0xff);
      else if (v >= 0 && n.width <= 1 && v < 256) out.push(0xcc, v);
      else if (v >= 0 && n.width <= 2 && v < 65536) (out.push(0xcd), be(v, 2));
      else if (v >= 0 && n.width <= 4 && v < 2 ** 32) (out.push(0xce), be(v, 4));
      else if (v >= 0) (out.push(0xcf), be(v, 8));
      else if (n.width <= 1 && v >= -128) out.push(0xd0, v & 0xff);
      else if (n.width <= 2 && v >= -32768) (out.push(0xd1), be(v & 0xffff, 2));
      else if (n.width <= 4 && v >= -(2 ** 31)) (out.push(0xd2), be(v >>> 0, 4));
      else {
        const b = Buffer.alloc(8);
        b.writeBigInt64BE(BigInt(v));
        out.push(0xd3, ...b);
      }
      return;
    }
    case 'float': {
      const b = Buffer.alloc(n.f32 ? 4 : 8);
      if (n.f32) b.writeFloatBE(n.v);
      else b.writeDoubleBE(n.v);
      out.push(n.f32 ? 0xca : 0xcb, ...b);
      return;
    }
    case 'str': {
      const len = n.bytes.length;
      if (n.width === 0 && len < 32) out.push(0xa0 | len);
      else if (n.width <= 1 && len < 256) out.push(0xd9, len);
      else if (n.width <= 2 && len < 65536) (out.push(0xda), be(len, 2));
      else (out.push(0xdb), be(len, 4));
      out.push(...n.bytes);
      return;
    }
    case 'lit':
      out.push(n.byte);
      return;
    case 'raw':
      out.push(...n.bytes);
      return;
    case 'arr':
    case 'map': {
      const len = n.t === 'arr' ? n.items.length : n.entries.length;
      const [fix, w16, w32] = n.t === 'arr' ? [0x90, 0xdc, 0xdd] : [0x80, 0xde, 0xdf];
      if (n.width === 0 && len < 16) out.push(fix | len);
      else if (n.width <= 2) (out.push(w16), be(len, 2));
      else (out.push(w32), be(len, 4));
      if (n.t === 'arr') for (const i of n.items) encodeNode(i, out);
      else
        for (const [k, v] of n.entries) {
          encodeNode(k, out);
          encodeNode(v, out);
        }
    }
  }
}


export function encode(n: Node): Buffer {
  const out: number[] = [];
  encodeNode(n, out);
  return Buffer.from(out);
}

/** A JSON value as a Node, each width picked by `next()` (a PRNG in [0, 1)); floats stay 64-bit unless exact as 32-bit. */
export function foreignNode(v: unknown, next: () => number): Node {
  const width = (): number => [0, 1, 2, 4, 8][Math.floor(next() * 5)] as number;
  if (v === null) return { t: 'lit', byte: 0xc0 };
  if (v === true || v === false) return { t: 'lit', byte: v ? 0xc3 : 0xc2 };
  if (typeof v === 'number') {
    if (Number.isSafeInteger(v) && !Object.is(v, -0) && next() < 0.9) return { t: 'int', v, width: width() };
    return { t: 'float', v, f32: Math.fround(v) === v && next() < 0.5 };
  }
  if (typeof v === 'string') return { t: 'str', bytes: Buffer.from(v, 'utf8'), width: width() };
  if (Array.isArray(v)) return { t: 'arr', items: v.map((x) => foreignNode(x, next)), width: [0, 2, 4][Math.floor(next() * 3)] as number };
  const entries = Object.entries(v as Record<string, unknown>).map(([k, x]) => [{ t: 'str', bytes: Buffer.from(k, 'utf8'), width: width() }, foreignNode(x, next)] as [Node, Node]);
  // Now and then in another key order than the object's.
  if (entries.length > 1 && next() < 0.15) entries.reverse();
  return { t: 'map', entries, width: [0, 2, 4][Math.floor(next() * 3)] as number };
}

/** `next` for foreignNode: the fractions `picks` in turn, over and over (drawn by fast-check). */
export function cycling(picks: readonly number[]): () => number {
  let i = 0;
  return () => (picks.length === 0 ? 0 : (picks[i++ % picks.length] as number));
}
