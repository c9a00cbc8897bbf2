/**
 * CORS (docs/operations.md §1 AUTH_ALLOW_CORS / AUTH_CORS_ORIGINS, docs/api.md §5) as a real browser applies it.
 *
 * Chromium loads a page from one loopback port and calls the service on another, with an
 * `Authorization` header, so every call is preflighted. The listed origin creates a role, reads
 * it back and reads `X-Authz-Revision` from JavaScript; a page from an unlisted origin, and any
 * page when CORS is off, is blocked by the browser (fetch rejects with a TypeError) before its
 * request reaches the service. The same rules are then checked header by header over plain HTTP:
 * with an origin list every response says `Vary: Origin`; with CORS off no response carries an
 * `Access-Control-*` header.
 *
 * Without /usr/bin/chromium the browser tests are skipped (said so), or fail under
 * AUTH_TEST_REQUIRE_SERVICES=1.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { rawRequest } from '../helpers/raw-http.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';
import { browserOr, launchBrowser } from '../helpers/browser.ts';

const OTHER_LISTED = 'https://app.example.com';

// ---------------------------------------------------------------------------------------------
// The page: one script, run in the browser, that calls the service the way an application would
// ---------------------------------------------------------------------------------------------

/** What the page's `scenario` resolves with (it never rejects). */
type Outcome =
  | {
      ok: true;
      created: number;
      createdBody: { data?: { role?: string; revision?: number } };
      createdRevision: string | null;
      read: number;
      roles: Array<{ role: string; description: string }>;
      revision: string | null;
      requestId: string | null;
    }
  | { ok: false; name: string; message: string };

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>rbac page</title></head><body>
<script>
async function scenario({ api, key, role }) {
  const auth = { Authorization: 'Bearer ' + key };
  try {
    const created = await fetch(api + '/api/role/' + encodeURIComponent(role), {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ description: 'made by a page' }),
    });
    const createdBody = await created.json();
    const read = await fetch(api + '/api/roles', { headers: auth });
    const readBody = await read.json();
    return {
      ok: true,
      created: created.status,
      createdBody,
      createdRevision: created.headers.get('X-Authz-Revision'),
      read: read.status,
      roles: readBody.data,
      revision: read.headers.get('X-Authz-Revision'),
      requestId: read.headers.get('X-Request-Id'),
    };
  } catch (err) {
    return { ok: false, name: err.name, message: String(err.message) };
  }
}
</script></body></html>`;

interface PageServer {
  origin: string;
  close(): Promise<void>;
}

/** Serves {@link PAGE} on a loopback port of its own: one origin. */
function servePage(): Promise<PageServer> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/favicon.ico') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' }).end(PAGE);
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      resolve({
        origin: `http://127.0.0.1:${port}`,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Fixtures: two page origins, a service listing the first, a service with CORS off, one browser
// ---------------------------------------------------------------------------------------------

let pageA: PageServer;
let pageB: PageServer;
/** AUTH_CORS_ORIGINS lists pageA's origin (and another one). */
let listed: RunningServer;
/** AUTH_ALLOW_CORS=false, although AUTH_CORS_ORIGINS lists pageA's origin. */
let off: RunningServer;
let browser: Browser | undefined;

before(async () => {
  [pageA, pageB] = await Promise.all([servePage(), servePage()]);
  [listed, off] = await Promise.all([
    startServer({ env: { AUTH_CORS_ORIGINS: `${pageA.origin}, ${OTHER_LISTED}` } }),
    startServer({ env: { AUTH_ALLOW_CORS: 'false', AUTH_CORS_ORIGINS: pageA.origin } }),
  ]);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await Promise.all([listed?.stop(), off?.stop(), pageA?.close(), pageB?.close()]);
});

