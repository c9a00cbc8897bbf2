/**
 * The schemas of §12's bodies and answers: they compile where the service compiles its schemas
 * (ajv in strict mode for bodies, fast-json-stringify for answers), serialise every answer shape,
 * and agree with the readers of http/input/: what the body validator refuses first, the reader
 * words the same way, and the documented item schema accepts what the reader accepts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Ajv } from 'ajv';
import fastJson from 'fast-json-stringify';
import { bodies, data, writeItem } from '../../../src/http/api/schemas.ts';
import { BodyReader, type BodyResult } from '../../../src/http/input/body.ts';
import type { EngineRequest, EngineResponse } from '../../../src/http/engine/port.ts';
import { parseWindow } from '../../../src/http/input/window.ts';
import { parseWriteItem, parseWriteList, WRITE_OPS } from '../../../src/http/input/writes.ts';
import { AppError } from '../../../src/errors/index.ts';
import { parseInstant } from '../../../src/time/instant.ts';

const NOW = parseInstant('2026-11-22T10:51:50.914928Z') as number;
const T1 = '2026-12-01T09:00:00.000000Z';
const T2 = '2026-12-31T17:00:00.250000Z';

/** What the serialiser of `schema` writes for `value`, read back. */
function roundTrip(schema: object, value: unknown): unknown {
  return JSON.parse(fastJson(schema)(value)) as unknown;
}

test('every answer of §12 serialises as itself', () => {
  const samples: Array<[keyof typeof data, unknown]> = [
    ['grantWindowed', { role: 'r', permission: 'p', revision: 3 }],
    ['grantWindowed', { role: 'r', permission: 'p', revision: 3, not_before: T1, expires_at: T2 }],
    ['membershipWindowed', { user: 'u', role: 'r', revision: 4, expires_at: T2 }],
    ['hasPermissionWindowed', { has_permission: false, not_before: T1 }],
    ['isMemberWindowed', { is_member: true }],
    ['namesWindowed', [{ name: 'a' }, { name: 'b', expires_at: T2 }]],
    ['usersWindowed', [{ user: 'alice', not_before: T1, expires_at: T2 }, { user: 'bob' }]],
    ['roleNamesWindowed', [{ role: 'admin', not_before: T1 }]],
    [
      'windows',
      [
        { kind: 'membership', role: 'r', user: 'u', not_before: T1 },
        { kind: 'permission', role: 'r', permission: 'p', expires_at: T2 },
      ],
    ],
    [
      'writesDone',
      {
        revision: 9,
        results: [
          { role: 'r', description: '', revision: 9 },
          { role: 'old', permissions_removed: 2, memberships_removed: 0, revision: 9 },
          { role: 'r', permission: 'p', revision: 9, expires_at: T2 },
          { user: 'u', role: 'r', revision: 9 },
          { user: 'u', role: 'r', revision: 9, not_before: T1, expires_at: T2 },
        ],
      },
    ],
    [
      'dryRun',
      {
        revision: 0,
        valid: false,
        results: [{ status: 201 }, { status: 404, error: "Role 'x' does not exist" }, { status: 424 }],
        gained: [],
        lost: [],
        gained_count: 0,
        lost_count: 0,
        truncated: false,
      },
    ],
    [
      'dryRun',
      {
        revision: 5,
        valid: true,
        results: [{ status: 200 }],
        gained: [{ user: 'u', permission: 'p' }],
        lost: [],
        gained_count: 1,
        lost_count: 0,
        truncated: false,
      },
    ],
  ];
  for (const [name, value] of samples) assert.deepEqual(roundTrip(data[name], value), value, name);
});

test('the bodies compile under the body validator; the item schema too', () => {
  const ajv = new Ajv({ allErrors: false, strict: true });
  for (const [name, schema] of Object.entries(bodies)) assert.doesNotThrow(() => ajv.compile(schema), name);
  const validItem = ajv.compile(writeItem);
  for (const example of bodies.writes.properties.writes.items.examples) {
    assert.ok(validItem(example), JSON.stringify(example));
    assert.doesNotThrow(() => parseWriteItem(example, 0, NOW), JSON.stringify(example));
  }
});

