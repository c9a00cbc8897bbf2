/** What each micro-benchmark file exports (`tasks`), in a file of its own so that bench/micro/run.ts imports the benches and none of them imports it back. */
export interface MicroTask {
  name: string;
  /** Run once before timing; throws when the code measured answers wrongly. */
  check?: () => void;
  fn: () => unknown;
}