/** Loads the page from `page` in a fresh browser context and runs its scenario against `api`. */
async function runPage(b: Browser, page: PageServer, api: RunningServer, key: string, role: string): Promise<Outcome> {
  const context = await b.newContext();
  try {
    const tab = await context.newPage();
    tab.setDefaultTimeout(15_000);
    await tab.goto(`${page.origin}/`);
    return await tab.evaluate((args) => (globalThis as unknown as { scenario(a: typeof args): Promise<Outcome> }).scenario(args), {
      api: api.baseUrl,
      key,
      role,
    });
  } finally {
    await context.close();
  }
}

/** The tenant's roles as the service has them (read over plain HTTP, no Origin). */
async function rolesOf(api: RunningServer, key: string): Promise<unknown> {
  const res = await rawRequest<unknown>({ port: api.port, path: '/api/roles', key });
  assert.equal(res.status, 200, res.text);
  return res.data;
}

// ---------------------------------------------------------------------------------------------
// In the browser
// ---------------------------------------------------------------------------------------------

describe('a browser', () => {
  test('a page from a listed origin creates a role, reads it back and reads X-Authz-Revision', async (t) => {
    const b = browserOr(t, browser);
    if (b === undefined) return;
    const key = randomUUID();
    const out = await runPage(b, pageA, listed, key, 'page-admin');
    assert.ok(out.ok, `fetch from ${pageA.origin} failed: ${out.ok ? '' : `${out.name}: ${out.message}`}`);
    assert.equal(out.created, 201);
    assert.equal(out.createdBody.data?.role, 'page-admin');
    assert.equal(out.createdRevision, '1');
    assert.equal(out.read, 200);
    assert.deepEqual(out.roles, [{ role: 'page-admin', description: 'made by a page' }]);
    assert.equal(out.revision, '1', 'X-Authz-Revision is not readable from the page');
    assert.ok(out.requestId !== null && out.requestId !== '', 'X-Request-Id is not readable from the page');
    assert.deepEqual(await rolesOf(listed, key), [{ role: 'page-admin', description: 'made by a page' }]);
  });

  test('a page from an unlisted origin is blocked, and its write never reaches the service', async (t) => {
    const b = browserOr(t, browser);
    if (b === undefined) return;
    const key = randomUUID();
    const out = await runPage(b, pageB, listed, key, 'intruder');
    assert.equal(out.ok, false, `fetch from the unlisted ${pageB.origin} succeeded`);
    assert.equal(out.ok ? '' : out.name, 'TypeError');
    assert.deepEqual(await rolesOf(listed, key), []);
  });

  test('with CORS off even the origin in AUTH_CORS_ORIGINS is blocked', async (t) => {
    const b = browserOr(t, browser);
    if (b === undefined) return;
    const key = randomUUID();
    const out = await runPage(b, pageA, off, key, 'blocked');
    assert.equal(out.ok, false, 'fetch succeeded with AUTH_ALLOW_CORS=false');
    assert.equal(out.ok ? '' : out.name, 'TypeError');
    assert.deepEqual(await rolesOf(off, key), []);
  });
});

// ---------------------------------------------------------------------------------------------
// Over plain HTTP, header by header
// ---------------------------------------------------------------------------------------------

interface Probe {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly key?: boolean;
  readonly preflight?: boolean;
  readonly body?: unknown;
}

/** One request of each kind of answer: plain routes, success, every error status, preflights. */
const PROBES: readonly Probe[] = [
  { name: 'GET /ping', method: 'GET', path: '/ping' },
  { name: 'GET /health', method: 'GET', path: '/health' },
  { name: 'GET /ready', method: 'GET', path: '/ready' },
  { name: 'GET /version', method: 'GET', path: '/version' },
  { name: 'GET /openapi.json', method: 'GET', path: '/openapi.json' },
  { name: '200', method: 'GET', path: '/api/roles', key: true },
  { name: '201', method: 'POST', path: '/api/role/probe-{n}', key: true },
  { name: '400 name', method: 'GET', path: '/api/role_permissions/bad%20name', key: true },
  { name: '400 query', method: 'GET', path: '/api/roles?limit=0', key: true },
  { name: '401', method: 'GET', path: '/api/roles' },
  { name: '404 path', method: 'GET', path: '/api/nope', key: true },
  { name: '404 role', method: 'GET', path: '/api/members/ghost', key: true },
  { name: '405', method: 'PUT', path: '/api/roles', key: true },
  { name: '400 body', method: 'POST', path: '/api/check', key: true, body: 'not an object' },
  { name: 'preflight', method: 'OPTIONS', path: '/api/role/admin', preflight: true },
  { name: 'preflight, unknown path', method: 'OPTIONS', path: '/no/such/path', preflight: true },
];

