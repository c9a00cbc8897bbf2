// The pool thread of bench/hops.ts: answers its task at once, so only the hand-off is measured.
export function echo(task: unknown): unknown {
  return task;
}
