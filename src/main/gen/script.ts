/**
 * The story of one generated session, as a lazy stream of logical events:
 * a prelude of settings, then turns (user message, steps of streamed
 * reasoning / text / tool-call deltas, assembled assistant messages, tool
 * calls and results), an occasional compaction, and optionally an in-flight
 * streaming tail. Nothing is kept beyond the current step, so memory is
 * bounded by the largest message, never by the session.
 *
 * The session holds exactly `events` logical events. Each step is planned
 * against the remaining budget; the last answer of a turn absorbs any slack
 * too small for another turn, so the count always comes out exact.
 */
import type { SessionEvent, SessionHeader } from '../../core/types.js';
import { mixSeed, Rng } from './prng.js';
import * as shape from './shapes.js';
import { proseToken, sentence, TOOL_NAMES, toolArgPieces, toolOutput } from './vocab.js';

export interface ScriptOptions {
  id: string;
  /** Logical events in the session, exactly. */
  events: number;
  /** Deltas of the in-flight message at the end (0: the session ends idle). */
  tailEvents?: number;
  seed?: number;
  /** Which of a run's sessions this is; each gets its own PRNG stream. */
  stream?: number;
}

interface ToolPlan {
  name: string;
  pieces: number;
  /** Some providers send the tool name on the first delta only. */
  nameEveryDelta: boolean;
}

interface StepPlan {
  first: boolean;
  title: boolean;
  header: 'initial' | 'change' | null;
  reasoning: number;
  text: number;
  tools: ToolPlan[];
}

/** Events of the smallest possible final step that is not the first of its turn. */
const MIN_FINAL_STEP = 8; // step/start, block-start, 1 delta, block-end, usage, finish, assistant/message, step/end
/** Events of the smallest possible turn: turn/start, first step (adds user/message, request/context), turn/end. */
export const MIN_TURN = 1 + MIN_FINAL_STEP + 2 + 1;
const PRELUDE = ['permission/preset', 'sandbox/mode', 'approval/policy'] as const;
const MAX_STEPS = 8;

function stepSize(p: StepPlan): number {
  let n = 1 + 2 + 1 + 1; // step/start, usage, finish, assistant/message, step/end
  if (p.first) n += 2 + (p.title ? 1 : 0) + (p.header !== null ? 1 : 0); // user/message, request/context, title, header
  if (p.reasoning > 0) n += p.reasoning + 2;
  if (p.text > 0) n += p.text + 2;
  for (const t of p.tools) n += t.pieces + 2 + 2; // block-start/end, tool/call, tool/result
  return n;
}

/** Split an in-flight tail of `m` deltas into reasoning then text. */
function splitTail(rng: Rng, m: number): { reasoning: number; text: number } {
  if (m <= 1) return { reasoning: m, text: 0 };
  const reasoning = Math.min(m - 1, Math.max(1, Math.round(m * (0.25 + 0.35 * rng.next()))));
  return { reasoning, text: m - reasoning };
}

/** Events the tail needs besides its deltas: turn/start, step/start, user/message, request/context, block-start(s). */
export function tailOverhead(tailEvents: number): number {
  if (tailEvents === 0) return 0;
  return 5 + (tailEvents > 1 ? 1 : 0);
}

/** Smallest `events` that can hold a tail of `tailEvents`. */
export function minEventsFor(tailEvents: number): number {
  return tailEvents + tailOverhead(tailEvents);
}

/** Gap before a streamed token: bursts of 0-1 ms, typical ~25 ms, rare stalls. */
function tokenGap(rng: Rng): number {
  const r = rng.next();
  if (r < 0.55) return 0;
  if (r < 0.75) return 1;
  if (r < 0.97) return rng.int(12, 35);
  return rng.int(40, 160);
}

export class SessionScript {
  readonly header: SessionHeader;
  readonly events: number;
  readonly tailEvents: number;
  private readonly rng: Rng;
  private seq = 0;
  private time: number;
  private turn = 0;
  private model: shape.Model;
  private titled = false;
  private headerSent = false;
  /** Tokens of context before the next request: what the provider reads from its cache. */
  private context = 3000;
  /** User messages since the last compaction: what the next one shadows (capped). */
  private shadowable: number[] = [];
  private turnsToCompaction: number;

