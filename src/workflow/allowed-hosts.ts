/**
 * AUTH_WEBHOOK_ALLOWED_HOSTS (docs/operations.md §1, docs/api.md §16): the only hosts a workflow webhook may call.
 * Checked when a schedule is created (a refusal is a 400) and again before every delivery, since
 * the setting may have changed since.
 */

/** Longest accepted `webhook_url`, in characters (as given and as normalised). */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

const MAX_PORT = 65_535;
const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };

/**
 * A host name, an IPv4 address or a bracketed IPv6 address, then an optional `:port`. Letters of
 * any script are let through: the URL parser below turns them into the form URLs compare with.
 */
const ENTRY = /^(\[[0-9A-Fa-f:.]+\]|[\p{L}\p{N}._-]+)(?::(\d{1,5}))?$/u;

/** One allowed host, in the form the URL parser gives `URL.hostname`; `port` null allows any port. */
export interface AllowedHost {
  readonly host: string;
  readonly port: number | null;
}

/** A checked `webhook_url`: the normalised URL to store and call, or why it is refused. */
export type WebhookUrlCheck = { readonly ok: true; readonly url: string } | { readonly ok: false; readonly reason: string };

/** The parsed allow-list: immutable, so one instance can be shared by every check. */
export class WebhookHosts {
  /** The usable entries; a webhook's host must match one of them. */
  readonly entries: readonly AllowedHost[];
  /** Entries that are no host (never allowed anything), for the caller to report. */
  readonly rejected: readonly string[];

  private constructor(entries: readonly AllowedHost[], rejected: readonly string[]) {
    this.entries = entries;
    this.rejected = rejected;
  }

  /**
   * Parses the setting: comma-separated, each entry trimmed, empty ones skipped. Never throws: an
   * entry that is no host is kept in `rejected` and allows nothing, so a typo fails closed.
   * Undefined or empty text allows nothing (webhooks are refused).
   */
  static parse(text: string | undefined): WebhookHosts {
    const entries: AllowedHost[] = [];
    const rejected: string[] = [];
    for (const raw of (text ?? '').split(',')) {
      const item = raw.trim();
      if (item === '') continue;
      const entry = parseEntry(item);
      if (entry === undefined) rejected.push(item);
      else entries.push(entry);
    }
    return new WebhookHosts(entries, rejected);
  }

  /** True when no host is allowed: every webhook is refused. */
  get empty(): boolean {
    return this.entries.length === 0;
  }

  /**
   * Checks a `webhook_url` as given by a client: an absolute http(s) URL of at most 2048
   * characters, with no user name or password, on a listed host (and port: the scheme's default
   * when the URL names none). Never throws; a refusal's reason names the field and the rule and
   * never repeats the URL, which may carry a token in its path or query.
   */
  check(text: unknown): WebhookUrlCheck {
    const parsed = parseWebhookUrl(text);
    if (!(parsed instanceof URL)) return parsed;
    if (this.empty) return refuse('webhook_url is refused: no webhook host is allowed (AUTH_WEBHOOK_ALLOWED_HOSTS is not set)');
    if (!this.allows(parsed)) return refuse('webhook_url must be on a host listed in AUTH_WEBHOOK_ALLOWED_HOSTS');
    return { ok: true, url: parsed.href };
  }

  /** True when the URL's host and effective port match an entry (the URL is already parsed). */
  allows(url: URL): boolean {
    const port = effectivePort(url);
    return this.entries.some((e) => e.host === url.hostname && (e.port === null || e.port === port));
  }
}

/** The URL's port, or its scheme's default when it names none (the parser drops a default port). */
export function effectivePort(url: URL): number {
  return url.port === '' ? (DEFAULT_PORTS[url.protocol] ?? 0) : Number(url.port);
}

function parseEntry(text: string): AllowedHost | undefined {
  const match = ENTRY.exec(text);
  if (match === null) return undefined;
  const host = normaliseHost(match[1] as string);
  const port = match[2] === undefined ? null : Number(match[2]);
  if (host === undefined || (port !== null && (port < 1 || port > MAX_PORT))) return undefined;
  return { host, port };
}

/**
 * The host as `URL.hostname` writes it (lower case, punycode, canonical IPv4 and IPv6), so an
 * entry and a URL naming the same host in different spellings compare equal.
 */
function normaliseHost(host: string): string | undefined {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return undefined;
  }
}

/** The URL if its shape is acceptable, whatever its host; else the refusal. */
function parseWebhookUrl(text: unknown): URL | WebhookUrlCheck {
  if (typeof text !== 'string') return refuse('webhook_url must be a string');
  if (text.length > MAX_WEBHOOK_URL_LENGTH) return refuse(`webhook_url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refuse('webhook_url must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return refuse('webhook_url must use the http or https scheme');
  if (url.username !== '' || url.password !== '') return refuse('webhook_url must not contain a user name or password');
  // Normalising can lengthen it (percent-encoding, punycode): what is stored obeys the limit too.
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) return refuse(`webhook_url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  return url;
}

function refuse(reason: string): WebhookUrlCheck {
  return { ok: false, reason };
}
