import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';
import type { EngineApp, Handler, Listener, Method } from '../port.ts';
import { guarded } from './guard.ts';

type UwsModule = typeof Uws;

/** The loaded native module, or why it cannot be used here. */
export type UwsLoad = { readonly uws: UwsModule } | { readonly why: string };

let loaded: UwsLoad | undefined;

/**
 * Loads uWebSockets.js and accepts it only when it is native code. Some builds print a warning
 * and swap in a partial JavaScript imitation when they have no binary for this Node.js ABI or C
 * library; that imitation is never used (its warnings are caught here, not printed).
 */
export function loadUws(): UwsLoad {
  loaded ??= tryLoad();
  return loaded;
}

function tryLoad(): UwsLoad {
  const said: string[] = [];
  const { warn, log } = console;
  console.warn = console.log = (...args: unknown[]) => void said.push(args.join(' '));
  let mod: UwsModule;
  try {
    mod = createRequire(import.meta.url)('uWebSockets.js') as UwsModule;
  } catch (err) {
    return { why: firstLine(err instanceof Error ? err.message : String(err)) };
  } finally {
    console.warn = warn;
    console.log = log;
  }
  if (typeof mod.App !== 'function' || !Function.prototype.toString.call(mod.App).includes('[native code]')) {
    const detail = said.map(firstLine).find((s) => s.includes('.node')) ?? said.map(firstLine).join(' ');
    return { why: `no native uWebSockets.js build for Node.js ${process.version} (ABI ${process.versions.modules}) here${detail === '' ? '' : `: ${detail}`}` };
  }
  return { uws: mod };
}

function firstLine(text: string): string {
  return text.split('\n').map((l) => l.trim()).find((l) => l !== '' && !/not compatible|^Error:$/i.test(l)) ?? text.trim();
}

const TO_UWS = (pattern: string): string => pattern.replace(/\{(\w+)\}/g, ':$1');

/**
 * The uWebSockets.js adapter: routes map onto uWS's own router, and its request and response
 * objects are the port's (no wrapper). Every worker process listens on the same port with
 * SO_REUSEPORT (uWS's default on Linux), so the kernel spreads connections over the workers.
 */
export function uwsApp(uws: UwsModule): EngineApp {
  const app = uws.App();
  // GET and HEAD get the native objects, behind the head's checks only: the hot path.
  const register: Record<Method, (pattern: string, h: Handler) => unknown> = {
    GET: (p, h) => app.get(p, guarded(h, false)),
    POST: (p, h) => app.post(p, guarded(h, true)),
    DELETE: (p, h) => app.del(p, guarded(h, true)),
    HEAD: (p, h) => app.head(p, guarded(h, false)),
  };
  return {
    on: (method, pattern, handler) => void register[method](TO_UWS(pattern), handler),
    otherMethods: (pattern, handler) => void app.any(TO_UWS(pattern), guarded(handler, false)),
    fallback: (handler) => void app.any('/*', guarded(handler, false)),
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
