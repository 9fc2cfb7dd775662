// The CPU the rest of the machine uses while a bench lane is measured (issue 15's HTTP lanes). This
// machine is shared, and the kernel shares its CPUs between sessions (autogroups) whatever their
// nice value: one busy process in another session, even at nice 19, halved the SQLite peer's
// pages/s at 16 connections (its "slow mode", ~290-370 against ~560-610) and cut this server's by
// more (docs/benchmarks.md, "http16 (eighteenth session)"). bench/http-cpu.mjs reports it for each
// lane (othersCores) and bench/peer-ab.mjs runs a disturbed lane again (untilQuiet).
import { readFileSync } from 'node:fs';

/** CPU ms the machine has been busy, from /proc/stat's first line (all but idle and iowait; USER_HZ = 100). */
export function busyMsOf(stat) {
  const [user, nice, system, , , irq, softirq, steal] = stat.split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1000) / 100;
}

/** busyMsOf this machine now. */
export function machineBusyMs() {
  return busyMsOf(readFileSync('/proc/stat', 'utf8'));
}

/** Cores the rest of the machine used over `wallMs`: its busy ms less what the lane's own processes used (never below 0). */
export function othersCores(busyMs, ownMs, wallMs) {
  return Math.max(0, busyMs - ownMs) / wallMs;
}

/**
 * `measure()` again while its result's othersCores is over `maxOthers`, at most `retries` more
 * times; `onRetry(result, retry)` hears each disturbed try. Returns the last result.
 */
export function untilQuiet(measure, maxOthers, retries, onRetry = () => {}) {
  let x = measure();
  for (let retry = 1; retry <= retries && x.othersCores > maxOthers; retry++) {
    onRetry(x, retry);
    x = measure();
  }
  return x;
}
