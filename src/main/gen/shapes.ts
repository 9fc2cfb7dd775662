/**
 * Event payloads in the shapes real dsh logs use (copied from the fixtures in
 * shared/fixtures/dsh), so generated sessions exercise the same keys, nesting
 * and sizes that imported sessions do. Each builder returns `data` (plus the
 * optional top-level keys) only; seq and time are the script's business.
 */

export interface Model {
  provider: string;
  model: string;
}

export const MODELS: readonly Model[] = [
  { provider: 'deepseek-official', model: 'deepseek-v4-flash' },
  { provider: 'deepseek-official', model: 'deepseek-v4-pro' },
  { provider: 'openrouter', model: 'qwen3-coder' },
];

export function userMessage(id: string, text: string): { data: unknown; extra: Record<string, unknown> } {
  return {
    data: { content: [{ type: 'text', text }], source: { kind: 'user' }, role: 'user', id },
    extra: { surfaceOp: 'append' },
  };
}

export function requestHeader(m: Model, reason: 'initial' | 'change'): unknown {
  return {
    header: { config: { provider: m.provider, model: m.model, maxTokens: 256000, reasoningEffort: 'high' }, system: '{{system}}', tools: '{{tools}}' },
    reason,
  };
}

export function requestContext(m: Model): unknown {
  return { provider: m.provider, model: m.model, contextWindow: 1000000 };
}

export type BlockType = 'reasoning' | 'text' | 'tool-call';

export function blockStart(turn: number, step: number, index: number, blockType: BlockType): unknown {
  return { turn, step, chunk: { type: 'block-start', index, blockType } };
}

/** What an assistant content block assembles to; also the `block` of its block-end chunk. */
export type AssembledBlock =
  | { type: 'reasoning' | 'text'; text: string }
  | { type: 'tool-call'; id: string; name: string; arguments: string };

export function blockEnd(turn: number, step: number, index: number, block: AssembledBlock): unknown {
  return { turn, step, chunk: { type: 'block-end', index, block } };
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  reasoningTokens: number;
}

export function usageChunk(turn: number, step: number, usage: Usage): unknown {
  return { turn, step, chunk: { type: 'usage', usage } };
}

export function finishChunk(turn: number, step: number, kind: 'stop' | 'tool-calls'): unknown {
  return { turn, step, chunk: { type: 'finish', reason: { kind } } };
}

export function assistantMessage(turn: number, step: number, m: Model, id: string, content: AssembledBlock[], usage: Usage): unknown {
  return { turn, step, message: { role: 'assistant', content, source: { kind: 'model', provider: m.provider, model: m.model }, id }, usage };
}

export function toolCall(turn: number, step: number, callId: string, name: string, args: string): unknown {
  return { turn, step, callId, name, arguments: args };
}

export function toolResult(turn: number, step: number, callId: string, id: string, text: string): unknown {
  return {
    turn,
    step,
    message: {
      source: { kind: 'tool', callId },
      content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text }], isError: false }],
      role: 'user',
      id,
    },
  };
}

export function title(text: string, messageSeq: number): unknown {
  return { title: text, messageSeqs: [messageSeq], source: { kind: 'fallback' } };
}

export function compactionSummary(compactionId: string, m: Model, text: string, shadowed: readonly number[]): unknown {
  return {
    compactionId,
    summary: [{ type: 'text', text }],
    rawOutput: [{ type: 'text', text }],
    llmStreamCall: true,
    shadowedRange: { start: shadowed[0], end: shadowed[shadowed.length - 1] },
    shadowedSeqs: shadowed,
    shadowedTokenCount: shadowed.length * 400,
    provider: m.provider,
    model: m.model,
    maxTokens: 4096,
    usage: { inputTokens: shadowed.length * 400, outputTokens: 120 },
  };
}

const CHECKPOINT =
  'This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. ' +
  'Treat the captured context as established background and build on it without restating it.\n\n<compacted-summary>';

/**
 * The user message that replaces the compacted span. dsh writes `surfaceOp`
 * as an object `{op: "replace", start, end}`; either way it is not "append",
 * so it is not a counted message (SPEC section 5).
 */
export function replaceMessage(compactionId: string, id: string, summary: string, sourceEventSeqs: number[], start: number, end: number): { data: unknown; extra: Record<string, unknown> } {
  return {
    data: {
      content: [
        { type: 'text', text: CHECKPOINT },
        { type: 'text', text: summary },
        { type: 'text', text: '</compacted-summary>' },
      ],
      source: { kind: 'plugin', plugin: 'compact', compactionId },
      role: 'user',
      id,
    },
    extra: { sourceEventSeqs, surfaceOp: { op: 'replace', start, end } },
  };
}
