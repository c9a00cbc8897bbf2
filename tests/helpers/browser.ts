/**
 * Debian's Chromium, driven by playwright-core, for the tests that need a real browser (CORS, the
 * console). Without /usr/bin/chromium they skip and say why, or fail under
 * AUTH_TEST_REQUIRE_SERVICES=1.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { serviceMissing } from './services.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const BROWSER_MISSING = existsSync(CHROMIUM) ? undefined : `chromium is not installed at ${CHROMIUM}`;

/** Chromium, or undefined when it is not installed (the caller skips, or fails under AUTH_TEST_REQUIRE_SERVICES=1). */
export async function launchBrowser(): Promise<Browser | undefined> {
  if (BROWSER_MISSING !== undefined) return undefined;
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-background-networking'], timeout: 30_000 });
}

/** The browser, or undefined when the test was skipped. */
export function browserOr(t: { skip(message?: string): void }, browser: Browser | undefined): Browser | undefined {
  const missing = serviceMissing(BROWSER_MISSING);
  if (missing !== false) {
    t.skip(missing);
    return undefined;
  }
  assert.ok(browser !== undefined, 'the browser did not start');
  return browser;
}
