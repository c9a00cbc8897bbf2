/**
 * The body of /api/writes and /api/dry-run (docs/api.md §12.2, §12.3): the whole body refused
 * alike for both, each item read to its change or to a 400 naming `writes[i]` and its field.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { AppError } from '../../../src/errors/index.ts';
import { NAME_RULE } from '../../../src/authz/names.ts';
import { MAX_WRITES, parseWriteItem, parseWriteItems, parseWriteList, parseWrites, WRITE_OPS } from '../../../src/http/input/writes.ts';
import { parseInstant } from '../../../src/time/instant.ts';

const NOW = parseInstant('2026-11-22T10:51:50.914928Z') as number;
const at = (text: string): number => parseInstant(text) as number;

/** The 400 ERR_VALIDATION_BODY that `run` throws: its text must match `detail`. */
function refused(run: () => unknown, detail: RegExp | string, what = String(detail)): void {
  assert.throws(
    run,
    (err: unknown) => {
      assert.ok(err instanceof AppError, what);
      assert.equal(err.status, 400, what);
      assert.equal(err.code, 'ERR_VALIDATION_BODY', what);
      if (typeof detail === 'string') assert.equal(err.message, detail, what);
      else assert.match(err.message, detail, what);
      return true;
    },
    what,
  );
}

const item = (w: Record<string, unknown>, index = 0): unknown => parseWriteItem(w, index, NOW);

test('the whole body: an object whose only key is writes, an array of 1 to 1000 items', () => {
  refused(() => parseWriteList(undefined), "body must have the key 'writes'");
  refused(() => parseWriteList({}), "body must have the key 'writes'");
  for (const body of [null, [], [{ writes: [] }], 'writes', 1, true]) refused(() => parseWriteList(body), 'body must be a JSON object', JSON.stringify(body));
  refused(() => parseWriteList({ writes: [{}], checks: [] }), "body has an unknown key 'checks'");
  refused(() => parseWriteList(JSON.parse('{"writes":[{}],"__proto__":{}}')), "body has an unknown key '__proto__'");
  for (const writes of [null, {}, 'role.create', 1, { 0: {} }]) refused(() => parseWriteList({ writes }), 'writes must be an array', JSON.stringify(writes));
  refused(() => parseWriteList({ writes: [] }), 'writes must have at least 1 items');
  refused(() => parseWriteList({ writes: Array.from({ length: MAX_WRITES + 1 }, () => ({})) }), 'writes must have at most 1000 items');
  assert.equal(parseWriteList({ writes: Array.from({ length: MAX_WRITES }, () => 'junk') }).length, MAX_WRITES);
  // The whole-body layer refuses dry-runs alike: no item is looked at before it passes.
  refused(() => parseWriteItems({ writes: [] }, NOW), 'writes must have at least 1 items');
  refused(() => parseWrites({ writes: 'x' }, NOW), 'writes must be an array');
});

test('each of the six ops reads to its change', () => {
  assert.deepEqual(item({ op: 'role.create', role: 'editor' }), { op: 'role.create', role: 'editor', description: '' });
  assert.deepEqual(item({ op: 'role.create', role: 'editor', description: 'Edits' }), { op: 'role.create', role: 'editor', description: 'Edits' });
  assert.deepEqual(item({ op: 'role.delete', role: 'editor' }), { op: 'role.delete', role: 'editor' });
  assert.deepEqual(item({ op: 'permission.grant', role: 'editor', permission: 'article.edit' }), {
    op: 'permission.grant',
    role: 'editor',
    permission: 'article.edit',
  });
  assert.deepEqual(item({ op: 'permission.grant', role: 'r', permission: 'p', not_before: '2026-12-01T09:00:00Z', expires_at: '2026-12-02T09:00:00Z' }), {
    op: 'permission.grant',
    role: 'r',
    permission: 'p',
    notBefore: at('2026-12-01T09:00:00Z'),
    expiresAt: at('2026-12-02T09:00:00Z'),
  });
  assert.deepEqual(item({ op: 'permission.revoke', role: 'r', permission: 'p' }), { op: 'permission.revoke', role: 'r', permission: 'p' });
  assert.deepEqual(item({ op: 'membership.add', user: 'alice', role: 'r', expires_at: '2026-12-31T17:00:00+01:00' }), {
    op: 'membership.add',
    user: 'alice',
    role: 'r',
    expiresAt: at('2026-12-31T16:00:00Z'),
  });
  assert.deepEqual(item({ op: 'membership.add', user: 'alice', role: 'r' }), { op: 'membership.add', user: 'alice', role: 'r' });
  assert.deepEqual(item({ role: 'r', user: 'alice', op: 'membership.remove' }), { op: 'membership.remove', user: 'alice', role: 'r' });
  assert.deepEqual(WRITE_OPS, ['role.create', 'role.delete', 'permission.grant', 'permission.revoke', 'membership.add', 'membership.remove']);
});

