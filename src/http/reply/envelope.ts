import type { AppError } from '../../errors/index.ts';
import { timestamp } from '../../time/index.ts';

export { errorBody } from '../engine/wire.ts';

/** `{"success":true,"code":…,"message":"…","data":` — the fixed start of a success envelope. */
export function successPrefix(status: number, message: string): string {
  return `{"success":true,"code":${status},"message":${JSON.stringify(message)},"data":`;
}

/** Completes a success envelope after its prefix and serialised data. */
export function successTail(nextCursor: string | undefined): string {
  return nextCursor === undefined ? `,"timestamp":"${timestamp()}"}` : `,"next_cursor":${JSON.stringify(nextCursor)},"timestamp":"${timestamp()}"}`;
}

/** Extra headers some errors carry. */
export function errorHeaders(err: AppError): ReadonlyArray<readonly [string, string]> | undefined {
  if (err.status === 401) return [['WWW-Authenticate', 'Bearer']];
  if (err.status === 503) return [['Retry-After', '1']];
  return undefined;
}
