import { isTagged, type ChangeToPrimary, type ChangeToWorker } from '../invalidation/messages.ts';
import type { MetricJson } from '../metrics/requests.ts';

/**
 * The whole worker ↔ primary IPC protocol: the change fan-out's messages (invalidation/) and the
 * supervisor's own, here: a worker is listening (`ready`) or cannot start (`fatal`); the primary
 * tells it that shutdown has begun (`drain`), asks it to stop (`shutdown`) and reports the
 * instance's Redis subscription (`redis`).
 */
export type ToPrimary =
  | ChangeToPrimary
  | { readonly t: 'ready'; readonly port: number }
  /** The worker's metrics, for scrape `id`. */
  | { readonly t: 'metrics'; readonly id: number; readonly snapshot: MetricJson[] }
  /** `settings`: the configuration does not fit what is there (exit code 2, like a bad setting). */
  | { readonly t: 'fatal'; readonly message: string; readonly settings?: boolean };

export type ToWorker =
  | ChangeToWorker
  /** Whether the instance's Redis subscription is live (sent on join and on every change). */
  | { readonly t: 'redis'; readonly subscribed: boolean }
  /** Shutdown has begun: answer /ready with 503 `draining`, go on serving until `shutdown`. */
  | { readonly t: 'drain' }
  | { readonly t: 'shutdown' }
  /** A scrape: answer with a `metrics` message of the same id. */
  | { readonly t: 'metrics'; readonly id: number };

export const isToPrimary = isTagged as (m: unknown) => m is ToPrimary;
export const isToWorker = isTagged as (m: unknown) => m is ToWorker;
