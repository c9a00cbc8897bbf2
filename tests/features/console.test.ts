/**
 * The read-only console (docs/console.md): its files and headers over plain HTTP on both engines,
 * AUTH_CONSOLE=false, and in Chromium each view against the API's own answers for one seeded
 * client; the key typed by keyboard alone and found nowhere but the Authorization header of /api
 * calls; no request leaving the origin; no inline script allowed; no horizontal scrolling at 320
 * px; no serious or critical axe-core finding. Each view's screenshot goes to docs/console/.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { RbacClient } from '../../src/client/index.ts';
import { ensureConsoleBuilt } from '../../support/build-console.ts';
import { startServers, type RunningServer } from '../helpers/server.ts';
import {
  axeFindings,
  browserOr,
  horizontalOverflow,
  inPage,
  launchBrowser,
  openByKeyboard,
  recordRequests,
  rowsInPage,
  screenshot,
  showView,
  tableRows,
  VIEWS,
  type SentRequest,
} from '../helpers/console-page.ts';

const CSP = "default-src 'self'; frame-ancestors 'none'";
const LONG_ROLE = `a-role-with-a-long-name.that-wraps:on-narrow-screens|${'x'.repeat(60)}`;
const LONG_USER = `someone.with.a.very.long.address+console@${'example-'.repeat(8)}com`;
const DAY_MS = 86_400_000;

let server: RunningServer;
let nodeEngine: RunningServer;
let off: RunningServer;
let browser: Browser | undefined;

before(async () => {
  await ensureConsoleBuilt();
  [server, nodeEngine, off] = (await startServers({}, { env: { AUTH_HTTP_ENGINE: 'node' } }, { env: { AUTH_CONSOLE: 'false' } })) as [
    RunningServer,
    RunningServer,
    RunningServer,
  ];
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await Promise.all([server?.stop(), nodeEngine?.stop(), off?.stop()]);
});

// ---- over plain HTTP ----------------------------------------------------------------------------

describe('served files', () => {
  for (const [name, pick] of [
    ['the default engine', () => server],
    ['node:http', () => nodeEngine],
  ] as const) {
    test(`${name}: the page and its assets, with CSP and nosniff, from memory; an unknown file (404) and another method (405) answer with them too`, async () => {
      const base = pick().baseUrl;
      const types: Record<string, RegExp> = {
        '/console': /^text\/html; charset=utf-8$/,
        '/console/console.js': /^text\/javascript; charset=utf-8$/,
        '/console/console.css': /^text\/css; charset=utf-8$/,
        '/console/favicon.svg': /^image\/svg\+xml$/,
      };
      for (const [path, type] of Object.entries(types)) {
        const res = await fetch(base + path);
        assert.equal(res.status, 200, path);
        assert.match(res.headers.get('content-type') ?? '', type, path);
        assert.equal(res.headers.get('content-security-policy'), CSP, path);
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff', path);
        assert.ok((await res.text()).length > 100, path);
      }
      const page = await (await fetch(`${base}/console`)).text();
      assert.doesNotMatch(page, /<script>|<script(?![^>]*\ssrc=)[^>]*>|\sstyle=|<style/, 'no inline script or style in the page');
      const missing = await fetch(`${base}/console/nope.js`);
      assert.equal(missing.status, 404);
      assert.equal(missing.headers.get('content-security-policy'), CSP);
      assert.equal(missing.headers.get('x-content-type-options'), 'nosniff');
      const body = (await missing.json()) as { success: boolean; code: number; error: string };
      assert.equal(body.success, false);
      assert.equal(body.code, 404);
      assert.match(body.error, /\/console\/nope\.js/);
      for (const path of ['/console', '/console/console.js']) {
        const refused = await fetch(base + path, { method: 'POST', body: '{}' });
        assert.equal(refused.status, 405, path);
        assert.equal(refused.headers.get('content-security-policy'), CSP, `${path}: the 405 too`);
        assert.equal(refused.headers.get('x-content-type-options'), 'nosniff', path);
      }
    });
  }

  test('AUTH_CONSOLE=false: /console and its assets are 404, the API is untouched', async () => {
    for (const path of ['/console', '/console/console.js', '/console/console.css', '/console/index.html']) {
      const res = await fetch(off.baseUrl + path);
      assert.equal(res.status, 404, path);
      assert.equal(((await res.json()) as { success: boolean }).success, false, path);
    }
    assert.equal((await fetch(`${off.baseUrl}/ping`)).status, 200);
  });
});

// ---- in the browser -----------------------------------------------------------------------------

/** The seeded client, and its export at the revision the as-of view is asked for. */
interface Seeded {
  key: string;
  client: RbacClient;
  asOf: number;
  exportAtAsOf: string[];
}

