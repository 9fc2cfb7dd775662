/**
 * The tuning variables' values (SESSION_PAGER_*), read one way: a value that is not one the
 * variable takes refuses to start (CliError: exit 2, as a bad flag value), naming the variable.
 * Ignored as they once were, a typo left the process running on the defaults the operator meant
 * to change, and nothing said so.
 */
import { quoteInput } from '../../core/excerpt.js';
import { CliError } from './common.js';

/** What a numeric variable takes: an integer or any number, at least (or above) `min`, at most `max`. */
export interface EnvRule {
  integer?: boolean;
  min: number;
  /** The value must be greater than `min`, not equal to it. */
  above?: boolean;
  max?: number;
}

function ruleText(r: EnvRule): string {
  const low = `${r.above === true ? '>' : '>='} ${r.min}`;
  return `${r.integer === true ? 'an integer' : 'a number'} ${low}${r.max === undefined ? '' : ` and <= ${r.max}`}`;
}

/** `name` as a number; undefined when unset or empty (blank): the default. */
export function envNumber(env: NodeJS.ProcessEnv, name: string, rule: EnvRule): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const text = raw.trim();
  const n = (rule.integer === true ? /^[0-9]+$/ : /^(?:[0-9]+\.?[0-9]*|\.[0-9]+)$/).test(text) ? Number(text) : NaN;
  const inRange = rule.above === true ? n > rule.min : n >= rule.min;
  if (!Number.isFinite(n) || (rule.integer === true && !Number.isSafeInteger(n)) || !inRange || (rule.max !== undefined && n > rule.max)) {
    throw new CliError(`${name} must be ${ruleText(rule)}, got ${quoteInput(raw)}`);
  }
  return n;
}

/** `name` as a switch, 0 (false) or 1 (true); undefined when unset or empty: the default. */
export function envSwitch(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const text = raw.trim();
  if (text !== '0' && text !== '1') throw new CliError(`${name} must be 0 or 1, got ${quoteInput(raw)}`);
  return text === '1';
}

/** The warm-up switches (README), checked: warmUpFromEnv reads them as "anything but 0 is on". */
export const WARM_UP_SWITCHES = ['SESSION_PAGER_JIT_WARMUP', 'SESSION_PAGER_PAGE_WARMUP', 'SESSION_PAGER_BINARY_WARMUP'] as const;

export function checkWarmUpSwitches(env: NodeJS.ProcessEnv): void {
  for (const name of WARM_UP_SWITCHES) envSwitch(env, name);
}
