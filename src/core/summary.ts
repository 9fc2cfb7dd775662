/**
 * The catalog summary of a session (SPEC section 3, metadata sidecar), as a
 * pure reducer over logical events. The writer folds each appended batch in;
 * reindex folds the whole log in; both give the same result.
 */
import type { SessionEvent, SessionHeader } from './types.js';

export interface TokenTotals {
  input: number;
  output: number;
  cacheRead: number;
  reasoning: number;
}

export interface SessionSummary {
  title: string | null;
  hasUserMessage: boolean;
  provider: string | null;
  model: string | null;
  agentPreset: string | null;
  permissionPreset: string | null;
  lastCompactionSeq: number | null;
  tokens: TokenTotals;
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

export function emptySummary(header: SessionHeader): SessionSummary {
  return {
    title: str(header.title) ?? null,
    hasUserMessage: false,
    provider: null,
    model: null,
    agentPreset: str(header.agentPreset) ?? null,
    permissionPreset: null,
    lastCompactionSeq: null,
    tokens: { input: 0, output: 0, cacheRead: 0, reasoning: 0 },
  };
}

/** Fold one logical event into the summary (mutates and returns it). */
export function foldEvent(s: SessionSummary, e: SessionEvent): SessionSummary {
  const data = obj(e.data);
  switch (e.type) {
    case 'session/title': {
      const t = str(data?.title);
      if (t !== undefined) s.title = t;
      break;
    }
    case 'user/message':
      s.hasUserMessage = true;
      break;
    case 'request/header': {
      const config = obj(obj(data?.header)?.config);
      const provider = str(config?.provider);
      const model = str(config?.model);
      if (provider !== undefined) s.provider = provider;
      if (model !== undefined) s.model = model;
      break;
    }
    case 'assistant/message': {
      const source = obj(obj(data?.message)?.source);
      const provider = str(source?.provider);
      const model = str(source?.model);
      if (provider !== undefined) s.provider = provider;
      if (model !== undefined) s.model = model;
      const usage = obj(data?.usage);
      if (usage) {
        s.tokens.input += num(usage.inputTokens);
        s.tokens.output += num(usage.outputTokens);
        s.tokens.cacheRead += num(usage.cacheReadTokens);
        s.tokens.reasoning += num(usage.reasoningTokens);
      }
      break;
    }
    case 'agent/preset': {
      const p = str(data?.preset);
      if (p !== undefined) s.agentPreset = p;
      break;
    }
    case 'permission/preset': {
      const p = str(data?.preset);
      if (p !== undefined) s.permissionPreset = p;
      break;
    }
    case 'compaction/start':
    case 'compaction/summary':
    case 'compaction/end':
      s.lastCompactionSeq = e.seq;
      break;
    default:
      break;
  }
  return s;
}
