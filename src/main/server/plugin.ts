/**
 * Plugin helpers. Fastify encapsulates every registered plugin; a plugin
 * marked with `skip-override` (what `fastify-plugin` does) instead decorates
 * the context it is registered in. We use that for the few things that must
 * reach every route (error handling, metrics hooks) and keep the rest
 * encapsulated.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';

export function globalPlugin<O>(name: string, fn: (app: FastifyInstance, opts: O) => Promise<void>): FastifyPluginAsync<O & Record<never, never>> {
  const plugin = fn as unknown as FastifyPluginAsync<O & Record<never, never>> & Record<symbol, unknown>;
  plugin[Symbol.for('skip-override')] = true;
  plugin[Symbol.for('fastify.display-name')] = name;
  return plugin;
}
