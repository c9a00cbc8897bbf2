// The error catalogue is the one source of codes (DESIGN.md, "Examples to follow" 2): every code
// it lists is used in src/, and every code src/ names is listed. Codes are found with the
// TypeScript parser, as string literals anywhere outside src/errors/ (a thrown AppError, a `code:`
// property, a comparison), so a code typed as a bare string somewhere is still seen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { CircuitOpenError } from '../../../src/store/wrappers/resilient.ts';
import { HEAD_TOO_LARGE, MAX_HEAD_BYTES, MAX_URL_BYTES, REQUEST_TIMEOUT_MS, TOO_SLOW, URL_TOO_LONG } from '../../../src/http/engine/limits.ts';
import { AppError, appError, ERRORS, fromWire, isErrorCode, STATUS_TEXT, toWire, type ErrorCode } from '../../../src/errors/index.ts';

const SRC = fileURLToPath(new URL('../../../src', import.meta.url));
const ERRORS_DIR = join(SRC, 'errors');
const CODE = /^ERR_[A-Z0-9_]+$/;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return path === ERRORS_DIR ? [] : tsFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every `'ERR_…'` string literal under src/ (outside src/errors/), with where it is. */
function codesInSources(): Array<{ code: string; where: string }> {
  const found: Array<{ code: string; where: string }> = [];
  for (const file of tsFiles(SRC)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && CODE.test(node.text)) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
        found.push({ code: node.text, where: `src/${relative(SRC, file)}:${line + 1}` });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

const used = codesInSources();

test('every code named in src/ is in the catalogue', () => {
  const unknown = used.filter((u) => !isErrorCode(u.code)).map((u) => `${u.code} at ${u.where}`);
  assert.deepEqual(unknown, [], 'add these to src/errors/index.ts (or, for a code of Node.js itself, do not spell it as a string literal)');
});

test('every code in the catalogue is used somewhere in src/', () => {
  const seen = new Set(used.map((u) => u.code));
  const unused = Object.keys(ERRORS).filter((code) => !seen.has(code));
  assert.deepEqual(unused, [], 'remove these from the catalogue, or use them');
});

test('every status of the catalogue has its short text', () => {
  for (const [code, spec] of Object.entries(ERRORS)) {
    assert.equal(typeof STATUS_TEXT[spec.status], 'string', `${code}: no STATUS_TEXT for ${spec.status}`);
  }
});

test('codes are named ERR_<AREA>_<WHAT>', () => {
  for (const code of Object.keys(ERRORS)) assert.match(code, /^ERR_(HTTP|AUTH|VALIDATION|AUTHZ|AUTHZEN|WORKFLOW|CONSISTENCY|STORE|INTERNAL)(_[A-Z]+)*$/, code);
});

test('templates word the texts the wire carries today', () => {
  const cases: Array<[AppError, number, string]> = [
    [appError('ERR_AUTHZ_ROLE_NOT_FOUND', { role: 'admin' }), 404, "Role 'admin' does not exist"],
    [appError('ERR_AUTHZ_ROLE_EXISTS', { role: 'admin' }), 409, "Role 'admin' already exists"],
    [appError('ERR_AUTHZ_GRANT_EXISTS', { role: 'r', permission: 'p' }), 409, "Permission 'p' is already granted to role 'r'"],
    [appError('ERR_AUTHZ_GRANT_NOT_FOUND', { role: 'r', permission: 'p' }), 404, "Permission 'p' is not granted to role 'r'"],
    [appError('ERR_AUTHZ_MEMBERSHIP_EXISTS', { user: 'u', role: 'r' }), 409, "User 'u' is already a member of role 'r'"],
    [appError('ERR_AUTHZ_MEMBERSHIP_NOT_FOUND', { user: 'u', role: 'r' }), 404, "User 'u' is not a member of role 'r'"],
    [appError('ERR_HTTP_NOT_FOUND', { method: 'GET', url: '/x' }), 404, 'no route GET /x'],
    [appError('ERR_HTTP_METHOD_NOT_ALLOWED', { method: 'PUT', url: '/api/roles', allow: 'GET' }), 405, 'PUT is not allowed on /api/roles; allowed: GET'],
    [appError('ERR_HTTP_BODY_TOO_LARGE', { maxBytes: 10 }), 413, 'body must be at most 10 bytes'],
    [appError('ERR_HTTP_UNSUPPORTED_MEDIA_TYPE'), 415, 'body must be sent with Content-Type application/json'],
    [appError('ERR_AUTH_UNAUTHENTICATED'), 401, 'a valid client key or token is required as Authorization: Bearer <credential>'],
    [appError('ERR_VALIDATION_CURSOR'), 400, 'cursor is not a valid cursor of this list'],
    [appError('ERR_VALIDATION_BODY', 'body is not valid JSON'), 400, 'body is not valid JSON'],
    [
      appError('ERR_CONSISTENCY_REVISION_AHEAD', { revision: 9, current: 4 }),
      400,
      "X-Authz-Min-Revision 9 is above the client's current revision 4; send a revision this service returned in X-Authz-Revision",
    ],
    [appError('ERR_CONSISTENCY_REVISION_TIMEOUT', { revision: 7, waitMs: 1000 }), 503, 'revision 7 was not reached within 1000 ms'],
    [appError('ERR_STORE_CIRCUIT_OPEN', { retryAfterMs: 1200 }), 503, 'the database is unavailable (circuit open, next attempt in 2 s)'],
    [
      appError('ERR_STORE_COMMIT_UNKNOWN', { what: 'write' }),
      503,
      'the connection to the database was lost while committing (write); the change may or may not be in',
    ],
    [appError('ERR_STORE_CONFLICT', { what: 'write', reason: 'deadlock' }), 503, 'the database aborted a concurrent transaction (write: deadlock)'],
  ];
  for (const [err, status, message] of cases) assert.deepEqual([err.status, err.message], [status, message], err.code);
});

test('retryable: only failures before any commit, never an open circuit or a commit of unknown outcome', () => {
  const retryable = (Object.keys(ERRORS) as ErrorCode[]).filter((code) => ERRORS[code].retryable).sort();
  assert.deepEqual(retryable, ['ERR_CONSISTENCY_REVISION_TIMEOUT', 'ERR_STORE_CONFLICT', 'ERR_STORE_UNAVAILABLE']);
  assert.equal(appError('ERR_STORE_CIRCUIT_OPEN', { retryAfterMs: 0 }).retryable, false);
  assert.equal(appError('ERR_STORE_COMMIT_UNKNOWN', { what: 'write' }).retryable, false);
  const open = new CircuitOpenError(1200);
  assert.deepEqual([open.code, open.status, open.retryable], ['ERR_STORE_CIRCUIT_OPEN', 503, false]);
  assert.equal(open.message, 'the database is unavailable (circuit open, next attempt in 2 s)', 'the text clients saw before');
});

test('errors cross boundaries as {code, message}; unknown codes and foreign errors become ERR_INTERNAL', () => {
  const wire = toWire(appError('ERR_AUTHZ_ROLE_EXISTS', { role: 'a' }));
  assert.deepEqual(wire, { code: 'ERR_AUTHZ_ROLE_EXISTS', message: "Role 'a' already exists" });
  assert.deepEqual(JSON.parse(JSON.stringify(wire)), wire, 'plain data');
  const back = fromWire(wire);
  assert.deepEqual([back instanceof AppError, back.code, back.status, back.message], [true, 'ERR_AUTHZ_ROLE_EXISTS', 409, "Role 'a' already exists"]);
  assert.equal(fromWire({ code: 'ERR_FROM_A_NEWER_BUILD', message: 'm' }).code, 'ERR_INTERNAL');
  assert.deepEqual(toWire(new Error('boom')), { code: 'ERR_INTERNAL', message: 'boom' });
  assert.deepEqual(toWire('text'), { code: 'ERR_INTERNAL', message: 'text' });
});

test("the transport refusals' texts give the engine's own limits", () => {
  assert.equal(HEAD_TOO_LARGE.message, `the request headers must be at most ${MAX_HEAD_BYTES / 1024} KiB in all`);
  assert.equal(URL_TOO_LONG.message, `the URL (path and query) must be at most ${MAX_URL_BYTES / 1024} KiB`);
  assert.equal(TOO_SLOW.message, `the request did not arrive within ${REQUEST_TIMEOUT_MS / 1000} s`);
  assert.deepEqual([MAX_HEAD_BYTES, MAX_URL_BYTES, REQUEST_TIMEOUT_MS], [16 * 1024, 8 * 1024, 10_000], 'the limits docs/api.md §5 gives');
});
