/**
 * src/worker/write-pipeline.ts: the coalescer's own cost per item, 64 items pushed while one batch
 * is in flight (they become the next batch), with stages that do nothing: the overhead writes pay
 * on top of the commit and the fan-out.
 */
import { CoalescingStage } from '../../../src/worker/write-pipeline.ts';
import type { MicroTask } from '../task.ts';

let done = 0;
const stage = new CoalescingStage<number>(
  1,
  (q) => q.splice(0, q.length),
  (batch) => {
    done += batch.length;
    return Promise.resolve();
  },
);

export const tasks: MicroTask[] = [
  {
    name: 'push 64 items (one batch in flight)',
    check: () => {
      const before = done;
      for (let k = 0; k < 64; k++) stage.push(k);
      if (done - before < 1) throw new Error('the first item did not go at once');
    },
    fn: async () => {
      for (let k = 0; k < 64; k++) stage.push(k);
      await Promise.resolve();
    },
  },
];
