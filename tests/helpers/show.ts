/** One answer in one line, for assertion messages. */
import type { ApiResult } from '../../src/client/index.ts';
import type { RawResult } from './raw-http.ts';

/** `HTTP <status> <body>`, the body cut after `max` characters. */
export function show(res: ApiResult<unknown> | RawResult, max = 600): string {
  const body = 'text' in res ? res.text : (JSON.stringify(res.body) ?? '(no body)');
  return `HTTP ${res.status} ${body.slice(0, max)}`;
}