test('an item that is not an object, or whose op is missing or not one of the six', () => {
  for (const w of [null, [], 'role.create', 3, true]) refused(() => parseWriteItem(w, 4, NOW), 'writes[4] must be an object', JSON.stringify(w));
  refused(() => item({ role: 'r' }, 2), "writes[2] must have the key 'op'");
  refused(() => item({ op: 1, role: 'r' }, 2), 'writes[2].op must be a string');
  for (const op of ['role.update', 'permission.window', 'membership.expire', 'client.import', 'ROLE.CREATE', '', 'toString', '__proto__', 'constructor']) {
    refused(() => item({ op, role: 'r' }, 9), `writes[9].op must be one of ${WRITE_OPS.join(', ')}`, op);
  }
});

test('unknown keys of an op, and missing required keys', () => {
  refused(() => item({ op: 'role.delete', role: 'r', description: 'x' }), "writes[0] has an unknown key 'description'");
  refused(() => item({ op: 'permission.revoke', role: 'r', permission: 'p', expires_at: '2027-01-01T00:00:00Z' }), "writes[0] has an unknown key 'expires_at'");
  refused(() => item({ op: 'membership.remove', user: 'u', role: 'r', not_before: '2027-01-01T00:00:00Z' }), "writes[0] has an unknown key 'not_before'");
  refused(() => item({ op: 'role.create', role: 'r', permission: 'p' }), "writes[0] has an unknown key 'permission'");
  refused(() => item({ op: 'membership.add', user: 'u', role: 'r', permission: 'p' }), "writes[0] has an unknown key 'permission'");
  refused(() => parseWriteItem(JSON.parse('{"op":"role.delete","role":"r","__proto__":{"x":1}}'), 0, NOW), "writes[0] has an unknown key '__proto__'");
  refused(() => item({ op: 'role.create' }, 1), "writes[1] must have the key 'role'");
  refused(() => item({ op: 'permission.grant', role: 'r' }, 1), "writes[1] must have the key 'permission'");
  refused(() => item({ op: 'membership.add', role: 'r' }, 1), "writes[1] must have the key 'user'");
  refused(() => item({ op: 'membership.remove', user: 'u' }, 1), "writes[1] must have the key 'role'");
});

test('names follow the name rule; the description is a string of at most 1024 code points', () => {
  for (const [field, w] of [
    ['role', { op: 'role.create' }],
    ['permission', { op: 'permission.revoke', role: 'r' }],
    ['user', { op: 'membership.add', role: 'r' }],
  ] as const) {
    for (const value of ['', 'a b', 'a/b', 'j\u00fcrgen', 'a\u0000', 'x'.repeat(129), '%41']) {
      refused(() => item({ ...w, [field]: value }, 3), `writes[3].${field} must be ${NAME_RULE}`, `${field}: ${JSON.stringify(value)}`);
    }
    for (const value of [null, 1, {}, ['a']]) refused(() => item({ ...w, [field]: value }, 3), `writes[3].${field} must be a string`, JSON.stringify(value));
    assert.doesNotThrow(() => item({ ...w, [field]: 'A-Za-z0-9_.:@+|'.repeat(8) + 'xxxxxxxx' }));
  }
  const astral = '\u{1F600}';
  assert.deepEqual(item({ op: 'role.create', role: 'r', description: astral.repeat(1024) }), {
    op: 'role.create',
    role: 'r',
    description: astral.repeat(1024),
  });
  refused(() => item({ op: 'role.create', role: 'r', description: astral.repeat(1025) }, 5), 'writes[5].description must be at most 1024 characters');
  refused(() => item({ op: 'role.create', role: 'r', description: 'e'.repeat(1025) }, 5), 'writes[5].description must be at most 1024 characters');
  refused(() => item({ op: 'role.create', role: 'r', description: null }, 5), 'writes[5].description must be a string');
});

test('windows of grants and memberships are checked against now, naming the item field', () => {
  refused(
    () => item({ op: 'permission.grant', role: 'r', permission: 'p', expires_at: '2026-11-22T10:51:50.914928Z' }, 6),
    /^writes\[6\]\.expires_at must be in the future/,
  );
  refused(() => item({ op: 'membership.add', user: 'u', role: 'r', not_before: 'soon' }, 2), /^writes\[2\]\.not_before must be an RFC 3339 date-time/);
  refused(
    () => item({ op: 'membership.add', user: 'u', role: 'r', not_before: '2040-01-01T00:00:00Z' }, 2),
    /^writes\[2\]\.not_before must be at most 10 years ahead/,
  );
  refused(
    () => item({ op: 'permission.grant', role: 'r', permission: 'p', not_before: '2027-01-01T00:00:00Z', expires_at: '2027-01-01T00:00:00Z' }, 0),
    'writes[0].expires_at must be after not_before',
  );
});

