/**
 * The console (docs/console.md) as a browser shows it: Debian's Chromium driven by playwright-core,
 * the key typed with the keyboard alone, views opened from the navigation, tables read by their
 * captions, axe-core run in the page, and the width of the page measured.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { ROOT } from './server.ts';
export { browserOr, launchBrowser } from './browser.ts';

const AXE = join(ROOT, 'node_modules/axe-core/axe.min.js');
export const SCREENSHOTS = join(ROOT, 'docs/console');

/** The views, by fragment and the title of their link and heading. */
export const VIEWS = [
  ['roles', 'Roles'],
  ['user', 'User'],
  ['who-can', 'Who can'],
  ['windows', 'Windows'],
  ['changes', 'Changes'],
  ['as-of', 'As of'],
  ['preview', 'Preview'],
] as const;
export type ViewId = (typeof VIEWS)[number][0];

/**
 * The value of `expression` in the page. Written as text: the tests compile without the DOM's
 * types, and what runs in the page is the browser's business.
 */
export function inPage<T>(page: Page, expression: string): Promise<T> {
  return page.evaluate(expression) as Promise<T>;
}

/** Loads /console and opens `key` by keyboard alone: Tab to `Client key`, type, Enter. */
export async function openByKeyboard(page: Page, baseUrl: string, key: string, view: ViewId = 'roles'): Promise<void> {
  await page.goto(`${baseUrl}/console#${view}`);
  await page.keyboard.press('Tab');
  assert.equal(await inPage(page, 'document.activeElement?.id'), 'client-key', 'the first Tab reaches Client key');
  assert.equal(await inPage(page, 'document.activeElement?.labels?.[0]?.textContent'), 'Client key');
  await page.keyboard.type(key);
  await page.keyboard.press('Enter');
  await page.getByText('A client is open.').waitFor();
}

/** Opens a view from the navigation and waits for its heading. */
export async function showView(page: Page, id: ViewId): Promise<void> {
  const title = VIEWS.find(([v]) => v === id)?.[1] ?? id;
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: title, exact: true }).click();
  await page.getByRole('heading', { level: 2, name: title, exact: true }).waitFor();
  assert.equal(new URL(page.url()).hash, `#${id}`);
}

/**
 * The rows of the table whose caption starts with `caption`, each as its cells' texts; waits up to
 * `timeoutMs` for such a table with at least one row (an empty list is a paragraph, not a table).
 */
export async function tableRows(page: Page, caption: string, timeoutMs = 15_000): Promise<string[][]> {
  const table = page.locator('table', { has: page.locator('caption', { hasText: caption }) }).first();
  await table.waitFor({ timeout: timeoutMs });
  return table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())));
}

/** Rows in the whole page: every list is paged, so this stays at most 2,000. */
export function rowsInPage(page: Page): Promise<number> {
  return inPage(page, "document.querySelectorAll('tr').length");
}

/** How far the page scrolls sideways (0: it fits the viewport's width). */
export function horizontalOverflow(page: Page): Promise<number> {
  return inPage(page, 'document.documentElement.scrollWidth - document.documentElement.clientWidth');
}

export interface AxeFinding {
  id: string;
  impact: string;
  help: string;
  targets: string[];
}

/**
 * axe-core's serious and critical findings on the page as it is. The script is added as a script
 * tag, which the console's CSP forbids: the context must be made with `bypassCSP` (the CSP itself
 * is tested in a context without it).
 */
export async function axeFindings(page: Page): Promise<AxeFinding[]> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run(
            context: unknown,
            options: unknown,
          ): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }>;
        };
      }
    ).axe;
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact ?? '', help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
}

/**
 * The view as a PNG, whole page, into docs/console/<name>.png: the pictures of docs/console.md are
 * made by every run, so that they show the console as it is (a run changes their times and
 * revisions; commit them with a change that shows).
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
}

/** Everything a page context sent: each request's URL, headers and body. */
export interface SentRequest {
  url: string;
  headers: Record<string, string>;
  body: string | null;
}

/** Records every request of `context` (its headers are read as they are sent). */
export function recordRequests(context: BrowserContext): { readonly all: () => Promise<SentRequest[]> } {
  const pending: Array<Promise<SentRequest>> = [];
  context.on('request', (r) => pending.push(r.allHeaders().then((headers) => ({ url: r.url(), headers, body: r.postData() }))));
  return { all: () => Promise.all(pending) };
}
