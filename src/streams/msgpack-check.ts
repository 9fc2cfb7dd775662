/**
 * What a binary frame's MessagePack may hold (docs/decisions.md, "Binary
 * frames hold JSON"): exactly what JSON can, since every page is JSON. One
 * pass over the payload's structure (string bodies skipped by length, no
 * recursion, no allocation but a small stack) before it is unpacked, so a
 * payload msgpackr would turn into a BigInt, a Date, a Buffer, NaN, or an
 * object whose keys were coerced to strings is a damaged frame instead of a
 * 500 or a silently altered value. Pure.
 *
 * Refused: bin (0xc4-0xc6), ext and fixext (0xc7-0xc9, 0xd4-0xd8; the
 * timestamp is ext -1), the never-used 0xc1, uint64/int64 outside the safe
 * integers, NaN and infinite floats, map keys that are not strings, nesting
 * deeper than the limit, a truncated payload and bytes after its value.
 */
import { MAX_NESTING_DEPTH } from '../core/nesting.js';

const MAX_SAFE_HI = 0x1fffff; // a uint64 is safe iff its high 32 bits are at most this

/** Why `b[start, end)` is not one MessagePack value JSON can hold, or null when it is. */
export function msgpackJsonFault(b: Uint8Array, start = 0, end = b.length, maxDepth = MAX_NESTING_DEPTH): string | null {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  // Items left in each open container (a map counts keys and values), and whether it is a map.
  const rem: number[] = [];
  const isMap: boolean[] = [];
  let top = -1;
  let pos = start;
  for (;;) {
    if (pos >= end) return `MessagePack cut short at byte ${pos - start}`;
    const at = pos - start;
    const key = top >= 0 && (isMap[top] as boolean) && (rem[top] as number) % 2 === 0;
    const t = b[pos++] as number;
    let str = false;
    let open = -1;
    let map = false;
    let need = 0; // bytes of the item after its type byte
    if (t <= 0x7f || t >= 0xe0) {
      // fixint
    } else if (t <= 0x8f) {
      open = t & 0x0f;
      map = true;
    } else if (t <= 0x9f) {
      open = t & 0x0f;
    } else if (t <= 0xbf) {
      str = true;
      need = t & 0x1f;
    } else {
      switch (t) {
        case 0xc0:
        case 0xc2:
        case 0xc3:
          break;
        case 0xc1:
          return `MessagePack byte 0xc1 (never used) at byte ${at}`;
        case 0xc4:
        case 0xc5:
        case 0xc6:
          return `MessagePack bin at byte ${at}: JSON has no binary type`;
        case 0xc7:
        case 0xc8:
        case 0xc9:
        case 0xd4:
        case 0xd5:
        case 0xd6:
        case 0xd7:
        case 0xd8: {
          const typeAt = t === 0xc7 ? pos + 1 : t === 0xc8 ? pos + 2 : t === 0xc9 ? pos + 4 : pos;
          const type = typeAt < end ? view.getInt8(typeAt) : 0;
          return `MessagePack ${type === -1 ? 'timestamp' : `ext type ${type}`} at byte ${at}: JSON has no such type`;
        }
        case 0xca:
          if (pos + 4 > end) return `MessagePack cut short at byte ${at}`;
          if (!Number.isFinite(view.getFloat32(pos))) return `MessagePack float at byte ${at} is not finite: JSON has no NaN or Infinity`;
          need = 4;
          break;
        case 0xcb:
          if (pos + 8 > end) return `MessagePack cut short at byte ${at}`;
          if (!Number.isFinite(view.getFloat64(pos))) return `MessagePack float at byte ${at} is not finite: JSON has no NaN or Infinity`;
          need = 8;
          break;
        case 0xcc:
        case 0xd0:
          need = 1;
          break;
        case 0xcd:
        case 0xd1:
          need = 2;
          break;
        case 0xce:
        case 0xd2:
          need = 4;
          break;
        case 0xcf:
          if (pos + 8 > end) return `MessagePack cut short at byte ${at}`;
          if (view.getUint32(pos) > MAX_SAFE_HI) return `MessagePack uint64 at byte ${at} is beyond the safe integers JSON numbers hold`;
          need = 8;
          break;
        case 0xd3: {
          if (pos + 8 > end) return `MessagePack cut short at byte ${at}`;
          const v = view.getInt32(pos) * 4294967296 + view.getUint32(pos + 4);
          if (!Number.isSafeInteger(v)) return `MessagePack int64 at byte ${at} is beyond the safe integers JSON numbers hold`;
          need = 8;
          break;
        }
        case 0xd9:
          if (pos + 1 > end) return `MessagePack cut short at byte ${at}`;
          str = true;
          need = 1 + view.getUint8(pos);
          break;
        case 0xda:
          if (pos + 2 > end) return `MessagePack cut short at byte ${at}`;
          str = true;
          need = 2 + view.getUint16(pos);
          break;
        case 0xdb:
          if (pos + 4 > end) return `MessagePack cut short at byte ${at}`;
          str = true;
          need = 4 + view.getUint32(pos);
          break;
        case 0xdc:
        case 0xde:
          if (pos + 2 > end) return `MessagePack cut short at byte ${at}`;
          open = view.getUint16(pos);
          map = t === 0xde;
          need = 2;
          break;
        default: // 0xdd, 0xdf
          if (pos + 4 > end) return `MessagePack cut short at byte ${at}`;
          open = view.getUint32(pos);
          map = t === 0xdf;
          need = 4;
          break;
      }
    }
    if (key && !str) return `MessagePack map key at byte ${at} is not a string: JSON keys are strings`;
    pos += need;
    if (pos > end) return `MessagePack cut short at byte ${at}`;
    if (open >= 0) {
      if (top + 2 > maxDepth) return `MessagePack nests deeper than ${maxDepth} levels of maps and arrays at byte ${at}`;
      if (open > 0) {
        top++;
        rem[top] = map ? open * 2 : open;
        isMap[top] = map;
        continue;
      }
    }
    // One item done: close every container it completes.
    for (;;) {
      if (top < 0) return pos === end ? null : `${end - pos} byte(s) after the MessagePack value`;
      rem[top] = (rem[top] as number) - 1;
      if ((rem[top] as number) > 0) break;
      top--;
    }
  }
}
