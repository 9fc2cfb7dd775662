/**
 * One live instance of each class whose instances live only while one
 * operation runs (a page's planner walk and its blocks, a slice's encoder
 * and checksum cursor), pure.
 *
 * Why: V8 holds the hidden class (map) that a class's instances end up with
 * only weakly. Once the last instance is gone, the next full garbage
 * collection frees the map and throws away every optimized function that
 * checks for it ("marking dependent code ... reason: weak objects" in
 * --trace-deopt). Traced: the first full GC after the warm-ups discarded
 * the whole optimized decode path in a worker (decodeSlice, every encoder
 * method) and the planner on the main thread (planPage, the walk, the
 * index and sidecar blocks); the next page then ran them unoptimized while
 * V8 compiled them again on a helper thread, beside the decoding workers.
 * A kept instance keeps its map, so optimized code survives collections.
 *
 * Cost: one map store per instance created (per plan, block, slice task),
 * and the memory of one instance per class, replaced by the next one. A
 * kept instance must not hold data that grows with the operation: the
 * planner's idle walkers keep their arrays only up to a bound
 * (Walker.finish), a worker
 * keeps a checksum cursor over nothing after each task. What stays is a
 * block of sidecar lines or index records (<= 64 KiB) and what the last
 * reader's closure holds (after start-up: the planner warm-up's synthetic
 * sidecar, ~2 MB, until the first real plan of each walk replaces it).
 */
const kept = new Map<unknown, object>();

/** Keep `o` as its class's live instance (call at the end of the constructor). */
export function keepShape(o: object): void {
  kept.set(o.constructor, o);
}