/** A request whose body is `text`, on an engine that hands it over in one chunk. */
function readBody(text: string, schema: keyof typeof bodies): Promise<BodyResult> {
  const req = { getHeader: (h: string) => (h === 'content-type' ? 'application/json' : '') } as unknown as EngineRequest;
  const res = {
    onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void) {
      const bytes = Buffer.from(text);
      handler(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length), true);
    },
    onAborted() {},
  } as unknown as EngineResponse;
  return new BodyReader(1 << 20).read(res, req, schema);
}

/** The reader's refusal of `value`, or undefined when it accepts it. */
function readerSays(read: () => unknown): string | undefined {
  try {
    read();
    return undefined;
  } catch (err) {
    assert.ok(err instanceof AppError);
    return err.message;
  }
}

test('what the body validator refuses, the readers word the same way', async () => {
  const windowBodies = ['{"x":1}', '{"not_before":"2026-12-01T09:00:00Z","X":1}', '{"not_before":1}', '{"expires_at":null}', '{"expires_at":["a"]}'];
  for (const text of windowBodies) {
    const validated = await readBody(text, 'edgeWindow');
    assert.ok(validated.error !== undefined, text);
    assert.equal(
      readerSays(() => parseWindow(JSON.parse(text), NOW)),
      validated.error.message,
      text,
    );
  }
  const writesBodies = ['{}', '{"writes":[{}],"x":1}', '{"writes":{}}', '{"writes":null}', '{"writes":[]}', `{"writes":[${Array(1001).fill('1').join(',')}]}`];
  for (const text of writesBodies) {
    const validated = await readBody(text, 'writes');
    assert.ok(validated.error !== undefined, text);
    assert.equal(
      readerSays(() => parseWriteList(JSON.parse(text))),
      validated.error.message,
      text,
    );
  }
  // What passes the validator is the readers' to refuse, item by item.
  for (const text of ['{"writes":[1,"x",null,{}]}', '{"not_before":"soon"}'])
    assert.equal((await readBody(text, text.includes('writes') ? 'writes' : 'edgeWindow')).error, undefined, text);
});

test('the documented item schema accepts every item the reader accepts', () => {
  const validItem = new Ajv({ allErrors: false, strict: true }).compile(writeItem);
  const name = fc.oneof(fc.constantFrom('r', 'a.b', 'x'.repeat(128), 'x'.repeat(129), '', 'a b', '\u00e9'), fc.string({ maxLength: 8 }));
  const value = fc.oneof(name, fc.constantFrom('2026-12-01T09:00:00Z', 'soon'), fc.jsonValue({ maxDepth: 1 }));
  const keys = fc.constantFrom('op', 'role', 'permission', 'user', 'description', 'not_before', 'expires_at', 'x');
  const TEMPLATES: Record<string, Record<string, unknown>> = {
    'role.create': { role: 'r', description: 'd' },
    'role.delete': { role: 'r' },
    'permission.grant': { role: 'r', permission: 'p', not_before: '2026-12-01T09:00:00Z' },
    'permission.revoke': { role: 'r', permission: 'p' },
    'membership.add': { user: 'u', role: 'r', expires_at: '2027-01-01T00:00:00+01:00' },
    'membership.remove': { user: 'u', role: 'r' },
  };
  // An item of an op, valid, then maybe with a key changed, one removed, one added.
  const item = fc
    .record({
      op: fc.constantFrom(...WRITE_OPS),
      changed: fc.option(fc.tuple(keys, value), { nil: undefined }),
      removed: fc.option(keys, { nil: undefined }),
      added: fc.option(fc.tuple(keys, value), { nil: undefined }),
    })
    .map(({ op, changed, removed, added }) => {
      const w: Record<string, unknown> = { op, ...TEMPLATES[op] };
      if (changed !== undefined && Object.hasOwn(w, changed[0])) w[changed[0]] = changed[1];
      if (removed !== undefined) delete w[removed];
      if (added !== undefined) w[added[0]] = added[1];
      return w;
    });
  let accepted = 0;
  fc.assert(
    fc.property(item, (w) => {
      const refusal = readerSays(() => parseWriteItem(w, 0, NOW));
      const valid = validItem(w);
      if (refusal === undefined) {
        accepted++;
        assert.ok(valid, JSON.stringify(w));
      } else if (valid) {
        // The schema cannot know the time: only a window's checks may refuse what it accepts.
        assert.match(refusal, /^writes\[0\]\.(not_before|expires_at) /, JSON.stringify(w));
      }
    }),
    { numRuns: 20_000 },
  );
  assert.ok(accepted > 50, `only ${accepted} items accepted`);
});
