/**
 * The server's count of active clients (server/active-clients.ts), which keeps a page off the
 * lone-client path (small-slice-pool.ts): connections with a request in flight, and idle ones
 * that asked within CLIENT_IDLE_MS; a closed one stops counting at once.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ActiveClients } from '../src/main/server/active-clients.js';

function clock() {
  let t = 0;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe('ActiveClients', () => {
  it('counts connections in flight, then idle ones until idleMs has passed', () => {
    const c = clock();
    const clients = new ActiveClients(1000, c.now);
    const [a, b] = [new EventEmitter(), new EventEmitter()];
    expect(clients.count()).toBe(0);
    clients.started(a);
    clients.started(b);
    expect(clients.count()).toBe(2);
    clients.ended(b);
    expect(clients.count()).toBe(2);
    c.advance(999);
    expect(clients.count()).toBe(2);
    c.advance(2);
    expect(clients.count()).toBe(1);
    clients.ended(a);
    expect(clients.count()).toBe(1);
    c.advance(1001);
    expect(clients.count()).toBe(0);
  });

  it('a lone client asking again and again is one client, an idle pooled connection none', () => {
    const c = clock();
    const clients = new ActiveClients(1000, c.now);
    const [lone, pooled] = [new EventEmitter(), new EventEmitter()];
    clients.started(pooled);
    clients.ended(pooled);
    c.advance(1500);
    for (let i = 0; i < 5; i++) {
      clients.started(lone);
      expect(clients.count()).toBe(1);
      clients.ended(lone);
      c.advance(10);
    }
  });

  it('two clients taking turns both count', () => {
    const c = clock();
    const clients = new ActiveClients(1000, c.now);
    const [a, b] = [new EventEmitter(), new EventEmitter()];
    for (let i = 0; i < 4; i++) {
      const s = i % 2 === 0 ? a : b;
      clients.started(s);
      expect(clients.count()).toBe(i === 0 ? 1 : 2);
      clients.ended(s);
      c.advance(100);
    }
  });

  it('pipelined requests on one connection: in flight until the last ends', () => {
    const c = clock();
    const clients = new ActiveClients(1000, c.now);
    const [a, b] = [new EventEmitter(), new EventEmitter()];
    clients.started(a);
    clients.started(a);
    clients.ended(a);
    clients.started(b);
    expect(clients.count()).toBe(2);
    clients.ended(a);
    c.advance(1001);
    expect(clients.count()).toBe(1);
  });

  it('a closed connection stops counting at once, whenever it closes', () => {
    const c = clock();
    const clients = new ActiveClients(1000, c.now);
    const [a, b, d] = [new EventEmitter(), new EventEmitter(), new EventEmitter()];
    clients.started(a);
    clients.ended(a);
    clients.started(b);
    clients.ended(b);
    clients.started(d);
    expect(clients.count()).toBe(3);
    b.emit('close');
    expect(clients.count()).toBe(2);
    a.emit('close');
    expect(clients.count()).toBe(1);
    // Closed before its request's answer ended: nothing left behind.
    d.emit('close');
    clients.ended(d);
    expect(clients.count()).toBe(0);
  });
});
