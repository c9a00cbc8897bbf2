import { randomBytes } from 'node:crypto';
import { STATUS_TEXT } from '../../errors/index.ts';
import { timestamp } from '../../time/index.ts';

/**
 * What every answer shares on the wire, whoever writes it: the error envelope and the request
 * ids. Here, below the engine port, because the engines answer transport refusals themselves;
 * the reply stage (../reply/) builds on it.
 */

/** The envelope of an error answer (docs/api.md §2). */
export function errorBody(status: number, detail: string): string {
  const message = STATUS_TEXT[status] ?? 'Error';
  return `{"success":false,"code":${status},"message":"${message}","error":${JSON.stringify(detail)},"timestamp":"${timestamp()}"}`;
}

const VISIBLE_ASCII = /^[\x21-\x7e]{1,128}$/;

/**
 * Request ids: the request's own `X-Request-Id` when acceptable, else a new one. Each instance
 * has its own random prefix, so ids of two instances never collide.
 */
export class RequestIds {
  readonly #prefix = randomBytes(6).toString('hex');
  #counter = 0;

  of(sent: string): string {
    if (sent !== '' && VISIBLE_ASCII.test(sent)) return sent;
    this.#counter = (this.#counter + 1) % Number.MAX_SAFE_INTEGER;
    return `${this.#prefix}-${this.#counter.toString(36)}`;
  }
}
