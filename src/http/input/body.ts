import type { EngineRequest as HttpRequest, EngineResponse as HttpResponse } from '../engine/port.ts';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { NAME_RULE } from '../../authz/names.ts';
import { appError, type AppError } from '../../errors/index.ts';
import { bodies, type BodySchemaName } from '../api/schemas.ts';

/** A read body: its validated JSON value (undefined when empty), or the error to answer with. */
export type BodyResult = { readonly value: unknown; readonly error?: undefined } | { readonly error: AppError; readonly close: boolean };

const JSON_TYPE = /^application\/(?:json|[^\s/;]+\+json)$/;

/** `application/json` or `application/*+json`, with any parameters, in any case. */
function isJsonContentType(header: string): boolean {
  const semi = header.indexOf(';');
  return JSON_TYPE.test((semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase());
}

const ajv = new Ajv({ allErrors: false, strict: true });
const validators = Object.fromEntries(Object.entries(bodies).map(([k, schema]) => [k, ajv.compile(schema)])) as Record<BodySchemaName, ValidateFunction>;

/** One readable sentence for the first ajv error, naming the field. */
function describe(e: ErrorObject): string {
  const field =
    e.instancePath === ''
      ? 'body'
      : e.instancePath
          .slice(1)
          .replace(/\/(\d+)/g, '[$1]')
          .replace(/\//g, '.');
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties':
      return `${field} has an unknown key '${String(p.additionalProperty)}'`;
    case 'required':
      return `${field} must have the key '${String(p.missingProperty)}'`;
    case 'pattern':
    case 'minLength':
      return `${field} must be ${NAME_RULE}`;
    case 'maxLength':
      return `${field} must be at most ${String(p.limit)} characters`;
    case 'minItems':
      return `${field} must have at least ${String(p.limit)} items`;
    case 'maxItems':
      return `${field} must have at most ${String(p.limit)} items`;
    case 'type':
      return `${field} must be ${/^[aeiou]/.test(String(p.type)) ? 'an' : 'a'} ${String(p.type)}`;
    default:
      return `${field} ${e.message ?? 'is invalid'}`;
  }
}

function finish(buf: Buffer, contentType: string, schema: BodySchemaName): BodyResult {
  if (buf.length === 0) return { value: undefined };
  if (!isJsonContentType(contentType)) {
    return { error: appError('ERR_HTTP_UNSUPPORTED_MEDIA_TYPE'), close: false };
  }
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8'));
  } catch {
    return { error: appError('ERR_VALIDATION_BODY', 'body is not valid JSON'), close: false };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { error: appError('ERR_VALIDATION_BODY', 'body must be a JSON object'), close: false };
  }
  const validate = validators[schema];
  if (!validate(value)) {
    const first = validate.errors?.[0];
    return { error: appError('ERR_VALIDATION_BODY', first ? describe(first) : 'body is invalid'), close: false };
  }
  return { value };
}

/**
 * The engines answer a body that does not arrive within 10 s with 408, or close its connection
 * (docs/api.md §4), and tell the handler through `onAborted`, never through `onData`. A read
 * still open a little later has lost its connection: it is settled then, so that nothing (the
 * request's answer, the drain at shutdown) waits on a body that can no longer come.
 */
const ABANDONED_AFTER_MS = 12_000;

/**
 * The raw bytes of a body that arrived whole, or why it did not. The bytes may be a view of the
 * engine's own memory, valid only while `done` runs: a caller that keeps them copies them.
 */
export type Collected = { readonly bytes: Buffer; readonly error?: undefined } | { readonly error: AppError; readonly close: boolean };

type Settle = (result: Collected) => void;

/**
 * Reads request bodies of at most `maxBytes`, for one server. Reads still waiting for their last
 * chunk are kept by when they started: one sweep a second settles the abandoned ones (a timer per
 * request would cost every POST a timer's creation and cancellation).
 */
export class BodyReader {
  readonly #maxBytes: number;
  readonly #waiting = new Map<Settle, number>();
  #sweeper: NodeJS.Timeout | undefined;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /**
   * Starts reading the request body; must be called inside the handler, before it returns.
   * `done` is called once, from the engine's data callback (uncorked), with the whole body.
   * A declared length over the limit is refused without reading; an undeclared one is cut off as
   * soon as it passes the limit (and the connection closed, since the rest is never read).
   */
  collect(res: HttpResponse, req: HttpRequest, done: Settle): void {
    const maxBytes = this.#maxBytes;
    const declared = req.getHeader('content-length');
    const tooLarge = (): Collected => ({ error: appError('ERR_HTTP_BODY_TOO_LARGE', { maxBytes }), close: true });
    if (declared !== '' && Number(declared) > maxBytes) return done(tooLarge());
    const waiting = this.#waiting;
    let chunks: Buffer[] | undefined;
    let size = 0;
    const settle = (result: Collected): void => {
      if (!waiting.delete(settle)) return;
      done(result);
    };
    this.#watch(settle);
    res.onData((chunk, isLast) => {
      if (!waiting.has(settle)) return;
      size += chunk.byteLength;
      if (size > maxBytes) return settle(tooLarge());
      // A body in one chunk is read in place; otherwise each chunk is copied (uWS reuses its memory).
      if (isLast && chunks === undefined) return settle({ bytes: Buffer.from(chunk) });
      if (chunk.byteLength > 0) (chunks ??= []).push(Buffer.from(chunk.slice(0)));
      if (isLast) settle({ bytes: Buffer.concat(chunks ?? []) });
    });
  }

  /** {@link collect}, then the body validated against an /api body schema. */
  read(res: HttpResponse, req: HttpRequest, schema: BodySchemaName): Promise<BodyResult> {
    const contentType = req.getHeader('content-type');
    return new Promise((resolve) => {
      this.collect(res, req, (body) => resolve(body.error === undefined ? finish(body.bytes, contentType, schema) : body));
    });
  }

  #watch(settle: Settle): void {
    this.#waiting.set(settle, Date.now());
    this.#sweeper ??= setInterval(this.#sweep, 1000).unref();
  }

  readonly #sweep = (): void => {
    const cutoff = Date.now() - ABANDONED_AFTER_MS;
    for (const [settle, startedAt] of this.#waiting) {
      if (startedAt <= cutoff) settle({ error: appError('ERR_VALIDATION_BODY', 'body did not arrive within 10 s'), close: true });
    }
    if (this.#waiting.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  };
}
