/**
 * Objects kept alive only for their hidden classes (issue 15; docs/benchmarks.md,
 * "proof, second round (ninth session, 2026-12-03)"). V8 holds the hidden
 * classes an object goes through as fields are added to it only weakly: when
 * no object of a short-lived kind is alive at a full collection, they die, and
 * every optimized function that embeds them is thrown away ("reason: weak
 * objects" in --trace-deopt) and compiled again. Under load that happened
 * after every full collection (every 0.3-0.7 s at 16 connections), to some
 * thirty functions of the request path each time. One live object of each
 * kind keeps its classes. Exported so that they stay alive (a module
 * constant nothing reads is gone once the module has run); imported by the
 * server for that alone.
 */
import { AsyncResource } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** A Hash as createHash makes them: each request's token check and each page's tag make one. */
export const HASH = createHash('sha256');

/**
 * The resource queueMicrotask wraps each callback in (Node 20's
 * lib/internal/process/task_queues.js: a 'Microtask' AsyncResource, then its
 * `callback` set): the page workers' pool queues one a page.
 */
export const MICROTASK = Object.assign(new AsyncResource('Microtask', { requireManualDestroy: true }), { callback: () => undefined });

/** The last request answered and its reply (and through them Node's request, response and socket): set by the metrics hook. */
export const lastAnswered: { request?: FastifyRequest; reply?: FastifyReply } = {};
