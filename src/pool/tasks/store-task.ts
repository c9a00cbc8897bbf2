// Runs in a pool thread: one store connection per thread, opened on the first task. Each
// adapter has its own task file (sqlite-task, postgres-task), so a thread loads one driver.
import { workerData } from 'piscina';
import { toWire } from '../../errors/index.ts';
import type { StoreSettings } from '../../store/index.ts';
import type { StoreAdapter } from '../../store/port.ts';
import { storeFailure } from '../../store/transient.ts';
import type { Task, TaskReply, TaskValue } from '../protocol.ts';

async function run(s: StoreAdapter, task: Task): Promise<TaskValue[Task['kind']]> {
  switch (task.kind) {
    case 'load':
      return s.load(task.tenant);
    case 'revision':
      return s.revision(task.tenant);
    case 'revisions':
      return s.revisions(task.tenants);
    case 'writeMany':
      return s.writeMany(task.writes);
    case 'changes':
      return s.changes(task.tenant, task.since, task.limit);
    case 'cursorSecret':
      return (await s.cursorSecret()).toString('hex');
    case 'ping':
      await s.ping();
      return true;
  }
}

/** The task function of a pool thread whose store `open` opens. */
export function storeTask(open: (settings: StoreSettings) => StoreAdapter): (task: Task) => Promise<TaskReply<Task['kind']>> {
  let store: StoreAdapter | undefined;
  return async (task) => {
    try {
      store ??= open(workerData as StoreSettings);
      return { ok: true, value: await run(store, task) };
    } catch (err) {
      return { ok: false, error: toWire(storeFailure(err, task.kind)) };
    }
  };
}
