/**
 * `session-pager loadtest`: scenarios of real client behaviour against a
 * running server (this one or any that speaks the SPEC), from this process.
 */
import { CliError } from './common.js';
import { defineCommand } from './command.js';

export const command = defineCommand({
  name: 'loadtest',
  summary: 'drive a running server with realistic client behaviour and report what it did',
  description:
    'Scenarios: attach (follow: tail-page snapshot, watch, detach), scroll (older pages until the start), random (random pages over every session, autocannon), writer (one writer appending while the other connections follow), mix (all of them). Runs for --duration seconds, prints a progress line each second on stderr and a report on stdout (--json for JSON). The writer scenarios create a session named <prefix>-<time> and leave it. Any server that speaks the SPEC will do: a session whose catalog line gives no lastSeq or nextSeq has its end read from its tail page, and the server\'s RSS is read from process_resident_memory_bytes on its /metrics (- when it has none).',
  options: {
    url: { type: 'string', arg: 'URL', describe: 'the server, e.g. http://127.0.0.1:8080 (required)', defaultText: 'none' },
    token: { type: 'string', arg: 'T', env: 'SESSION_PAGER_TOKEN', describe: 'bearer token', defaultText: 'none' },
    scenario: { type: 'string', choices: ['attach', 'scroll', 'random', 'writer', 'mix'], default: 'mix', describe: 'what the clients do' },
    duration: { type: 'int', min: 1, describe: 'seconds of load (at most 600)', default: 10 },
    connections: { type: 'int', min: 1, describe: 'concurrent clients (at most 1024)', default: 16 },
    'max-messages': { type: 'int', min: 1, describe: 'messages per page', default: 50 },
    hold: { type: 'int', min: 0, describe: 'attach: mean ms a follower watches before detaching (each attach draws its own within +-50%)', default: 1000 },
    batch: { type: 'int', min: 1, describe: 'writer: events per append', default: 20 },
    interval: { type: 'int', min: 0, describe: 'writer: ms between appends', default: 50 },
    'session-prefix': { type: 'string', describe: 'writer: prefix of the session it creates', default: 'loadtest' },
    seed: { type: 'int', min: 0, describe: 'seed of the random choices', default: 1 },
    json: { type: 'boolean', describe: 'print the report as JSON' },
  },
  examples: ['session-pager loadtest --url http://127.0.0.1:8080 --token "$T" --scenario random --duration 10 --connections 64'],
  async run({ values }) {
    if (values.url === undefined) throw new CliError('--url is required (the server to drive)', 2);
    let url: URL;
    try {
      url = new URL(values.url);
    } catch {
      throw new CliError(`--url is not a URL: ${values.url}`, 2);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError('--url must be http:// or https://', 2);
    if (values.duration > 600) throw new CliError('--duration must be at most 600', 2);
    if (values.connections > 1024) throw new CliError('--connections must be at most 1024', 2);
    const { runLoad, formatReport } = await import('../../loadtest/run.js');
    const tty = Boolean(process.stderr.isTTY);
    const report = await runLoad({
      url: url.href.replace(/\/+$/, ''),
      ...(values.token === undefined ? {} : { token: values.token }),
      scenario: values.scenario as 'mix',
      durationS: values.duration,
      connections: values.connections,
      maxMessages: values['max-messages'],
      holdMs: values.hold,
      batch: values.batch,
      appendIntervalMs: values.interval,
      sessionPrefix: values['session-prefix'],
      seed: values.seed,
      progress: (line) => process.stderr.write(tty ? `\r\x1b[K${line}` : `${line}\n`),
    });
    if (tty) process.stderr.write('\n');
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : formatReport(report));
    return 0;
  },
});