  constructor(opts: ScriptOptions) {
    const tail = opts.tailEvents ?? 0;
    if (!Number.isSafeInteger(opts.events) || opts.events < 0) throw new RangeError('events must be a non-negative integer');
    if (!Number.isSafeInteger(tail) || tail < 0) throw new RangeError('tailEvents must be a non-negative integer');
    if (opts.events < minEventsFor(tail)) throw new RangeError(`events must be at least ${minEventsFor(tail)} to hold a tail of ${tail} deltas`);
    this.events = opts.events;
    this.tailEvents = tail;
    const seed = opts.seed ?? 1;
    this.rng = new Rng(mixSeed(seed, 2 * (opts.stream ?? 0)));
    // A fixed epoch (mid 2026) plus a per-session offset: never the clock, so bytes are reproducible.
    const createdAt = 1_783_000_000_000 + (opts.stream ?? 0) * 86_400_000 + this.rng.int(0, 3_600_000);
    this.time = createdAt;
    this.model = this.rng.pick(shape.MODELS);
    this.turnsToCompaction = this.rng.int(12, 40);
    this.header = { type: 'session', version: 0, id: opts.id, createdAt, cwd: '/workspace/gen', generator: { seed, events: opts.events, tailEvents: tail } };
  }

  /** The PRNG state the batcher should use (a separate stream, so batching never shifts content). */
  static batchSeed(seed: number, stream: number): number {
    return mixSeed(seed, 2 * stream + 1);
  }

  private ev(type: string, gap: number, data: unknown, extra?: Record<string, unknown>): SessionEvent {
    this.time += gap;
    const e: SessionEvent = { type, seq: this.seq++, time: this.time, data };
    if (extra !== undefined) Object.assign(e, extra);
    return e;
  }

  private small(): number {
    return this.rng.int(0, 7);
  }

  /** All events, in seq order. */
  *run(): Generator<SessionEvent> {
    const tail = this.tailEvents > 0 ? splitTail(this.rng, this.tailEvents) : null;
    let remaining = this.events - minEventsFor(this.tailEvents);
    // A body too small for a turn is all settings events.
    const prelude = remaining < PRELUDE.length + MIN_TURN ? remaining : PRELUDE.length;
    for (let i = 0; i < prelude; i++) {
      const type = PRELUDE[i % PRELUDE.length] as string;
      yield this.ev(type, this.small(), type === 'sandbox/mode' ? { mode: 'workspace-write' } : type === 'approval/policy' ? { policy: 'ask' } : { preset: 'workspace-write' });
    }
    remaining -= prelude;
    while (remaining > 0) {
      const start = this.seq;
      yield* this.turnEvents(remaining);
      remaining -= this.seq - start;
    }
    if (tail !== null) yield* this.tail(tail.reasoning, tail.text);
    if (this.seq !== this.events) throw new Error(`gen: produced ${this.seq} events, planned ${this.events}`);
  }

  /** One turn (maybe after a compaction) using at most `budget` events; leaves 0 or at least MIN_TURN. */
  private *turnEvents(budget: number): Generator<SessionEvent> {
    let left = budget;
    if (--this.turnsToCompaction <= 0 && this.shadowable.length > 0 && left >= 4 + MIN_TURN) {
      yield* this.compaction();
      left -= 4;
      this.turnsToCompaction = this.rng.int(12, 40);
    }
    this.turn++;
    // Human think time before the next prompt.
    yield this.ev('turn/start', this.turn === 1 ? 1 : this.rng.logInt(1500, 600_000), { turn: this.turn });
    left -= 1;
    let header: 'initial' | 'change' | null = null;
    if (!this.headerSent) header = 'initial';
    else if (this.rng.chance(0.03)) {
      this.model = this.rng.pick(shape.MODELS);
      header = 'change';
    }
    for (let step = 1; ; step++) {
      const plan = this.planStep(left, step, header);
      yield* this.stepEvents(plan, step);
      left -= stepSize(plan);
      if (plan.tools.length === 0) break;
    }
    yield this.ev('turn/end', this.small(), { turn: this.turn, reason: { kind: 'completed' } });
  }

