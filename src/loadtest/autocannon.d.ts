// The part of autocannon 9's API the harness uses (it ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';
  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      headers?: Record<string, string>;
      timeout?: number;
      requests?: Record<string, unknown>[];
      /** Called with each client as it is made (autocannon's own object). */
      setupClient?: (client: never) => void;
    }
    interface Instance extends EventEmitter, PromiseLike<unknown> {
      stop(): void;
    }
  }
  function autocannon(opts: autocannon.Options): autocannon.Instance;
  export default autocannon;
}
