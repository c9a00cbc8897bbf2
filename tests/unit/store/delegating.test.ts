// Delegation written out: each store call of a wrapper or the pool reaches its one `call` by its
// own name with its own arguments; a call made by name reaches the method of that name; an
// adapter's call reaches the method of that name of its role. Every method of the ports is tried.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callOf, isStoreMethod, STORE_METHOD_NAMES, type StoreAnswer, type StoreArgs } from '../../../src/store/calls.ts';
import { ComposedStore } from '../../../src/store/composed.ts';
import type { StoreCalls, StoreMethod, StoreRoles } from '../../../src/store/port.ts';
import { DelegatingStore } from '../../../src/store/wrappers/delegating.ts';

type Seen = Array<[string, readonly unknown[]]>;

/** The arguments each test passes to `method`: its name, then values that tell the slots apart. */
const argsOf = (method: string): unknown[] => [method, 1, [2], { three: 3 }];

/** Calls `method` of `store` with {@link argsOf}, as any caller would (through the method's own name). */
function invoke(store: object, method: StoreMethod): Promise<unknown> {
  const fn = (store as Record<StoreMethod, (...a: unknown[]) => Promise<unknown>>)[method];
  return fn.apply(store, argsOf(method));
}

/** An object whose every method records its name (prefixed by `label`) and arguments, and answers the name. */
function recorder(label: string, seen: Seen): StoreCalls {
  return new Proxy({} as StoreCalls, {
    get:
      (_, name) =>
      (...args: unknown[]) => {
        seen.push([`${label}${String(name)}`, args]);
        return Promise.resolve(name);
      },
  });
}

class Recording extends DelegatingStore {
  readonly seen: Seen = [];
  protected call<K extends StoreMethod>(method: K, args: StoreArgs<K>): Promise<StoreAnswer<K>> {
    this.seen.push([method, args]);
    return Promise.resolve(method as unknown as StoreAnswer<K>);
  }
  override ping(): Promise<void> {
    this.seen.push(['own ping', []]);
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

test('each call of a delegating store reaches call with its own name and arguments; one it overrides does not', async () => {
  const r = new Recording();
  for (const method of STORE_METHOD_NAMES) {
    const value = await invoke(r, method);
    if (method !== 'ping') assert.equal(value, method, `${method} answers what call answered`);
  }
  const expected = STORE_METHOD_NAMES.map((m): [string, readonly unknown[]] => (m === 'ping' ? ['own ping', []] : [m, argsOf(m).slice(0, r[m].length)]));
  assert.deepEqual(r.seen, expected);
});

test('a call made by name reaches the method of that name, with every argument the port declares', async () => {
  const seen: Seen = [];
  const store = recorder('', seen);
  const declared = new Recording();
  for (const method of STORE_METHOD_NAMES) {
    const args = argsOf(method).slice(0, declared[method].length) as StoreArgs<typeof method>;
    assert.equal(await callOf(store, method, args), method);
  }
  assert.deepEqual(
    seen,
    STORE_METHOD_NAMES.map((m) => [m, argsOf(m).slice(0, declared[m].length)]),
  );
});

test("an adapter's call reaches the method of the same name of the role the port files it under", async () => {
  const seen: Seen = [];
  const roles: StoreRoles = {
    tenant: recorder('tenant.', seen),
    audit: recorder('audit.', seen),
    workflow: recorder('workflow.', seen),
    tokens: recorder('tokens.', seen),
    meta: recorder('meta.', seen),
  };
  const adapter = new (class extends ComposedStore {
    close(): Promise<void> {
      return Promise.resolve();
    }
  })(roles);
  for (const method of STORE_METHOD_NAMES) await invoke(adapter, method);
  const roleOf = (m: string): string =>
    ['ping', 'cursorSecret', 'claimEncryption'].includes(m)
      ? 'meta'
      : ['appendAudit', 'audit', 'pruneAudit'].includes(m)
        ? 'audit'
        : ['load', 'loadGraph', 'revision', 'revisions', 'tenantsSince', 'changes', 'writeMany', 'commitBoundaries', 'exportPage', 'importData'].includes(m)
          ? 'tenant'
          : ['recordToken', 'revokeToken', 'revokedTokens', 'pruneTokens'].includes(m)
            ? 'tokens'
            : 'workflow';
  assert.deepEqual(
    seen,
    STORE_METHOD_NAMES.map((m) => [`${roleOf(m)}.${m}`, argsOf(m).slice(0, adapter[m].length)]),
  );
});

test('the call names are the ports’ methods, each once; nothing else is one', () => {
  assert.equal(new Set(STORE_METHOD_NAMES).size, STORE_METHOD_NAMES.length);
  assert.equal(STORE_METHOD_NAMES.length, 30);
  for (const m of ['load', 'writeMany', 'audit', 'claimDeliveries', 'cursorSecret'] as const) assert.ok(STORE_METHOD_NAMES.includes(m), m);
  for (const name of ['constructor', 'toString', 'close', '__proto__', 'hasOwnProperty', 42]) assert.equal(isStoreMethod(name), false, String(name));
});