  /** Plan step `step` of the turn given `left` events (turn/end included). */
  private planStep(left: number, step: number, header: 'initial' | 'change' | null): StepPlan {
    const rng = this.rng;
    const first = step === 1;
    const plan: StepPlan = {
      first,
      title: first && !this.titled,
      header: first ? header : null,
      reasoning: rng.chance(0.85) ? (rng.chance(0.04) ? rng.logInt(3000, 40_000) : rng.logInt(20, 1500)) : 0,
      text: 0,
      tools: [],
    };
    if (step < MAX_STEPS && rng.chance(Math.max(0.15, 0.65 - 0.08 * step))) {
      const calls = rng.chance(0.75) ? 1 : rng.int(2, 3);
      for (let i = 0; i < calls; i++) plan.tools.push({ name: rng.pick(TOOL_NAMES), pieces: rng.logInt(4, 160), nameEveryDelta: rng.chance(0.9) });
      if (stepSize(plan) + 1 + MIN_FINAL_STEP <= left) return plan;
      plan.tools = [];
    }
    // The final answer of the turn.
    plan.text = rng.chance(0.03) ? rng.logInt(5000, 60_000) : rng.logInt(10, 1200);
    const fixed = (p: StepPlan): number => stepSize({ ...p, reasoning: 0, text: 0 }) + (p.reasoning > 0 ? 2 : 0) + 2;
    // Room for deltas once this step's other events and turn/end are counted; shed extras in tiny sessions.
    let avail = left - 1 - fixed(plan);
    if (plan.reasoning > 0 && avail < 2) {
      plan.reasoning = 0;
      avail = left - 1 - fixed(plan);
    }
    if (avail < 1 && plan.title) {
      plan.title = false;
      avail = left - 1 - fixed(plan);
    }
    if (avail < 1 && plan.header !== null) {
      plan.header = null;
      avail = left - 1 - fixed(plan);
    }
    if (avail < 1) throw new Error(`gen: no room for a final step (${left} events left)`);
    // Too big for what is left, or leaving too little for another turn: this answer takes the rest.
    if (plan.reasoning + plan.text > avail || avail - plan.reasoning - plan.text < MIN_TURN) {
      if (plan.reasoning > 0) plan.reasoning = Math.min(plan.reasoning, avail - 1);
      plan.text = avail - plan.reasoning;
    }
    return plan;
  }

  private *stepEvents(plan: StepPlan, step: number): Generator<SessionEvent> {
    const rng = this.rng;
    const turn = this.turn;
    yield this.ev('step/start', this.small(), { turn, step });
    if (plan.first) {
      const text = sentence(rng, rng.logInt(4, 80));
      const u = shape.userMessage(rng.uuid(), text);
      const userEvent = this.ev('user/message', this.small(), u.data, u.extra);
      if (this.shadowable.length < 256) this.shadowable.push(userEvent.seq);
      yield userEvent;
      if (plan.title) {
        this.titled = true;
        yield this.ev('session/title', this.small(), shape.title(text.slice(0, 40), userEvent.seq));
      }
      if (plan.header !== null) {
        this.headerSent = true;
        yield this.ev('request/header', this.small(), shape.requestHeader(this.model, plan.header));
      }
      yield this.ev('request/context', this.small(), shape.requestContext(this.model));
    }
    const firstChunk = this.seq;
    const content: shape.AssembledBlock[] = [];
    let index = 0;
    if (plan.reasoning > 0) {
      const texts: string[] = [];
      yield* this.textBlock(turn, step, index++, 'reasoning', plan.reasoning, texts, false);
      content.push({ type: 'reasoning', text: texts.join('') });
    }
    if (plan.text > 0) {
      const texts: string[] = [];
      yield* this.textBlock(turn, step, index++, 'text', plan.text, texts, rng.chance(0.4));
      content.push({ type: 'text', text: texts.join('') });
    }
    const calls: { id: string; name: string; args: string }[] = [];
    for (const t of plan.tools) {
      const id = `call_${String(calls.length).padStart(2, '0')}_${rng.chars(20)}${rng.int(1000, 9999)}`;
      const args = yield* this.toolBlock(turn, step, index++, id, t);
      calls.push({ id, name: t.name, args });
      content.push({ type: 'tool-call', id, name: t.name, arguments: args });
    }
    // dsh closes every block after the last delta of the step, in index order.
    for (let i = 0; i < content.length; i++) yield this.ev('assistant/chunk', rng.int(0, 3), shape.blockEnd(turn, step, i, content[i] as shape.AssembledBlock));
    const usage: shape.Usage = {
      inputTokens: rng.logInt(50, 9000),
      outputTokens: plan.reasoning + plan.text + plan.tools.reduce((n, t) => n + t.pieces, 0),
      cacheReadTokens: this.context,
      reasoningTokens: plan.reasoning,
    };
    this.context += usage.inputTokens + usage.outputTokens;
    yield this.ev('assistant/chunk', this.small(), shape.usageChunk(turn, step, usage));
    yield this.ev('assistant/chunk', this.small(), shape.finishChunk(turn, step, calls.length > 0 ? 'tool-calls' : 'stop'));
    // The assembled message names every chunk of its step: its group reaches back to the first.
    const sources: number[] = new Array(this.seq - firstChunk);
    for (let i = 0; i < sources.length; i++) sources[i] = firstChunk + i;
    yield this.ev('assistant/message', this.small(), shape.assistantMessage(turn, step, this.model, rng.uuid(), content, usage), { sourceEventSeqs: sources, surfaceOp: 'append' });
    for (const c of calls) {
      const call = this.ev('tool/call', this.small(), shape.toolCall(turn, step, c.id, c.name, c.args));
      yield call;
      yield this.ev('tool/result', rng.logInt(3, 15_000), shape.toolResult(turn, step, c.id, rng.uuid(), toolOutput(rng)), { sourceEventSeqs: [call.seq], surfaceOp: 'append' });
    }
    yield this.ev('step/end', this.small(), { turn, step });
  }

