/**
 * The console on a client of 100,000 memberships (docs/console.md, Limits): every view shows with
 * at most 2,000 rows in the page, its lists paged by the API. The client is written through
 * POST /api/writes, 1000 writes a request, so that its whole history is in the change log and the
 * as-of view replays all of it. Times are reported (t.diagnostic), bounded only loosely: the
 * machine is shared.
 */
import { test, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import type { BatchWrite, RbacClient } from '../../src/client/index.ts';
import { ensureConsoleBuilt } from '../../support/build-console.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';
import { browserOr, launchBrowser, openByKeyboard, rowsInPage, showView, tableRows, type ViewId } from '../helpers/console-page.ts';

const USERS = 20_000;
const TEAMS = 100;
/** Each user is in `everyone` and four teams: 5 × 20,000 memberships, plus the pending ones. */
const TEAMS_PER_USER = 4;
const PENDING = 50;
const BATCH = 1000;
/** Loose: a view that takes longer than this is broken, not slow. */
const BOUND_MS = 10_000;

const team = (i: number): string => `team-${String(i).padStart(3, '0')}`;
const user = (u: number): string => `user-${String(u).padStart(5, '0')}`;

let server: RunningServer;
let browser: Browser | undefined;
let client: RbacClient;
let key: string;
/** The revision once half the memberships were written. */
let halfway = 0;
let memberships = 0;

function writes(): BatchWrite[] {
  const out: BatchWrite[] = [
    { op: 'role.create', role: 'everyone' },
    { op: 'permission.grant', role: 'everyone', permission: 'app.read' },
  ];
  for (let i = 0; i < TEAMS; i++) {
    out.push({ op: 'role.create', role: team(i) });
    for (let p = 0; p < 10; p++) out.push({ op: 'permission.grant', role: team(i), permission: `perm-${i}-${p}` });
  }
  out.push({ op: 'role.create', role: 'later' });
  for (let u = 0; u < USERS; u++) {
    out.push({ op: 'membership.add', user: user(u), role: 'everyone' });
    for (let k = 0; k < TEAMS_PER_USER; k++) out.push({ op: 'membership.add', user: user(u), role: team((u + k * 25) % TEAMS) });
  }
  const soon = new Date(Date.now() + 86_400_000).toISOString();
  for (let u = 0; u < PENDING; u++) out.push({ op: 'membership.add', user: user(u), role: 'later', not_before: soon });
  return out;
}

before(async () => {
  await ensureConsoleBuilt();
  server = await startServer();
  key = randomUUID();
  client = server.client(key);
  const all = writes();
  memberships = all.filter((w) => w.op === 'membership.add').length;
  const started = performance.now();
  for (let i = 0; i < all.length; i += BATCH) {
    const res = await client.writes(all.slice(i, i + BATCH));
    assert.ok(res.ok, `${res.status} ${res.error ?? ''}`);
    if (i < all.length / 2) halfway = res.data?.revision ?? 0;
  }
  console.log(`# seeded ${memberships} memberships in ${Math.ceil(all.length / BATCH)} batches: ${Math.round(performance.now() - started)} ms`);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Runs `act` on the view and waits for `caption`'s table; reports the time and the page's rows. */
async function timed(t: TestContext, page: Page, view: ViewId, caption: string, act: () => Promise<void>): Promise<string[][]> {
  await showView(page, view);
  const started = performance.now();
  await act();
  const rows = await tableRows(page, caption, 60_000);
  const ms = Math.round(performance.now() - started);
  const inPage = await rowsInPage(page);
  t.diagnostic(`#${view}: ${ms} ms to "${caption}" (${rows.length} rows in that table, ${inPage} in the page)`);
  console.log(`# console at ${memberships} memberships: #${view} shows in ${ms} ms, ${inPage} rows in the page`);
  assert.ok(inPage <= 2000, `#${view}: ${inPage} rows in the page`);
  assert.ok(ms < BOUND_MS, `#${view} took ${ms} ms`);
  return rows;
}

test(`every view of a client of ${USERS * (1 + TEAMS_PER_USER)} memberships shows with at most 2,000 rows`, async (t) => {
  const b = browserOr(t, browser);
  if (b === undefined) return;
  const context = await b.newContext({ viewport: { width: 1000, height: 800 } });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  await openByKeyboard(page, server.baseUrl, key);

  const roles = await timed(t, page, 'roles', 'Roles, page 1', async () => undefined);
  assert.deepEqual(
    roles.map((r) => r[0]),
    ((await client.listRoles({ limit: 100 })).data ?? []).map((r) => r.role),
  );
  const members = await timed(t, page, 'roles', 'Members of everyone', () => page.getByRole('button', { name: 'everyone', exact: true }).click());
  assert.deepEqual(
    members.map((r) => r[0]),
    ((await client.members('everyone', { limit: 200 })).data ?? []).map((m) => m.user),
  );

  const fill = (label: string, value: string): Promise<void> => page.getByLabel(label, { exact: true }).fill(value);
  const effective = await timed(t, page, 'user', `Permissions of ${user(42)}`, async () => {
    await fill('User', user(42));
    await page.getByRole('button', { name: 'Explain' }).click();
  });
  assert.equal(effective.length, 1 + TEAMS_PER_USER * 10);
  assert.ok(
    effective.every((r) => (r[1] ?? '') !== ''),
    'each permission names the roles that grant it',
  );

  const users = await timed(t, page, 'who-can', 'Users, page 1', async () => {
    await fill('Permission', 'app.read');
    await page.getByRole('button', { name: 'Who can' }).click();
  });
  assert.deepEqual(
    users.map((r) => r[0]),
    ((await client.whichUsersCan('app.read', { limit: 200 })).data ?? []).map((u) => u.user),
  );

  const pending = await timed(t, page, 'windows', 'Pending', async () => undefined);
  assert.equal(pending.length, PENDING);

  const changes = await timed(t, page, 'changes', 'Changes, revisions', async () => undefined);
  assert.ok(changes.length >= 100 && changes.length <= 2000, `${changes.length} rows`);

  const asOf = await timed(t, page, 'as-of', `At revision ${halfway}`, async () => {
    await fill('As of revision', String(halfway));
    await page.getByLabel('As of revision').press('Enter');
  });
  assert.equal(asOf.length, 200, 'a page of the state at that revision');
  await page.getByRole('heading', { name: 'Added since', exact: true }).waitFor();

  await timed(t, page, 'preview', 'Pairs lost', async () => {
    await page.getByLabel('Writes').fill('{"op":"role.delete","role":"everyone"}');
    await page.getByRole('button', { name: 'Preview' }).click();
  });
  await page.getByText(`${USERS} (user, permission) pairs lost`).waitFor();
});
