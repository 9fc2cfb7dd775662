/**
 * Tasks reach the worker as structured clones, whose object shape differs
 * from the tasks the JIT warm-up builds. The decode loop must see one shape
 * either way (decodeTask): a clone that deoptimized it at the end of the
 * warm-up left a worker's first page running unoptimized while V8
 * recompiled it, the slow half of the cold tail pages (docs/benchmarks.md).
 * Nor may a garbage collection between tasks discard it: the hidden classes
 * of objects that live only during a task are freed with their last
 * instance, and code that checks for them with them (page-task.ts keeps one
 * instance of each). Nor may the first task carrying a plan's claim digest
 * (the warm-up's carry none): a task field whose representation changed
 * (small integer to double) or a compare never run before optimization
 * deoptimized it, and the first real page ran while V8 compiled it again.
 * Checked with V8's own optimization status, in a child process.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { warmUpJit } from '../src/workers/jit-warmup.js';
import type { Tier } from '../src/workers/optimization-status.js';

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, '../dist');
const BIN = resolve(here, '../bin/session-pager.js');

/**
 * Runs a planner probe (test/helpers) in a fresh process with V8's optimization trace: the probe's
 * JSON line of walkPage's tiers (wherever it falls among V8's lines: a background compile may still
 * print after it), the trace's walkPage lines (for failure messages) and every walkPage deoptimization.
 */
