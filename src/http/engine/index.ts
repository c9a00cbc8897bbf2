import type { Engine, EngineName } from './port.ts';
import { nodeApp, prepareNodeCluster } from './node/index.ts';
import { loadUws, uwsApp } from './uws/index.ts';

export type { Engine, EngineName } from './port.ts';

/** AUTH_HTTP_ENGINE asked for uWS and it cannot run here: a start-up error (exit code 2). */
export class EngineUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineUnavailable';
  }
}

/**
 * The one factory of the HTTP engine port (AUTH_HTTP_ENGINE): `uws` must load natively or
 * throws {@link EngineUnavailable}; `node` is node:http; `auto` is uWS where its native build
 * loads on this Node.js and C library, else node:http.
 */
export function chooseEngine(setting: EngineName | 'auto'): Engine {
  if (setting === 'node') return { name: 'node', reason: 'AUTH_HTTP_ENGINE=node', prepareCluster: prepareNodeCluster, createApp: nodeApp };
  const load = loadUws();
  if ('uws' in load) {
    const reason = setting === 'uws' ? 'AUTH_HTTP_ENGINE=uws' : 'AUTH_HTTP_ENGINE=auto and the native uWebSockets.js build loads here';
    return { name: 'uws', reason, prepareCluster: () => undefined, createApp: () => uwsApp(load.uws) };
  }
  if (setting === 'uws') throw new EngineUnavailable(`AUTH_HTTP_ENGINE=uws, but ${load.why}`);
  return { name: 'node', reason: `AUTH_HTTP_ENGINE=auto and ${load.why}`, prepareCluster: prepareNodeCluster, createApp: nodeApp };
}