/** A small client with every kind of thing the views show: descriptions, windows, long names, a deleted role. */
async function seed(on: RunningServer): Promise<Seeded> {
  const key = randomUUID();
  const client = on.client(key);
  // Bounds on the first day of the month after next: ahead, and the same all month, so that the
  // screenshots of docs/console.md change only where the server's clock shows.
  const now = new Date();
  const day = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 2, 1);
  const soon = new Date(day + 9 * 3_600_000).toISOString();
  const later = new Date(day + 17 * 3_600_000).toISOString();
  const ok = async (p: Promise<{ ok: boolean; status: number; error?: string | undefined }>): Promise<void> => {
    const r = await p;
    assert.ok(r.ok, `seeding: ${r.status} ${r.error ?? ''}`);
  };
  for (const [role, description] of [
    ['admin', 'Administrators'],
    ['auditor', 'Reads the audit trail'],
    ['viewer', ''],
    ['on-call', 'Paged at night'],
    ['temp', 'Deleted later'],
    [LONG_ROLE, ''],
  ] as const)
    await ok(client.createRole(role, { description }));
  for (const [role, permission] of [
    ['admin', 'users.read'],
    ['admin', 'users.write'],
    ['admin', 'roles.write'],
    ['auditor', 'audit.read'],
    ['auditor', 'users.read'],
    ['viewer', 'users.read'],
    ['on-call', 'pager.ack'],
    ['temp', 'temp.do'],
    [LONG_ROLE, 'users.read'],
  ] as const)
    await ok(client.grant(role, permission));
  await ok(client.grant('viewer', 'reports.read', { notBefore: soon }));
  for (const [user, role] of [
    ['alice@example.com', 'admin'],
    ['alice@example.com', 'auditor'],
    ['bob', 'viewer'],
    ['tom', 'temp'],
    [LONG_USER, LONG_ROLE],
  ] as const)
    await ok(client.addMember(user, role));
  await ok(client.addMember('carol', 'on-call', { expiresAt: later }));
  await ok(client.addMember('dave', 'on-call', { notBefore: soon }));
  const exportAtAsOf: string[] = [];
  for await (const line of client.exportClient()) exportAtAsOf.push(line);
  const asOf = (JSON.parse(exportAtAsOf[0] as string) as { revision: number }).revision;
  await ok(client.revoke('viewer', 'users.read'));
  await ok(client.addMember('erin', 'admin'));
  await ok(client.deleteRole('temp'));
  return { key, client, asOf, exportAtAsOf };
}

/** The export's lines as items `kind role name` (roles: `role role`), the header left out. */
function exportItems(lines: readonly string[]): Set<string> {
  return new Set(
    lines.slice(1).map((l) => {
      const x = JSON.parse(l) as { type: string; role: string; permission?: string; user?: string };
      return `${x.type} ${x.role} ${x.permission ?? x.user ?? ''}`.trim();
    }),
  );
}