function tracedWalkProbe(probe: string): { tiers: Record<string, unknown>; walkLines: string; walkDeopts: string[] } {
  const out = execFileSync(process.execPath, ['--trace-opt', '--trace-deopt', resolve(here, probe), dist], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const tiers = JSON.parse(/^\{"warmed".*$/m.exec(out)?.[0] ?? 'null') as Record<string, unknown> | null;
  expect(tiers, out.slice(-2000)).not.toBeNull();
  return {
    tiers: tiers ?? {},
    walkLines: out.split('\n').filter((l) => l.includes('walkPage')).join('\n'),
    walkDeopts: out.match(/SharedFunctionInfo walkPage>\) \(opt id \d+\) for deoptimization[^\n]*/g) ?? [],
  };
}

describe('optimized page-path code and object shapes', () => {
  it('stays optimized when tasks arrive as structured clones, across a garbage collection between tasks, and on the first tasks carrying a claim digest', () => {
    expect(existsSync(`${dist}/workers/page-task.js`), 'dist/ is built by `npm test` (tsc) before the tests run').toBe(true);
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', resolve(here, 'helpers/decode-shape-probe.mjs'), dist], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ warmed: true, afterClones: true, afterGc: true, afterDigests: true });
  }, 60_000);

  it("a worker's JIT warm-up leaves a binary session's per-row functions optimized: the first binary page does not run them unoptimized while V8 compiles them", () => {
    // The page-path warm-up's pages are of a JSONL session: without a binary row warm-up, continuedBinaryRow
    // and wholeRow were first optimized during a fresh process's first binary page (--trace-opt), in both workers.
    // With V8's compiles on this thread (--no-concurrent-recompilation) a function marked hot is
    // compiled at once: the answer is the warm-up's calls and feedback alone. With helper-thread
    // compiles, on a starved machine (12 probes at once beside others' work, load 15-21) 3 of 60
    // probes of a correct build found wholeRow or continuedBinaryRow not optimized: marked again and
    // again while the helper threads' queue did not move, never compiled before the warm-up's
    // bounded decodes ended (traced); with it 0 of 48, and without the binary rows' warm-up
    // (warmUpBinaryRows returning at once) both are not optimized in every run.
    const out = execFileSync(process.execPath, ['--no-concurrent-recompilation', resolve(here, 'helpers/binary-rows-probe.mjs'), dist], { encoding: 'utf8' });
    const all = { binaryFrame: 'optimized', continuedBinaryRow: 'optimized', wholeRow: 'optimized', writeRowGaps: 'optimized', writeRowMembers: 'optimized' };
    expect(JSON.parse(out)).toEqual({ warmed: all, afterTask: all });
  }, 60_000);

  it("a worker's JIT warm-up leaves the per-frame readers optimized: the first real page does not compile them beside its decode", () => {
    // The rounds stop once the decode loop is optimized; keysGroup (the message group walk the claim check
    // runs on every message), isMessageTypeAt and scanTrustedFrame were then compiled during a fresh process's
    // first tail page in 4 of 6 traced processes (--trace-opt), a third thread's CPU beside the two workers.
    const out = execFileSync(process.execPath, [resolve(here, 'helpers/frame-readers-probe.mjs'), dist], { encoding: 'utf8' });
    // toolIdentity (a tool frame's identity, called out of line by scanTrustedFrame): left to the first real
    // pages by one worker in 2 of 5 traced starts of the fourteenth session, before the warm-up waited for it.
    expect(JSON.parse(out)).toEqual({ scanTrustedFrame: 'optimized', isMessageTypeAt: 'optimized', keysGroup: 'optimized', toolIdentity: 'optimized' });
  }, 60_000);

  it('the planner stays optimized across a garbage collection between pages', () => {
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--no-concurrent-recompilation', resolve(here, 'helpers/planner-shape-probe.mjs'), dist], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ warmed: true, afterGc: true });
  }, 60_000);

  it("the page path's planning and views keep their optimized code across full collections between pages; its pages, parameters and headers are object literals", () => {
    // A page opens a frame index file and makes a page version carrying its view, and drops them
    // before the next request: with no instance left between pages, a full collection freed their
    // hidden classes, and V8 discarded the code that checks for them ("weak objects"): traced in
    // `serve` at 1 connection, planResolved, the index file's methods, viewNow, spanFits and frameFits
    // at most full collections, and the next pages ran them unoptimized while V8 compiled them again.
    // Here: planResolved and read without the kept index file, planResolved and recordsByNumber
    // without the kept version (frame-index-file.ts lastOpened, session-views.ts lastVersion).
    // The same holds for what every page request makes and drops on the way (the store's page,
    // the direct route's parameters and headers): objects grown field by field (a spread and fields
    // added after, an empty object and a field per query parameter or header) had classes that died
    // with them; as one object literal of all their fields each has one class, the literal's.
    const dataDir = mkdtempSync(join(tmpdir(), 'index-shape-'));
    try {
      const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--no-concurrent-recompilation', resolve(here, 'helpers/index-file-shape-probe.mjs'), dist, dataDir], { encoding: 'utf8', maxBuffer: 1 << 28 });
      expect(out).toMatch(/probe done: 900 pages, 6 full collections/);
      expect(out).toMatch(/probe done over HTTP: 4400 pages, 6 full collections/);
      // The first part: pages through the store alone (the HTTP part's node objects discard more of the page path's code, not asserted here).
      const storePart = out.slice(0, out.indexOf('probe: store pages done'));
      const httpPart = out.slice(out.indexOf('probe: store pages done'));
      const pagePath = /^(planResolved|openIfWhole|entryAt|findBySeq|seqAt|read|backwardFrom|close|viewNow|pageVersion|pageView|viewOf|checkPlan|spanFits|frameFits|recordsByNumber|withChecksums|buildPage|pageBuffer)$/;
      // Precondition: the pages had V8 optimize the planning and the index file's reads (else nothing could be discarded).
      const optimizedIn = (part: string) => new Set([...part.matchAll(/completed (?:optimizing|compiling) 0x[0-9a-f]+ <JSFunction (\S+) /g)].map((m) => m[1]));
      const traced = (part: string) => () => part.split('\n').filter((l) => /weak objects|JSFunction (planResolved|read|recordsByNumber|buildPage|answerPage|storeHeader) /.test(l)).slice(-40).join('\n');
      expect(['planResolved', 'read', 'recordsByNumber'].filter((f) => !optimizedIn(storePart).has(f)), traced(storePart)()).toEqual([]);
      const discardedIn = (part: string) => [...part.matchAll(/<SharedFunctionInfo (\S+)>\) \(opt id \d+\) for deoptimization, reason: weak objects/g)].map((m) => m[1] as string);
      expect(discardedIn(storePart).filter((f) => pagePath.test(f)), traced(storePart)()).toEqual([]);
      // Over HTTP, with the page cache: the code that makes and reads the pages is not discarded
      // either, nor the answer's and node's writing of its headers (answerPage; storeHeader,
      // processHeader, writeHead: at every collection here without the route's kept last response,
      // fast-page.ts lastResponse, as node's response objects pass through classes of their own).
      expect(['buildPage', 'answerPage', 'storeHeader'].filter((f) => !optimizedIn(httpPart).has(f)), traced(httpPart)()).toEqual([]);
      expect(discardedIn(httpPart).filter((f) => /^(buildPage|pageBuffer|pageOf|handOut|observePage|plainPageQuery|answerPage|storeHeader|processHeader|writeHead)$/.test(f)), traced(httpPart)()).toEqual([]);
      // One class each, checked with V8's %HaveSameMap: pages built and from the cache, with and without a coding (page-service.ts
      // pageOf); the route's parameters whatever the query (fast-page.ts plainPageQuery); its headers, an object literal's.
      const shapes = /probe shapes: (\{.*\})/.exec(out)?.[1];
      expect(JSON.parse(shapes ?? '{}')).toEqual({ pages: true, params: true, headers: true, gzipHeaders: true, notModifiedHeaders: true });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it("a worker's JIT warm-up runs until V8 says the decode loop is optimized, waiting out its background compile", async () => {
    // V8 marks the loop late (a large function wants ~17 ticks of stable feedback) and compiles it on a
    // helper thread from the next call; seven fixed rounds ended before that compile in most traced
    // workers, and the first real page ran the loop unoptimized beside it.
    // V8's answers in turn: asked once up front, then before each round from the third.
    const answers: (Tier | null)[] = ['not-optimized', ...Array<Tier>(9).fill('not-optimized'), 'compiling', 'compiling', 'optimized'];
    let asked = 0;
    let decodes = 0;
    const rounds = await warmUpJit(() => void decodes++, () => answers[Math.min(asked++, answers.length - 1)] ?? null, 120_000);
    // Two rounds, then one for each 'not yet', none while it compiles, and none once it is optimized.
    expect(rounds).toBe(11);
    expect(asked).toBe(answers.length);
    expect(decodes % rounds).toBe(0);
    // Where V8 cannot say, the fixed rounds.
    expect(await warmUpJit(() => undefined, () => null, 120_000)).toBe(7);
  }, 60_000);

  it("the workers' optimized decode loop survives the collection that ends their start, under the start-up's young-generation hold", () => {
    // Traced in a store's real warm-up: with the workers' semi-spaces grown under the main thread's
    // hold (growth factor 1), that collection discarded the loop ("weak objects") in most workers,
    // and the first real page compiled it again beside its decode (docs/benchmarks.md).
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-trace-'));
    try {
      const out = execFileSync(process.execPath, [resolve(here, 'helpers/warmup-trace-probe.mjs'), dist, dataDir], { encoding: 'utf8', maxBuffer: 1 << 28 });
      // Matched in the whole text, not by line: V8 prints from every thread at once, and a line of one
      // thread's trace is now and then cut by another's, even inside a line's pieces (seen under load:
      // "...decodeSlice (sfi = 0x5f6574ecd91)> (target TURBOFAN)0x09b74cfa7b79 <JSFunction isPlainObject...",
      // another thread's text between the target and its "]"; the precondition then counted 1 of 2).
      // So each worker's loop is counted by its function's sfi, once its compile completed or its
      // code was installed, whatever follows: by V8's own marking (concurrent: "completed optimizing")
      // or at the warm-up's request (on the worker's thread: "completed compiling").
      const optimized = new Set(
        [...out.matchAll(/completed (?:optimizing|compiling) 0x[0-9a-f]+ <JSFunction decodeSlice \(sfi = (0x[0-9a-f]+)\)>/g)].map((m) => m[1]),
      );
      const discarded = out.match(/SharedFunctionInfo decodeSlice>\) \(opt id \d+\) for deoptimization[^\n]*/g) ?? [];
      // Precondition: both workers' warm-ups optimized the loop (else nothing could be discarded).
      expect(optimized.size, out.split('\n').filter((l) => l.includes('decodeSlice')).join('\n')).toBeGreaterThanOrEqual(2);
      expect(discarded).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it("the store's warm-up never deoptimizes the workers' decode loop, the claim memo's table and compare included", () => {
    // The workers' claim memo (workers/claim-memo.ts) is inlined into the loop and never hit by a
    // warm-up task: built first with an "unknown" answer of -1 and no calls at load, the loop
    // deoptimized ("not a Smi") in both workers at the end of the warm-up, and the first real pages
    // ran it unoptimized while V8 compiled it again beside them (traced; docs/benchmarks.md "same
    // (fourteenth session)"). That build gives two such lines here, this one none.
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-trace-'));
    try {
      const out = execFileSync(process.execPath, [resolve(here, 'helpers/warmup-trace-probe.mjs'), dist, dataDir], { encoding: 'utf8', maxBuffer: 1 << 28 });
      expect(out.match(/deoptimizing 0x[0-9a-f]+ <JSFunction decodeSlice [^\n]*/g) ?? []).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it("the planner's warm-up sets off no compile of its own warm-up-only code (it would finish during the first real page)", () => {
    // Traced: syntheticSidecar, marked hot by its large sidecar's loop, was called again at the end of
    // the warm-up, and that call began its compile: ~100 ms of a helper thread and the main thread's
    // finishing of it landed in the first real page. Nor on stack (OSR) while its loop runs: 16-43 ms
    // of a helper thread in every traced start, aborted in 23 of 24 and never used (issue 13's cold
    // page, docs/benchmarks.md "same (thirteenth session)").
    const out = execFileSync(process.execPath, ['--trace-opt', resolve(here, 'helpers/planner-warmup-trace.mjs'), dist], { encoding: 'utf8' });
    expect(out.split('\n').filter((l) => /compiling method .*<JSFunction syntheticSidecar .*\(target TURBOFAN\)/.test(l))).toEqual([]);
  }, 60_000);

  it("the planner's warm-up ends with its walk (walkPage) optimized, and its code survives the collection that ends the store's warm-up", () => {
    // Traced in real `serve` starts: the warm-up's last walk (over the three-frame sidecar its kept
    // instances are left holding) deoptimized planPage ("wrong map") right after the rounds had it
    // optimized; compiled again from that feedback, it was discarded at the store's closing collection
    // ("weak objects") in 5 of 6 starts, and the first real page compiled it again beside its plan.
    // As the store runs them (warmup/warm-up.ts, without the page-path session), in a fresh process.
    const code = `
      const { walkPage } = await import(${JSON.stringify(`${dist}/core/page-planner.js`)});
      const { warmUpPlanner } = await import(${JSON.stringify(`${dist}/main/warmup/planner-warmup.js`)});
      const { tierOf } = await import(${JSON.stringify(`${dist}/workers/optimization-status.js`)});
      const { collectGarbage } = await import(${JSON.stringify(`${dist}/workers/full-gc.js`)});
      await warmUpPlanner(30, true);
      await warmUpPlanner();
      for (let i = 0; i < 2500 && tierOf(walkPage) === 'compiling'; i++) await new Promise((r) => setTimeout(r, 2));
      const warmed = tierOf(walkPage);
      collectGarbage();
      process.stdout.write(JSON.stringify({ warmed, afterGc: tierOf(walkPage) }));`;
    for (let run = 0; run < 2; run++) {
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual({ warmed: 'optimized', afterGc: 'optimized' });
    }
  }, 120_000);

  it("the planner's optimized walk survives this thread's first detached ArrayBuffer", () => {
    // The first ArrayBuffer a thread detaches invalidates V8's ArrayBufferDetaching protector, and V8
    // discards every optimized function compiled while it held ("code dependencies"): walkPage reads
    // Float64Arrays. Without a page-path warm-up (whose decoder's loading detaches one first) that was
    // the first real page's buffers moved to a worker, after the planner's warm-up: the page walked
    // unoptimized while V8 compiled the walk again. After the warm-ups, one detach, then a page
    // planned by both walks, in a fresh process.
    for (let run = 0; run < 2; run++) {
      const { tiers, walkLines, walkDeopts } = tracedWalkProbe('helpers/planner-detach-probe.mjs');
      // Precondition: the warm-up had the walk optimized (else nothing could be discarded).
      expect(tiers.warmed, walkLines).toBe('optimized');
      expect(walkDeopts, walkLines).toEqual([]);
      expect(tiers, walkLines).toEqual({ warmed: 'optimized', afterDetach: 'optimized', afterPage: 'optimized' });
    }
  }, 120_000);

  it("the planner's optimized walk survives the first walk that outgrows a walker's arrays", () => {
    // A walker's arrays are replaced when a walk loads more lines than they hold (core/page-planner.ts
    // grown). V8 takes a field written only by its initializer for a constant, and code compiled so
    // (walkPage, with the walker's `group` inlined) was discarded ("code dependencies") at the first
    // such replacement. In `serve` the page-path warm-up's short walks can have the walk compiled
    // before the planner's last pass makes the first long walk (traced: the 'groups' field made mutable
    // in takeOne, `group`'s code discarded in every start, walkPage's compile aborted in one): the
    // serve-start probe below failed in CI with walkPage discarded, "code dependencies".
    for (let run = 0; run < 2; run++) {
      const { tiers, walkLines, walkDeopts } = tracedWalkProbe('helpers/planner-grow-probe.mjs');
      // Preconditions: the short walks had the walk optimized, and the long one outgrew a walker's first arrays (1,024 lines).
      expect(tiers.warmed, walkLines).toBe('optimized');
      expect(tiers.frames).toBeGreaterThan(1024);
      expect(walkDeopts, walkLines).toEqual([]);
      expect(tiers.afterLong, walkLines).toBe('optimized');
    }
  }, 120_000);

  it("the planner's warm-up leaves the plan check's loop (spanFits) optimized, and its code survives a full collection", () => {
    // Called once a page, V8 marked it on the fifth real 5M tail page and compiled it on a helper
    // thread during the sixth, beside the decoding workers (traced, issue 13's warm page). Asked
    // optimized at the warm-up's end; the shapes its code checks for (the rounds' bounds, the
    // frame index's lines) kept alive, else the first full collection discarded it ("weak objects").
    const code = `
      const { spanFits } = await import(${JSON.stringify(`${dist}/core/plan-check.js`)});
      const { warmUpPlanner } = await import(${JSON.stringify(`${dist}/main/warmup/planner-warmup.js`)});
      const { tierOf } = await import(${JSON.stringify(`${dist}/workers/optimization-status.js`)});
      const { collectGarbage } = await import(${JSON.stringify(`${dist}/workers/full-gc.js`)});
      await warmUpPlanner();
      const warmed = tierOf(spanFits);
      collectGarbage();
      collectGarbage();
      process.stdout.write(JSON.stringify({ warmed, afterGc: tierOf(spanFits) }));`;
    for (let run = 0; run < 2; run++) {
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual({ warmed: 'optimized', afterGc: 'optimized' });
    }
  }, 120_000);

  it("a real `serve` start keeps the planner's optimized code through the store's closing collection", async () => {
    // The probes above plan in one process of their own; a real start (page workers warming up on
    // the same cores, the page-path session, the planner warmed again) did not keep planPage: V8
    // discarded it ("weak objects") at the store's closing collection in 4 of 4 traced starts of
    // 73df797, and the first real page compiled it again beside its plan (docs/benchmarks.md).
    // Traced up to /readyz, two starts.
    for (let run = 0; run < 2; run++) {
      const dir = mkdtempSync(join(tmpdir(), 'planner-serve-'));
      const child = spawn(process.execPath, ['--trace-opt', '--trace-deopt', BIN, 'serve', '--data', dir, '--port', '0', '--workers', '2', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise((r) => child.once('exit', r));
      try {
        let traced = '';
        for (const t0 = Date.now(); traced === '' && Date.now() - t0 < 60_000; ) {
          const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
          if (url !== undefined && (await fetch(`${url}/readyz`).then((r) => r.status, () => 0)) === 200) traced = out;
          else await new Promise((r) => setTimeout(r, 20));
        }
        expect(traced, out.slice(-2000)).not.toBe('');
        // Precondition: the warm-up optimized it (else nothing could be discarded), by V8's own
        // marking (a helper thread's compile: "completed optimizing") or at the warm-up's request (on
        // this thread: "completed compiling" alone, as when a helper thread's compile was aborted and
        // the warm-up asked for it: a start traced so had no "completed optimizing" line for the walk).
        // The failure message: every line naming the walk, then the trace's last deoptimizations.
        const walkLines = () =>
          [...traced.split('\n').filter((l) => l.includes('walkPage')), '...', ...traced.split('\n').filter((l) => l.includes('deoptimiz')).slice(-20)].join('\n');
        expect(traced, walkLines()).toMatch(/completed (?:optimizing|compiling) 0x[0-9a-f]+ <JSFunction walkPage /);
        expect(traced.match(/SharedFunctionInfo walkPage>\) \(opt id \d+\) for deoptimization[^\n]*/g) ?? [], walkLines()).toEqual([]);
      } finally {
        child.kill('SIGTERM');
        await exited;
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }, 180_000);

  it("a worker's warm-up leaves the small methods its decode loop calls per frame optimized too, not for the first real page to compile", () => {
    // The loop does not inline them; its rounds stopped once the loop itself was optimized, and the
    // first 5M tail page then compiled them on a helper thread beside its decode (issue 13, cold).
    // Run as page-task.ts runs it, in a fresh process (V8's tiers are per process).
    const code = `
      const { decodeInArena, decodeSlice } = await import(${JSON.stringify(`${dist}/workers/page-task.js`)});
      const { warmUpJit } = await import(${JSON.stringify(`${dist}/workers/jit-warmup.js`)});
      const { tierOf } = await import(${JSON.stringify(`${dist}/workers/optimization-status.js`)});
      const { CrcCursor } = await import(${JSON.stringify(`${dist}/streams/frame-crc-file.js`)});
      const { ByteSink } = await import(${JSON.stringify(`${dist}/core/byte-sink.js`)});
      await warmUpJit(decodeInArena, () => tierOf(decodeSlice), 60_000, tierOf);
      const c = CrcCursor.prototype;
      const helpers = { metaTime0: c.metaTime0, metaDtSum: c.metaDtSum, metaDtStart: c.metaDtStart, metaDtEnd: c.metaDtEnd, metaCount: c.metaCount, sink: ByteSink.prototype.sink };
      const tiers = () => Object.fromEntries(Object.entries(helpers).map(([k, f]) => [k, tierOf(f)]));
      // The warm-up returns once each is optimized or its compile is under way: those compiles end
      // without another call of the helper (none is called below), as the worker's idle wait does.
      const left = new Set(Object.values(tiers()));
      left.delete('optimized');
      left.delete('compiling');
      // On a loaded machine a compile waits behind the other processes' on V8's helper threads: up to 30 s.
      for (let i = 0; i < 6000 && Object.values(tiers()).includes('compiling'); i++) await new Promise((r) => setTimeout(r, 5));
      process.stdout.write(JSON.stringify({ ...tiers(), left: [...left] }));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
    const optimized = { metaTime0: 'optimized', metaDtSum: 'optimized', metaDtStart: 'optimized', metaDtEnd: 'optimized', metaCount: 'optimized', sink: 'optimized', left: [] };
    expect(JSON.parse(out)).toEqual(optimized);
  }, 120_000);
});

