import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from 'session-pager';

const dataDir = mkdtempSync(join(tmpdir(), 'session-pager-example-'));
const store = await openStore({ dataDir });
try {
  // A long-running process warms the page path up once, before it serves (~2 s).
  await store.warmUp();

  await store.create('demo', { title: 'A short conversation' });
  const text = (t) => ({ content: [{ type: 'text', text: t }] });
  const { fromSeq, toSeq, nextSeq } = await store.append('demo', [
    { type: 'user/message', seq: 0, time: 1_700_000_000_000, data: text('What is 2 + 2?') },
    { type: 'assistant/message', seq: 1, time: 1_700_000_000_500, data: text('4.') },
  ]);
  console.log('appended', { fromSeq, toSeq, nextSeq }); // durable (fsync) when it resolves

  // The newest messages; older pages with { beforeSeq: page.fromSeq } while page.hasMore.
  const page = await store.page('demo', { maxMessages: 50 });
  console.log('page', page.fromSeq, page.toSeq, page.hasMore, page.records.length);

  // Every event from seq 0, then each new one as any process appends it, until break.
  setTimeout(() => store.append('demo', [{ type: 'user/message', seq: 2, time: 1_700_000_001_000, data: text('Thanks!') }]), 10);
  for await (const event of store.follow('demo', { fromSeq: 0 })) {
    console.log('event', event.seq, event.type);
    if (event.seq === 2) break;
  }
} finally {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
