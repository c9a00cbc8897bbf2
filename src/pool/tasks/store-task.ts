// Runs in a pool thread: one store connection per thread, opened on the first task. Each
// adapter has its own task file (sqlite-task, postgres-task), so a thread loads one driver.
import { setPriority } from 'node:os';
import { workerData } from 'piscina';
import { FieldCipher } from '../../crypto/field-cipher.ts';
import { appError, toWire } from '../../errors/index.ts';
import { EncryptedStore } from '../../store/encrypted.ts';
import { encryptedMark, markMismatch, PLAINTEXT_MARK } from '../../store/encryption-mark.ts';
import type { StoreSettings } from '../../store/index.ts';
import type { StoreAdapter } from '../../store/port.ts';
import { storeFailure } from '../../store/transient.ts';
import type { Task, TaskReply, TaskValue, WorkflowTask } from '../protocol.ts';

async function run(s: StoreAdapter, task: Task): Promise<TaskValue[Task['kind']]> {
  switch (task.kind) {
    case 'load':
      return s.load(task.tenant);
    case 'revision':
      return s.revision(task.tenant);
    case 'revisions':
      return s.revisions(task.tenants);
    case 'tenantsSince':
      return s.tenantsSince(task.cursor);
    case 'writeMany':
      return s.writeMany(task.writes);
    case 'changes':
      return s.changes(task.tenant, task.since, task.limit);
    case 'appendAudit':
      await s.appendAudit(task.rows);
      return true;
    case 'audit':
      return s.audit(task.tenant, task.before, task.limit);
    case 'pruneAudit':
      return s.pruneAudit(task.before, task.limit);
    case 'cursorSecret':
      return (await s.cursorSecret()).toString('hex');
    case 'ping':
      await s.ping();
      return true;
    default:
      return runWorkflow(s, task);
  }
}

/** The workflow schedules' and runs' tasks. */
async function runWorkflow(s: StoreAdapter, task: WorkflowTask): Promise<TaskValue[WorkflowTask['kind']]> {
  switch (task.kind) {
    case 'putSchedule':
      await s.putSchedule(task.schedule, task.nowMs, task.audit);
      return true;
    case 'deleteSchedule':
      return s.deleteSchedule(task.tenant, task.workflow, task.audit);
    case 'schedules':
      return s.schedules(task.tenant);
    case 'runs':
      return s.runs(task.tenant, task.workflow, task.before, task.limit);
    case 'takeLease':
      return s.takeLease(task.owner, task.nowMs, task.ttlMs);
    case 'releaseLease':
      await s.releaseLease(task.owner);
      return true;
    case 'dueSchedules':
      return s.dueSchedules(task.nowMs, task.limit);
    case 'runSchedule':
      return s.runSchedule(task.due, task.nowMs, task.webhookId);
    case 'claimDeliveries':
      return s.claimDeliveries(task.nowMs, task.claimMs, task.limit);
    case 'recordDelivery':
      await s.recordDelivery(task.update);
      return true;
  }
}

/**
 * The adapter `open` opens, behind field encryption when the settings carry a key (derived here,
 * in the thread: PBKDF2 never runs on an event loop that serves requests). Before anything else
 * the database's encryption mark is claimed and compared: a mismatch is a failure of every task,
 * so the worker's first call (its start-up) fails with that message.
 */
async function openChecked(open: (settings: StoreSettings) => StoreAdapter, settings: StoreSettings): Promise<StoreAdapter> {
  const adapter = open(settings);
  try {
    const cipher = settings.encryptionKey === undefined ? undefined : new FieldCipher(settings.encryptionKey);
    const wanted = cipher === undefined ? PLAINTEXT_MARK : encryptedMark(cipher.fingerprint);
    const why = markMismatch(await adapter.claimEncryption(wanted), wanted);
    if (why !== undefined) throw appError('ERR_STORE_ENCRYPTION_MISMATCH', { why });
    return cipher === undefined ? adapter : new EncryptedStore(adapter, cipher);
  } catch (err) {
    await adapter.close();
    throw err;
  }
}

/** The nice value of a background store thread: it yields a contended CPU to the HTTP workers. */
const BACKGROUND_NICE = 10;

/** The task function of a pool thread whose store `open` opens. */
export function storeTask(open: (settings: StoreSettings) => StoreAdapter): (task: Task) => Promise<TaskReply<Task['kind']>> {
  let opening: Promise<StoreAdapter> | undefined;
  // On Linux a nice value is a thread's own (pid 0 is the calling thread): only this thread yields.
  if ((workerData as StoreSettings).background === true) {
    try {
      setPriority(0, BACKGROUND_NICE);
    } catch {
      // Not permitted here (some sandboxes): the thread runs at normal priority.
    }
  }
  return async (task) => {
    try {
      // A failed opening (the database down at start-up) is tried again by the next task.
      opening ??= openChecked(open, workerData as StoreSettings).catch((err: unknown) => {
        opening = undefined;
        throw err;
      });
      return { ok: true, value: await run(await opening, task) };
    } catch (err) {
      return { ok: false, error: toWire(storeFailure(err, task.kind)) };
    }
  };
}
