/**
 * The ticker of `npm run bench:workflows`: every `everyMs` it grants, then revokes, TICK_PERMISSION
 * on TICK_ROLE (a role without members) over HTTP. The tenant's revision moves and nobody's answer
 * changes, so every run of the schedule must read all the workflow's holders again while listing
 * no change: the run a busy tenant makes every interval. (At an unchanged revision the store
 * skips that read, and a run costs a few row look-ups.)
 */
import type { RbacClient } from '../src/client/index.ts';
import { sleep } from './procs.ts';
import { TICK_PERMISSION, TICK_ROLE, type WorkflowModel } from './workflow-model.ts';

export interface Ticker {
  /** Stops after the write in flight; how many writes were made. */
  stop(): Promise<number>;
}

/** One flip; the revision it committed at, or throws on anything but the contract's answer. */
async function flip(client: RbacClient, model: WorkflowModel): Promise<number> {
  const grant = !model.tickGranted;
  const res = grant ? await client.grant(TICK_ROLE, TICK_PERMISSION) : await client.revoke(TICK_ROLE, TICK_PERMISSION);
  if (res.status !== (grant ? 201 : 200) || res.data === undefined) throw new Error(`tick ${grant ? 'grant' : 'revoke'}: ${res.status} ${res.error ?? ''}`);
  model.tickGranted = grant;
  model.noteWrite(res.data.revision);
  return res.data.revision;
}

/** Starts ticking (none when `everyMs` is 0); a failed write goes to `failures` and ends the ticking. */
export function startTicker(client: RbacClient, model: WorkflowModel, everyMs: number, failures: string[]): Ticker {
  let stopped = everyMs <= 0;
  let writes = 0;
  const loop = (async () => {
    while (!stopped) {
      const t0 = performance.now();
      try {
        await flip(client, model);
        writes++;
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
        return;
      }
      const wait = everyMs - (performance.now() - t0);
      if (wait > 0 && !stopped) await sleep(wait);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return writes;
    },
  };
}
