/**
 * The overload suite's attach phases (loadtest/attach-phases.mjs): the clients' times matched with
 * the server probe's by port, a port reused within a run matched to the connection of its own
 * attach, and the slowest attaches split between the load generator's side and the server's.
 */
import { describe, expect, it } from 'vitest';
import { matchAttaches, summarizePhases } from '../loadtest/attach-phases.mjs';

interface Summary {
  matched: number;
  slowest: Record<string, number>;
  slowestServerShare: number;
  phases: Record<string, { p50: number; p99: number; max: number }>;
}

const client = (port: number, start: number, d: { connect: number; head: number; snapshot: number }) => ({ port, start, connect: start + d.connect, head: start + d.head, snapshot: start + d.snapshot });
const server = (port: number, accept: number, request: number, write: number) => ({ port, accept, request, write });

describe('attach phases', () => {
  it('matches each attach with its own connection, a port reused later included', () => {
    const { rows, unmatched } = matchAttaches(
      [client(5000, 100, { connect: 1, head: 10, snapshot: 12 }), client(5000, 200, { connect: 1, head: 40, snapshot: 41 }), client(6000, 100, { connect: 1, head: 5, snapshot: 6 })],
      [server(5000, 102, 103, 104), server(5000, 231, 232, 233), server(7000, 100, 101, 102)],
    );
    expect(unmatched).toBe(1); // port 6000: the server never saw it
    expect(rows).toEqual([
      { total: 12, connect: 1, accept: 1, read: 1, handle: 1, deliver: 6, body: 2 },
      { total: 41, connect: 1, accept: 30, read: 1, handle: 1, deliver: 7, body: 1 },
    ]);
  });

  it('splits the slowest 1% between the load generator and the server', () => {
    const cs = [];
    const ss = [];
    for (let i = 0; i < 200; i++) {
      // 197 quick attaches; 3 slow ones that waited 40 ms in the accept queue.
      const slow = i >= 197;
      cs.push(client(10_000 + i, 1000 * i, { connect: 1, head: slow ? 45 : 5, snapshot: slow ? 46 : 6 }));
      ss.push(server(10_000 + i, 1000 * i + (slow ? 41 : 1), 1000 * i + (slow ? 42 : 2), 1000 * i + (slow ? 43 : 3)));
    }
    const s = summarizePhases(matchAttaches(cs, ss)) as unknown as Summary;
    expect(s.matched).toBe(200);
    expect(s.slowest).toEqual({ total: 46, connect: 1, accept: 40, read: 1, handle: 1, deliver: 2, body: 1 });
    expect(s.slowestServerShare).toBe(0.91);
    expect(s.phases.accept.p99).toBe(40);
    expect(s.phases.accept.p50).toBe(0);
  });
});