  /** block-start, then `n` packable deltas; the member texts go to `texts` when the block will be assembled. */
  private *textBlock(turn: number, step: number, index: number, kind: 'reasoning' | 'text', n: number, texts: string[] | null, codeish: boolean): Generator<SessionEvent> {
    const rng = this.rng;
    yield this.ev('assistant/chunk', this.small(), shape.blockStart(turn, step, index, kind));
    const type = kind === 'reasoning' ? 'reasoning-delta' : 'text-delta';
    // Time to first token, then the token cadence.
    this.time += rng.logInt(20, 400);
    for (let k = 0; k < n; k++) {
      if (k > 0) this.time += tokenGap(rng);
      const text = proseToken(rng, codeish);
      texts?.push(text);
      yield { type: 'assistant/chunk', seq: this.seq++, time: this.time, data: { turn, step, chunk: { type, index, text } } };
    }
  }

  /** block-start, then the argument deltas of one tool call; returns the assembled arguments. */
  private *toolBlock(turn: number, step: number, index: number, id: string, t: ToolPlan): Generator<SessionEvent, string> {
    const rng = this.rng;
    yield this.ev('assistant/chunk', this.small(), shape.blockStart(turn, step, index, 'tool-call'));
    const pieces = toolArgPieces(rng, t.pieces);
    this.time += rng.logInt(20, 400);
    for (let k = 0; k < pieces.length; k++) {
      if (k > 0) this.time += tokenGap(rng);
      const chunk: Record<string, unknown> = { type: 'tool-call-delta', index, id };
      if (t.nameEveryDelta || k === 0) chunk.name = t.name;
      chunk.argumentsDelta = pieces[k];
      yield { type: 'assistant/chunk', seq: this.seq++, time: this.time, data: { turn, step, chunk } };
    }
    return pieces.join('');
  }

  /** compaction/start, summary, the replacing user message, compaction/end: 4 events. */
  private *compaction(): Generator<SessionEvent> {
    const rng = this.rng;
    const compactionId = rng.uuid();
    const turn = this.turn + 1;
    const shadowed = this.shadowable;
    this.shadowable = [];
    this.context = rng.int(1500, 4000);
    const start = this.ev('compaction/start', rng.logInt(200, 5000), { compactionId, turn });
    yield start;
    const summary = sentence(rng, rng.logInt(20, 200));
    const sum = this.ev('compaction/summary', rng.logInt(2000, 30_000), shape.compactionSummary(compactionId, this.model, summary, shadowed));
    yield sum;
    const r = shape.replaceMessage(compactionId, rng.uuid(), summary, [start.seq, sum.seq, ...shadowed], shadowed[0] as number, shadowed[shadowed.length - 1] as number);
    yield this.ev('user/message', this.small(), r.data, r.extra);
    yield this.ev('compaction/end', this.small(), { compactionId, turn });
  }

  /** The newest turn, still streaming: a prompt, then reasoning and text deltas, no message yet. */
  private *tail(reasoning: number, text: number): Generator<SessionEvent> {
    const rng = this.rng;
    this.turn++;
    const turn = this.turn;
    yield this.ev('turn/start', this.turn === 1 ? 1 : rng.logInt(1500, 600_000), { turn });
    yield this.ev('step/start', this.small(), { turn, step: 1 });
    const u = shape.userMessage(rng.uuid(), sentence(rng, rng.logInt(4, 80)));
    yield this.ev('user/message', this.small(), u.data, u.extra);
    yield this.ev('request/context', this.small(), shape.requestContext(this.model));
    // Nothing is assembled: the message is still streaming, and the tail may be huge.
    yield* this.textBlock(turn, 1, 0, 'reasoning', reasoning, null, false);
    if (text > 0) yield* this.textBlock(turn, 1, 1, 'text', text, null, rng.chance(0.4));
  }
}
