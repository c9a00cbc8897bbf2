import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';
import type { EngineApp, Handler, Listener, Method } from '../port.ts';
import { MAX_HEAD_BYTES, Refusals } from '../limits.ts';
import { BodyDeadlines, guarded } from './guard.ts';
import { whyNotNative } from './why.ts';

type UwsModule = typeof Uws;

/** The loaded native module, or why it cannot be used here. */
export type UwsLoad = { readonly uws: UwsModule } | { readonly why: string };

/** The outcome of loading the library, once per process (it reads its settings as it loads). */
const load: { outcome?: UwsLoad } = {};

/**
 * Loads uWebSockets.js and accepts it only when it is native code. Some builds print a warning
 * and swap in a partial JavaScript imitation when they have no binary for this Node.js ABI or C
 * library; that imitation is never used (its warnings are caught here, not printed). Others
 * throw; either way the reason says what this system lacks (see why.ts).
 */
export function loadUws(): UwsLoad {
  load.outcome ??= tryLoad();
  return load.outcome;
}

/**
 * The releases that read UWS_HTTP_MAX_HEADERS_SIZE (20.5x) read it once, as the library loads:
 * a head larger than this, whole or in pieces, gets their own non-JSON 431. Above the
 * contract's 16 KiB (counted over the URL, names and values only) by room for the request line
 * and the separators, plus a margin, so that a head just over the limit reaches guard.ts and
 * gets the service's JSON 431 like on node:http; the margin also bounds the per-connection
 * buffer a slow head can fill. The contract's limit is not the operator's to change.
 */
const UWS_HEAD_BYTES = MAX_HEAD_BYTES + 4 * 1024;

function tryLoad(): UwsLoad {
  const said: string[] = [];
  const { warn, log } = console;
  console.warn = console.log = (...args: unknown[]) => void said.push(args.join(' '));
  process.env.UWS_HTTP_MAX_HEADERS_SIZE = String(UWS_HEAD_BYTES);
  let mod: UwsModule;
  try {
    mod = createRequire(import.meta.url)('uWebSockets.js') as UwsModule;
  } catch (err) {
    return { why: whyNotNative(err instanceof Error ? err.message : String(err), said) };
  } finally {
    console.warn = warn;
    console.log = log;
  }
  if (typeof mod.App !== 'function' || !Function.prototype.toString.call(mod.App).includes('[native code]')) return { why: whyNotNative(undefined, said) };
  return { uws: mod };
}

const TO_UWS = (pattern: string): string => pattern.replace(/\{(\w+)\}/g, ':$1');

/**
 * The uWebSockets.js adapter: routes map onto uWS's own router, and its request and response
 * objects are the port's (no wrapper). Every worker process listens on the same port with
 * SO_REUSEPORT (uWS's default on Linux), so the kernel spreads connections over the workers.
 */
export function uwsApp(uws: UwsModule): EngineApp {
  const app = uws.App();
  const refusals = new Refusals();
  const deadlines = new BodyDeadlines();
  // GET and HEAD get the native objects, behind the head's checks only: the hot path.
  const register: Record<Method, (pattern: string, h: Handler) => unknown> = {
    GET: (p, h) => app.get(p, guarded(h, 'bare', refusals, deadlines)),
    POST: (p, h) => app.post(p, guarded(h, 'body', refusals, deadlines)),
    PUT: (p, h) => app.put(p, guarded(h, 'body', refusals, deadlines)),
    DELETE: (p, h) => app.del(p, guarded(h, 'body', refusals, deadlines)),
    HEAD: (p, h) => app.head(p, guarded(h, 'head', refusals, deadlines)),
  };
  return {
    on: (method, pattern, handler) => void register[method](TO_UWS(pattern), handler),
    otherMethods: (pattern, handler) => void app.any(TO_UWS(pattern), guarded(handler, 'any', refusals, deadlines)),
    fallback: (handler) => void app.any('/*', guarded(handler, 'any', refusals, deadlines)),
    listen: (host, port) =>
      new Promise<Listener>((resolve, reject) => {
        app.listen(host, port, (socket) => {
          if (socket === false) {
            reject(new Error(`cannot listen on ${host}:${port} (address in use or not available)`));
            return;
          }
          resolve({
            port: uws.us_socket_local_port(socket),
            stopAccepting: () => uws.us_listen_socket_close(socket),
            closeConnections: () => (app as Uws.TemplatedApp & { close(): void }).close(), // in uWS since v20.30, missing from its typings
          });
        });
      }),
  };
}
