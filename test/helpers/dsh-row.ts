/** Rows in the key order dsh writes them, which an import keeps (the writer's own order is runToRow's). */
import type { ChunkRow, ToolRowData } from '../../src/core/types.js';

/** The row with a tool call's id and name after its gaps, as dsh orders them (other rows as they are). */
export function dshRow(row: ChunkRow): ChunkRow {
  if (row.type !== 'tool-call-chunks') return row;
  const { turn, step, index, id, name, dt, args } = row.data as ToolRowData;
  return { ...row, data: { turn, step, index, dt, id, ...(name === undefined ? {} : { name }), args } } as ChunkRow;
}
