// Loaded into a `serve` process by test/startup-young-generation.test.ts (NODE_OPTIONS=--import):
// the main thread's young generation as the process began, and as it is when asked (SIGUSR2),
// one line on stderr. Only the main thread runs it (Node 20 does not pass --import to workers).
import { writeSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? -1;
const initial = young();
process.on('SIGUSR2', () => writeSync(2, `young-generation initial=${initial} now=${young()}\n`));
