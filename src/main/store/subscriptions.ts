/**
 * Who hears of a session's appends: listeners per session, told of every
 * durable append made through this store's writers, in order. One
 * listener's failure does not concern the others (nor the append, which is
 * durable already).
 */
import type { SessionEvent } from '../../core/types.js';
import type { FollowListener } from '../store-types.js';

export class Subscriptions {
  private readonly listeners = new Map<string, Set<FollowListener>>();

  subscribe(id: string, listener: FollowListener): () => void {
    let set = this.listeners.get(id);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(id, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(id);
    };
  }

  publish(id: string, events: readonly SessionEvent[]): void {
    for (const fn of this.listeners.get(id) ?? []) {
      try {
        fn(events);
      } catch {
        // One subscriber's failure does not concern the others.
      }
    }
  }
}