for (const [engine, target, shots] of [
  ['the default engine', () => server, true],
  ['node:http', () => nodeEngine, false],
] as const)
  describe(`the console in a browser, on ${engine}`, () => {
    let seeded: Seeded;
    let context: BrowserContext;
    let page: Page;
    let sent: ReturnType<typeof recordRequests>;
    const consoleText: string[] = [];
    let b: Browser | undefined;

    before(async () => {
      seeded = await seed(target());
      if (browser === undefined) return;
      context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
      sent = recordRequests(context);
      page = await context.newPage();
      page.setDefaultTimeout(15_000);
      page.on('console', (m) => consoleText.push(m.text()));
      page.on('pageerror', (e) => consoleText.push(`page error: ${e.message}`));
    });

    after(async () => {
      await context?.close();
    });

    test('keyboard alone opens the client; the roles with their permissions and members', async (t) => {
      b = browserOr(t, browser);
      if (b === undefined) return;
      await openByKeyboard(page, target().baseUrl, seeded.key, 'roles');
      const roles = (await seeded.client.listRoles()).data ?? [];
      assert.deepEqual(
        await tableRows(page, 'Roles, page 1'),
        roles.map((r) => [r.role, r.description]),
      );
      await page.getByRole('button', { name: 'admin', exact: true }).click();
      await page.getByRole('heading', { name: 'Role admin' }).waitFor();
      const permissions = (await seeded.client.rolePermissions('admin')).data ?? [];
      assert.deepEqual(
        await tableRows(page, 'Permissions of admin'),
        permissions.map((p) => [p.name, 'none', 'none']),
      );
      const members = (await seeded.client.members('admin')).data ?? [];
      assert.deepEqual(
        await tableRows(page, 'Members of admin'),
        members.map((m) => [m.user, 'none', 'none']),
      );
      // The Role field, on Enter: a role with a window on one member.
      await page.getByLabel('Role', { exact: true }).fill('on-call');
      await page.getByLabel('Role', { exact: true }).press('Enter');
      await page.getByRole('heading', { name: 'Role on-call' }).waitFor();
      const onCall = (await seeded.client.members('on-call')).data ?? [];
      assert.deepEqual(
        await tableRows(page, 'Members of on-call'),
        onCall.map((m) => [m.user, m.not_before ?? 'none', m.expires_at ?? 'none']),
      );
      if (shots) await screenshot(page, 'roles');
    });

    test("a user's effective permissions, each with the roles that grant it; one permission explained", async () => {
      if (b === undefined) return;
      await showView(page, 'user');
      await page.getByLabel('User', { exact: true }).fill('alice@example.com');
      await page.getByLabel('Permission', { exact: true }).fill('pager.ack');
      await page.getByRole('button', { name: 'Explain' }).click();
      const names = ((await seeded.client.userPermissions('alice@example.com')).data ?? []).map((p) => p.name);
      const expected = await Promise.all(
        names.map(async (n) => [n, ((await seeded.client.explain('alice@example.com', n)).data?.granted_by ?? []).join(', ')]),
      );
      assert.deepEqual(await tableRows(page, 'Permissions of alice@example.com'), expected);
      const roles = (await seeded.client.userRoles('alice@example.com')).data ?? [];
      assert.deepEqual(
        await tableRows(page, 'Roles of alice@example.com'),
        roles.map((r) => [r.role, 'none', 'none']),
      );
      const why = (await seeded.client.explain('alice@example.com', 'pager.ack')).data;
      assert.equal(why?.has_permission, false);
      await page.getByText('alice@example.com does not have pager.ack.').waitFor();
      assert.deepEqual(
        await tableRows(page, 'Roles that would grant it'),
        why?.remedies.map((r) => [r.role, String(r.permissions)]),
      );
      if (shots) await screenshot(page, 'user');
    });

    test('who can do a permission: users and roles', async () => {
      if (b === undefined) return;
      await showView(page, 'who-can');
      await page.getByLabel('Permission', { exact: true }).fill('users.read');
      await page.getByRole('button', { name: 'Who can' }).click();
      const users = (await seeded.client.whichUsersCan('users.read')).data ?? [];
      const roles = (await seeded.client.whichRolesCan('users.read')).data ?? [];
      assert.deepEqual(
        await tableRows(page, 'Users, page 1'),
        users.map((u) => [u.user]),
      );
      assert.deepEqual(
        await tableRows(page, 'Roles, page 1'),
        roles.map((r) => [r.role]),
      );
      if (shots) await screenshot(page, 'who-can');
    });

    test('windows: pending ones under their own heading, bounds as ISO 8601 UTC', async () => {
      if (b === undefined) return;
      await showView(page, 'windows');
      const windows = (await seeded.client.windows()).data ?? [];
      const row = (w: (typeof windows)[number]): string[] => [
        w.kind,
        w.role,
        (w.kind === 'membership' ? w.user : w.permission) ?? '',
        w.not_before ?? 'none',
        w.expires_at ?? 'none',
      ];
      const pending = windows.filter((w) => w.not_before !== undefined && Date.parse(w.not_before) > Date.now());
      assert.equal(pending.length, 2, 'the seeded pending grant and membership');
      assert.deepEqual(await tableRows(page, 'Pending'), pending.map(row));
      assert.deepEqual(await tableRows(page, 'Active until'), windows.filter((w) => !pending.includes(w)).map(row));
      for (const w of windows)
        for (const bound of [w.not_before, w.expires_at]) if (bound !== undefined) assert.match(bound, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      await page.getByRole('heading', { name: 'Pending', exact: true }).waitFor();
      if (shots) await screenshot(page, 'windows');
    });

    test('the change timeline, newest first, filtered by Role', async () => {
      if (b === undefined) return;
      await showView(page, 'changes');
      const changes = (await seeded.client.changes()).data ?? [];
      const shown = await tableRows(page, 'Changes, revisions');
      assert.deepEqual(
        shown.map((r) => Number(r[0])),
        changes.map((c) => c.revision).reverse(),
      );
      assert.match(shown[0]?.[1] ?? '', /^role\.delete role temp$/);
      await page.getByLabel('Role', { exact: true }).fill('admin');
      await page.getByLabel('Role', { exact: true }).press('Enter');
      await page.getByText(/the rows that match the filter/).waitFor();
      const admin = changes.filter((c) => c.role === 'admin').reverse();
      assert.deepEqual(
        (await tableRows(page, 'Changes, revisions')).map((r) => Number(r[0])),
        admin.map((c) => c.revision),
      );
      if (shots) await screenshot(page, 'changes');
    });

    test('as of a revision, rebuilt from the change log, with the differences from now', async () => {
      if (b === undefined) return;
      await showView(page, 'as-of');
      await page.getByLabel('As of revision').fill(String(seeded.asOf));
      await page.getByLabel('As of revision').press('Enter');
      const then = exportItems(seeded.exportAtAsOf);
      const nowLines: string[] = [];
      for await (const line of seeded.client.exportClient()) nowLines.push(line);
      const now = exportItems(nowLines);
      const shownThen = (await tableRows(page, `At revision ${seeded.asOf}`)).map((r) => `${r[0]} ${r[1]} ${r[2]}`.trim());
      assert.deepEqual(new Set(shownThen), then);
      const added = (await tableRows(page, 'Added since')).map((r) => `${r[0]} ${r[1]} ${r[2]}`.trim());
      const removed = (await tableRows(page, 'Removed since')).map((r) => `${r[0]} ${r[1]} ${r[2]}`.trim());
      assert.deepEqual(new Set(added), new Set([...now].filter((i) => !then.has(i))));
      assert.deepEqual(new Set(removed), new Set([...then].filter((i) => !now.has(i))));
      assert.ok(removed.includes('role temp') && added.includes('membership admin erin'), `${added.join('; ')} / ${removed.join('; ')}`);
      if (shots) await screenshot(page, 'as-of');
      // Ahead of the client: said so.
      await page.getByLabel('As of revision').fill('100000');
      await page.getByLabel('As of revision').press('Enter');
      await page.getByText(/Revision 100000 is ahead of the client/).waitFor();
    });

    test('preview: each write valid or invalid with the API error, then the pairs gained and lost', async () => {
      if (b === undefined) return;
      await showView(page, 'preview');
      const bad = [
        { op: 'membership.add', user: 'frank', role: 'admin' },
        { op: 'membership.add', user: 'frank', role: 'nope' },
      ];
      await page.getByLabel('Writes').fill(bad.map((w) => JSON.stringify(w)).join('\n'));
      await page.getByRole('button', { name: 'Preview' }).click();
      const judged = (await seeded.client.request<{ results: Array<{ status: number; error?: string }> }>('POST', '/api/dry-run', { body: { writes: bad } }))
        .data;
      const verdicts = (await tableRows(page, 'Each write and its verdict')).map((r) => r[2]);
      assert.equal(verdicts[0], `valid (${judged?.results[0]?.status})`);
      assert.equal(verdicts[1], `invalid (404): ${judged?.results[1]?.error}`);
      assert.match(verdicts[1] ?? '', /nope/);
      const good = [
        { op: 'membership.add', user: 'frank', role: 'admin' },
        { op: 'membership.remove', user: 'alice@example.com', role: 'auditor' },
      ] as const;
      await page.getByLabel('Writes').fill(good.map((w) => JSON.stringify(w)).join('\n'));
      await page.getByRole('button', { name: 'Preview' }).click();
      const preview = (await seeded.client.dryRun(good)).data;
      assert.ok(preview?.valid === true && preview.gained.length > 0 && preview.lost.length > 0);
      await page.getByRole('heading', { name: 'gained', exact: true }).waitFor();
      await page.getByRole('heading', { name: 'lost', exact: true }).waitFor();
      assert.deepEqual(
        await tableRows(page, 'Pairs gained'),
        preview.gained.map((p) => [p.user, p.permission]),
      );
      assert.deepEqual(
        await tableRows(page, 'Pairs lost'),
        preview.lost.map((p) => [p.user, p.permission]),
      );
      assert.equal((await seeded.client.isMember('frank', 'admin')).data?.is_member, false, 'the preview stored nothing');
      if (shots) await screenshot(page, 'preview');
    });

    test('at 320 px no view scrolls sideways; every page stays within 2,000 rows', async () => {
      if (b === undefined) return;
      await page.setViewportSize({ width: 320, height: 700 });
      for (const [id] of VIEWS) {
        await showView(page, id);
        assert.equal(await horizontalOverflow(page), 0, `#${id} scrolls sideways at 320 px`);
        assert.ok((await rowsInPage(page)) <= 2000, `#${id}`);
      }
      await page.setViewportSize({ width: 1000, height: 800 });
    });

    test('the key: only in the Authorization header of /api calls, never in storage, the URL, the DOM or the console; no request leaves the origin; a reload forgets it', async () => {
      if (b === undefined) return;
      const key = seeded.key;
      assert.deepEqual(await inPage(page, '[localStorage.length, sessionStorage.length, document.cookie]'), [0, 0, '']);
      assert.deepEqual(await context.cookies(), []);
      assert.equal(await inPage(page, `document.documentElement.outerHTML.includes(${JSON.stringify(key)})`), false, 'the key is in the DOM');
      assert.equal(await page.getByLabel('Client key').inputValue(), '', 'the field keeps the key');
      // An inline script is refused by the CSP, as any injected one would be.
      await assert.rejects(page.addScriptTag({ content: 'window.injected = 1' }), /Content Security Policy/);
      await page.reload();
      await page.getByText('No client open.').waitFor();
      await page.getByRole('heading', { name: 'No client open' }).waitFor();
      const requests: SentRequest[] = await sent.all();
      const origin = new URL(target().baseUrl).origin;
      assert.ok(requests.length > 20, `${requests.length} requests`);
      let withKey = 0;
      for (const r of requests) {
        const url = new URL(r.url);
        assert.equal(url.origin, origin, `a request left the origin: ${r.url}`);
        assert.ok(!r.url.includes(key), `the key in a URL: ${url.pathname}`);
        assert.ok(!(r.body ?? '').includes(key), `the key in a body to ${url.pathname}`);
        for (const [name, value] of Object.entries(r.headers)) {
          if (name === 'authorization') {
            assert.ok(url.pathname.startsWith('/api/'), `Authorization sent outside /api: ${url.pathname}`);
            assert.equal(value, `Bearer ${key}`);
            withKey++;
          } else assert.ok(!value.includes(key), `the key in header ${name} to ${url.pathname}`);
        }
      }
      assert.ok(withKey > 10);
      const afterReload = requests.slice(requests.findLastIndex((r) => new URL(r.url).pathname === '/console'));
      assert.ok(
        afterReload.every((r) => r.headers.authorization === undefined),
        'a request after the reload still carried the key',
      );
      assert.ok(!consoleText.some((m) => m.includes(key)), 'the key in the browser console');
      assert.ok(!consoleText.some((m) => /Content Security Policy/.test(m) && !/window\.injected|inline script/.test(m)), consoleText.join('\n'));
    });
  });

describe('accessibility', () => {
  test('no serious or critical axe-core finding on any view', async (t) => {
    const b = browserOr(t, browser);
    if (b === undefined) return;
    const key = randomUUID();
    const client = server.client(key);
    await client.createRole('admin', { description: 'Administrators' });
    await client.grant('admin', 'users.write');
    await client.addMember('alice', 'admin');
    await client.addMember('bob', 'admin', { notBefore: new Date(Date.now() + DAY_MS) });
    // axe-core is added as a script tag, which the CSP refuses: this context bypasses it.
    const context = await b.newContext({ bypassCSP: true });
    t.after(() => context.close());
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${server.baseUrl}/console`);
    assert.deepEqual(await axeFindings(page), [], 'before a key is open');
    await openByKeyboard(page, server.baseUrl, key);
    const fill = async (label: string, value: string): Promise<void> => page.getByLabel(label, { exact: true }).fill(value);
    const actions: Record<string, () => Promise<void>> = {
      roles: () => page.getByRole('button', { name: 'admin', exact: true }).click(),
      user: async () => (await fill('User', 'alice'), page.getByRole('button', { name: 'Explain' }).click()),
      'who-can': async () => (await fill('Permission', 'users.write'), page.getByRole('button', { name: 'Who can' }).click()),
      'as-of': async () => (await fill('As of revision', '2'), page.getByLabel('As of revision').press('Enter')),
      preview: async () => (await fill('Writes', '{"op":"role.delete","role":"admin"}'), page.getByRole('button', { name: 'Preview' }).click()),
    };
    for (const [id] of VIEWS) {
      await showView(page, id);
      await actions[id]?.();
      await page.waitForTimeout(300);
      assert.deepEqual(await axeFindings(page), [], `#${id}`);
    }
  });
});
