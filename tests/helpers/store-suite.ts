/**
 * The store conformance suite's frame (tests/integration/store/): each topic of cases runs on each
 * adapter, in a describe block of its own with a database of its own, so that no topic sees
 * another's clients (schedules and audit rows span every client of a database).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, type StoreSettings } from '../../src/store/index.ts';
import type { Store } from '../../src/store/port.ts';
import type { StoreBackend } from './store-backends.ts';

export interface StoreTopic {
  readonly backend: StoreBackend;
  /** The topic's store on the topic's database, from its first case on. */
  readonly store: Store;
  /** Opens another store, on `settings` (default: the topic's database), closed after the topic. */
  open(settings?: StoreSettings): Store;
  /** A store on a new database of its own, for the calls that span every client. */
  alone(): Promise<Store>;
  /** A case, skipped (saying why) where the adapter cannot run. */
  it(name: string, fn: () => Promise<void>): void;
}

/** One topic: a title and the function that registers its cases. */
export interface Topic {
  readonly title: string;
  readonly cases: (topic: StoreTopic) => void;
}

/** Registers `topic` on `backend`; `skip` is the backend's reason not to run, or false. */
export function storeTopic(backend: StoreBackend, skip: string | false, { title, cases }: Topic): void {
  describe(title, () => {
    let settings: StoreSettings | undefined;
    let store: Store | undefined;
    const opened: Store[] = [];
    const open = (s: StoreSettings | undefined = settings): Store => {
      assert.ok(s !== undefined, 'the topic has no database yet');
      const st = openStore(s);
      opened.push(st);
      return st;
    };
    before(async () => {
      if (skip !== false) return;
      settings = await backend.fresh();
      store = open(settings);
    });
    after(async () => {
      await Promise.all(opened.map((s) => s.close()));
    });
    cases({
      backend,
      get store() {
        assert.ok(store !== undefined, 'the topic has no store yet');
        return store;
      },
      open,
      alone: async () => open(await backend.fresh()),
      it: (name, fn) => void test(name, { skip }, fn),
    });
  });
}
