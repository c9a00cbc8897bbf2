import { readFileSync } from 'node:fs';
import { appError } from '../../errors/index.ts';
import type { EngineRequest, EngineResponse } from '../engine/port.ts';
import { errorBody } from '../reply/envelope.ts';
import type { Reply } from '../reply/reply.ts';
import type { RouteTable } from './route-table.ts';

/**
 * The read-only console (docs/console.md): a page, a script, a stylesheet and an icon bundled at build time
 * into dist/console/ (support/build-console.ts), read once at start-up and served from memory.
 * Every answer under /console, errors (405 included), forbids inline script and style, framing and
 * content sniffing: the page talks to /api only, from the service's own origin.
 */
export const CONSOLE_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Content-Security-Policy', "default-src 'self'; frame-ancestors 'none'"],
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
  ['Cache-Control', 'no-cache'],
];

const TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

/** The files of the bundle (support/build-console.ts): name → content type and bytes. */
type Bundle = ReadonlyMap<string, { readonly type: string; readonly bytes: Uint8Array }>;

/**
 * Where the bundle is: dist/console/ at the package root. This file is three folders below the
 * root both as a source (src/http/handle/) and compiled (dist/http/handle/), so one relative URL
 * serves `npm start` and `npm run dev` alike.
 */
const BUNDLE_DIR = new URL('../../../dist/console/', import.meta.url);

/** Reads the bundle; undefined when it was not built (a checkout without `npm run build`). */
export function readConsoleBundle(dir: URL = BUNDLE_DIR): Bundle | undefined {
  const files = new Map<string, { type: string; bytes: Uint8Array }>();
  for (const name of ['index.html', 'console.js', 'console.css', 'favicon.svg']) {
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(new URL(name, dir));
    } catch {
      return undefined;
    }
    files.set(name, { type: TYPES[name.slice(name.lastIndexOf('.') + 1)] as string, bytes });
  }
  return files;
}

/**
 * GET /console (the page) and GET /console/{file} (its assets); an unknown file is a 404 envelope
 * with the same headers. Not registered at all with AUTH_CONSOLE=false: every path under /console
 * is then the service's ordinary 404.
 */
export function registerConsole(routes: RouteTable, reply: Reply, bundle: Bundle | undefined): void {
  const serve = (name: string, res: EngineResponse, req: EngineRequest): void => {
    const t = reply.target(res, req, '');
    const file = bundle?.get(name);
    if (file !== undefined) return reply.sendTyped(t, 200, file.type, file.bytes, CONSOLE_HEADERS);
    const e = bundle === undefined ? appError('ERR_HTTP_CONSOLE_NOT_BUILT') : appError('ERR_HTTP_NOT_FOUND', { method: 'GET', url: req.getUrl() });
    reply.sendTyped(t, e.status, 'application/json', errorBody(e.status, e.message), CONSOLE_HEADERS);
  };
  routes.on('GET', '/console', (res, req) => serve('index.html', res, req), CONSOLE_HEADERS);
  routes.on('GET', '/console/{file}', (res, req) => serve(decodeFileName(req.getParameter(0)), res, req), CONSOLE_HEADERS);
}

/** A file name as asked; anything malformed matches no file. */
function decodeFileName(raw: string | undefined): string {
  try {
    return decodeURIComponent(raw ?? '');
  } catch {
    return '';
  }
}