test('dry-run reads each item on its own; /api/writes refuses at the first bad item', () => {
  const body = {
    writes: [
      { op: 'role.create', role: 'editor' },
      { op: 'permission.grant', role: 'editor', permission: 'a b' },
      { op: 'membership.add', user: 'alice', role: 'editor' },
      'junk',
    ],
  };
  const items = parseWriteItems(body, NOW);
  assert.equal(items.length, 4);
  assert.deepEqual(items[0]?.change, { op: 'role.create', role: 'editor', description: '' });
  assert.equal(items[1]?.error?.message, `writes[1].permission must be ${NAME_RULE}`);
  assert.deepEqual(items[2]?.change, { op: 'membership.add', user: 'alice', role: 'editor' });
  assert.equal(items[3]?.error?.message, 'writes[3] must be an object');
  refused(() => parseWrites(body, NOW), `writes[1].permission must be ${NAME_RULE}`);
  assert.deepEqual(parseWrites({ writes: [body.writes[0], body.writes[2]] }, NOW), [items[0]?.change, items[2]?.change]);
});

test('random items and bodies are changes or 400s, never anything else', () => {
  const nameish = fc.oneof(fc.constantFrom('r', 'alice', 'a.b', ''), fc.string({ maxLength: 130 }));
  const instantish = fc.oneof(fc.constantFrom('2026-12-01T09:00:00Z', '2027-06-01T00:00:00.5+02:00', '2001-01-01T00:00:00Z'), fc.string({ maxLength: 30 }));
  const value = fc.oneof(nameish, instantish, fc.jsonValue({ maxDepth: 2 }));
  const keys = fc.constantFrom('op', 'role', 'permission', 'user', 'description', 'not_before', 'expires_at', '__proto__', 'x');
  const goodName = fc.array(fc.constantFrom(...'abcXYZ019_.:@+|-'), { minLength: 1, maxLength: 20 }).map((cs) => cs.join(''));
  const KEYS = { 'role.create': ['role'], 'role.delete': ['role'], 'permission.grant': ['role', 'permission'], 'permission.revoke': ['role', 'permission'] };
  const likely = fc.constantFrom(...WRITE_OPS).chain((op) => {
    const names = (KEYS as Record<string, string[]>)[op] ?? ['user', 'role'];
    return fc
      .record({ a: fc.oneof(goodName, nameish), b: goodName, nb: fc.option(instantish, { nil: undefined }), ea: fc.option(instantish, { nil: undefined }) })
      .map(({ a, b, nb, ea }) => ({
        op,
        [names[0] as string]: a,
        ...(names[1] === undefined ? {} : { [names[1]]: b }),
        ...(op.endsWith('grant') || op.endsWith('add')
          ? { ...(nb === undefined ? {} : { not_before: nb }), ...(ea === undefined ? {} : { expires_at: ea }) }
          : {}),
      }));
  });
  const writeItem = fc.oneof(
    likely,
    likely,
    fc.record(
      {
        op: fc.oneof(fc.constantFrom(...WRITE_OPS), fc.jsonValue({ maxDepth: 1 })),
        role: nameish,
        permission: nameish,
        user: nameish,
        description: fc.oneof(fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 1 })),
        not_before: instantish,
        expires_at: instantish,
      },
      { requiredKeys: [] },
    ),
    fc.dictionary(keys, value, { maxKeys: 6 }),
    fc.jsonValue({ maxDepth: 2 }),
  );
  const body = fc.oneof(fc.record({ writes: fc.array(writeItem, { maxLength: 8 }) }), fc.jsonValue({ maxDepth: 3 }));
  let changes = 0;
  fc.assert(
    fc.property(body, (b) => {
      let items;
      try {
        items = parseWriteItems(b, NOW);
      } catch (err) {
        assert.ok(err instanceof AppError && err.code === 'ERR_VALIDATION_BODY', String(err));
        assert.match(err.message, /^(body|writes) /);
        return;
      }
      items.forEach((it, i) => {
        if (it.error === undefined) return void changes++;
        assert.equal(it.error.status, 400);
        assert.ok(it.error.message.startsWith(`writes[${i}]`), it.error.message);
      });
      const firstBad = items.findIndex((it) => it.error !== undefined);
      if (firstBad < 0)
        assert.deepEqual(
          parseWrites(b, NOW),
          items.map((it) => it.change),
        );
      else refused(() => parseWrites(b, NOW), items[firstBad]?.error?.message ?? '');
    }),
    { numRuns: 5_000 },
  );
  assert.ok(changes > 100, `only ${changes} items read to a change: the generator misses the valid ones`);
});
