/**
 * What docs/api.md §2 fixes about every envelope, written out here rather than imported from
 * src/, so that the black-box tests pin the contract instead of the implementation.
 */
export const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/;

/** The envelope's `message` for each error status. */
export const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad request',
  401: 'Unauthorized',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Payload too large',
  415: 'Unsupported media type',
  500: 'Internal server error',
  503: 'Service unavailable',
};