const ORIGINS = ['listed', 'unlisted', 'none'] as const;

async function probe(api: RunningServer, p: Probe, origin: string | undefined, n: number): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  const headers: Record<string, string> = {};
  if (origin !== undefined) headers.origin = origin;
  if (p.preflight === true) {
    headers['access-control-request-method'] = 'POST';
    headers['access-control-request-headers'] = 'authorization, content-type';
  }
  const res = await rawRequest({
    port: api.port,
    method: p.method,
    path: p.path.replace('{n}', String(n)),
    headers,
    ...(p.key === true ? { key: randomUUID() } : {}),
    ...(p.body === undefined ? {} : { body: p.body }),
  });
  return { status: res.status, headers: res.headers };
}

const accessControl = (headers: IncomingHttpHeaders): string[] => Object.keys(headers).filter((h) => h.startsWith('access-control-'));

describe('over plain HTTP', () => {
  test('with an origin list every response says Vary: Origin, listed origin or not, with or without Origin', async () => {
    let n = 0;
    for (const p of PROBES) {
      for (const which of ORIGINS) {
        const origin = which === 'listed' ? pageA.origin : which === 'unlisted' ? pageB.origin : undefined;
        const res = await probe(listed, p, origin, n++);
        const where = `${p.name} (${res.status}), origin ${which}`;
        const vary = String(res.headers.vary ?? '')
          .split(',')
          .map((v) => v.trim().toLowerCase());
        assert.ok(vary.includes('origin'), `${where}: Vary is ${JSON.stringify(res.headers.vary)}`);
        if (which === 'listed') {
          assert.equal(res.headers['access-control-allow-origin'], pageA.origin, where);
        } else {
          assert.deepEqual(accessControl(res.headers), [], `${where}: ${JSON.stringify(res.headers)}`);
        }
        if (p.preflight === true) assert.equal(res.status, 204, where);
      }
    }
  });

  test('a preflight from a listed origin allows the methods and the Authorization header', async () => {
    const res = await probe(listed, PROBES.find((p) => p.name === 'preflight') as Probe, pageA.origin, 0);
    assert.equal(res.status, 204);
    assert.equal(res.headers['access-control-allow-origin'], pageA.origin);
    assert.match(String(res.headers['access-control-allow-methods']), /\bPOST\b/);
    assert.match(String(res.headers['access-control-allow-headers']).toLowerCase(), /\bauthorization\b/);
    // The other listed origin is its own: never answered with pageA's.
    const other = await probe(listed, PROBES[0] as Probe, OTHER_LISTED, 0);
    assert.equal(other.headers['access-control-allow-origin'], OTHER_LISTED);
  });

  test('with CORS off no response carries an Access-Control-* header, preflights included', async () => {
    let n = 0;
    for (const p of PROBES) {
      for (const which of ORIGINS) {
        const origin = which === 'listed' ? pageA.origin : which === 'unlisted' ? pageB.origin : undefined;
        const res = await probe(off, p, origin, n++);
        const where = `${p.name} (${res.status}), origin ${which}`;
        assert.deepEqual(accessControl(res.headers), [], `${where}: ${JSON.stringify(res.headers)}`);
        if (p.preflight === true) assert.equal(res.status, 204, where);
      }
    }
  });
});
