// Events for the cross-process follow tests, deterministic by seq (shared by the test and its child writer).
export function tickEvents(from, n) {
  return Array.from({ length: n }, (_, i) => ({ type: 'custom/tick', seq: from + i, time: 1_700_000_000_000 + from + i, data: { n: from + i } }));
}
