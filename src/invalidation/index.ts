import { ipcBus, type IpcBus } from './ipc.ts';
import type { RedisBridge, RedisBridgeOptions } from './port.ts';

export type { Bus, RedisBridge, RedisBridgeOptions } from './port.ts';
export type { IpcBus } from './ipc.ts';

/**
 * The factory of the bus, worker side: a worker always runs under a primary, which fans its
 * changes out to the other workers (and, with Redis, to the other instances), so its bus is IPC.
 * `join` announces the worker; call it before anything is cached. The worker's message dispatcher
 * hands the primary's change messages to `receive`.
 */
export function workerBus(): IpcBus {
  return ipcBus();
}

/**
 * The factory of the bus, primary side: the bridge to the other instances through Redis, for a
 * primary configured with AUTH_REDIS_URL. ioredis is loaded here, on the first call, so an
 * instance without Redis never loads it.
 */
export async function startRedisBridge(options: RedisBridgeOptions): Promise<RedisBridge> {
  const { redisBridge } = await import('./redis.ts');
  return redisBridge(options);
}
