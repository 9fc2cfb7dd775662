/** Write all of `buf` at `position` of `fd`, synchronously (writeSync may write less than asked). */
import { writeSync } from 'node:fs';

export function writeAllAt(fd: number, buf: Uint8Array, position: number): void {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, position + done);
}
