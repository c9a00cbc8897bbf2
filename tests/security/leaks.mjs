// The leak scan: every server output a test run saved (tests/helpers/leak-record.ts) is searched
// for every client key, token and secret the run used, and for anything shaped like a client key
// (a UUID v4) or a JWT, recorded or not: a server never prints any of them (docs/operations.md §1, docs/api.md §3).
// tests/run.mjs runs it after all its runs; by hand: node tests/security/leaks.mjs <folder>.
// A finding names the file, the test that started the server, the line and the kind of secret,
// and shows at most the first 4 characters of the secret.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const UUID_V4 = /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/gi;
const JWT = /eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g;
const HEX32 = /[0-9a-f]{32}/gi;
// An HS256 signature is 43 base64url characters; longer ones are looked up by their first 43.
const SIGNATURE_PREFIX = 43;
const BASE64URL_RUN = /[A-Za-z0-9_-]{43,}/g;
/** Shorter secrets cannot be searched for without matching ordinary words. */
const MIN_SECRET_LENGTH = 6;
const ALNUM = /[A-Za-z0-9]/;

/** First 4 characters, then an ellipsis: enough to tell secrets apart, never enough to use one. */
export const preview = (secret) => `${secret.slice(0, 4)}…`;

function readJsonLines(dir, prefix) {
  const rows = [];
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(prefix) || !name.endsWith('.jsonl')) continue;
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (line.trim() !== '') rows.push(JSON.parse(line));
    }
  }
  return rows;
}

/** What to look for: exact-match tables for the shaped secrets, a short list for the others. */
function secretTables(dir) {
  const keys = new Map(); // lower-case key → its record
  const keysHex = new Map(); // lower-case key without hyphens → its record
  const tokens = new Map(); // token → its record
  const signatures = new Map(); // the first 43 characters of a token's signature → its record
  const plain = new Map(); // any other secret → its record
  let tooShort = 0;
  for (const s of readJsonLines(dir, 'secrets-')) {
    if (s.kind === 'client key') {
      keys.set(s.value.toLowerCase(), s);
      keysHex.set(s.value.toLowerCase().replaceAll('-', ''), s);
    } else if (s.kind === 'token') {
      tokens.set(s.value, s);
      const signature = s.value.split('.')[2] ?? '';
      if (signature.length >= SIGNATURE_PREFIX) signatures.set(signature.slice(0, SIGNATURE_PREFIX), s);
    } else if (s.value.length < MIN_SECRET_LENGTH) {
      tooShort++;
    } else {
      plain.set(s.value, s);
    }
  }
  return { keys, keysHex, tokens, signatures, plain, tooShort };
}

/** Line number (1-based) of `index` in `text`, and that line with every finding in it masked. */
function lineAt(text, index, masks) {
  const start = text.lastIndexOf('\n', index - 1) + 1;
  const endAt = text.indexOf('\n', index);
  let line = text.slice(start, endAt === -1 ? text.length : endAt);
  for (const m of masks) line = line.split(m).join(`${preview(m)}[masked]`);
  let number = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) number++;
  return { number, line: line.length > 300 ? `${line.slice(0, 300)}…` : line };
}

/** Is the match at `index` (length `n`) a whole word, not the middle of a longer one? */
function standsAlone(text, index, n) {
  return !ALNUM.test(text[index - 1] ?? '') && !ALNUM.test(text[index + n] ?? '');
}

function scanText(text, t) {
  const hits = []; // {index, value, kind}
  for (const m of text.matchAll(UUID_V4)) {
    const rec = t.keys.get(m[0].toLowerCase());
    hits.push({
      index: m.index,
      value: m[0],
      kind: rec === undefined ? 'UUID-v4-shaped string (a client key the tests did not record?)' : `client key of ${rec.test}`,
    });
  }
  for (const m of text.matchAll(JWT)) {
    const rec = t.tokens.get(m[0]);
    hits.push({ index: m.index, value: m[0], kind: rec === undefined ? 'JWT-shaped string (a token the tests did not record?)' : `token of ${rec.test}` });
  }
  if (t.keysHex.size > 0) {
    for (const m of text.matchAll(HEX32)) {
      const rec = t.keysHex.get(m[0].toLowerCase());
      if (rec !== undefined) hits.push({ index: m.index, value: m[0], kind: `client key without its hyphens, of ${rec.test}` });
    }
  }
  if (t.signatures.size > 0) {
    for (const m of text.matchAll(BASE64URL_RUN)) {
      for (let i = 0; i + SIGNATURE_PREFIX <= m[0].length; i++) {
        const piece = m[0].slice(i, i + SIGNATURE_PREFIX);
        const rec = t.signatures.get(piece);
        if (rec !== undefined) hits.push({ index: m.index + i, value: piece, kind: `token signature, of ${rec.test}` });
      }
    }
  }
  for (const [secret, rec] of t.plain) {
    for (let i = text.indexOf(secret); i !== -1; i = text.indexOf(secret, i + 1)) {
      // A password can be an ordinary word ("postgres"): only a whole word counts as the password.
      if (rec.kind === 'URL password' && !standsAlone(text, i, secret.length)) continue;
      hits.push({ index: i, value: secret, kind: `${rec.kind}, of ${rec.test}` });
    }
  }
  // A token found whole also matches its own signature: one finding (the outermost) is enough.
  let end = -1;
  return hits
    .sort((a, b) => a.index - b.index || b.value.length - a.value.length)
    .filter((h) => {
      if (h.index + h.value.length <= end) return false;
      end = h.index + h.value.length;
      return true;
    });
}

/**
 * Scans every saved output in `dir`. Resolves with the findings (file, test, line, kind, preview,
 * masked line) and what was scanned.
 */
export function scanLeaks(dir) {
  const t = secretTables(dir);
  const sources = new Map(readJsonLines(dir, 'outputs-').map((o) => [o.file, o]));
  const findings = [];
  let files = 0;
  let bytes = 0;
  for (const name of readdirSync(dir).sort()) {
    if (!name.startsWith('output-') || !name.endsWith('.log')) continue;
    const text = readFileSync(join(dir, name), 'utf8');
    files++;
    bytes += text.length;
    const hits = scanText(text, t);
    const masks = [...new Set(hits.map((h) => h.value))].sort((a, b) => b.length - a.length);
    for (const h of hits) {
      const where = lineAt(text, h.index, masks);
      const src = sources.get(name);
      findings.push({
        file: join(dir, name),
        test: src === undefined ? '?' : `${src.test} (${src.how}${src.port === undefined ? '' : `, port ${src.port}`})`,
        line: where.number,
        text: where.line,
        kind: h.kind,
        preview: preview(h.value),
      });
    }
  }
  const secrets = t.keys.size + t.tokens.size + t.plain.size;
  return { findings, files, bytes, secrets, tooShort: t.tooShort };
}

/** Prints the result; returns the exit status (0: no leak). */
export function reportLeaks(result, log = console.log, error = console.error) {
  const what = `${result.files} server outputs (${result.bytes} bytes), ${result.secrets} recorded secrets`;
  const short = result.tooShort > 0 ? `; ${result.tooShort} secrets under ${MIN_SECRET_LENGTH} characters not searched` : '';
  if (result.findings.length === 0) {
    log(`leak scan: no key, token or secret in ${what}${short}`);
    return 0;
  }
  error(`leak scan: ${result.findings.length} findings in ${what}${short}:`);
  for (const f of result.findings.slice(0, 50)) {
    error(`  ${f.file}:${f.line} (server of ${f.test}): ${f.kind} "${f.preview}"\n    ${f.text}`);
  }
  if (result.findings.length > 50) error(`  … and ${result.findings.length - 50} more`);
  return 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = process.argv[2];
  if (dir === undefined) {
    console.error('usage: node tests/security/leaks.mjs <folder of saved server outputs>');
    process.exit(2);
  }
  process.exit(reportLeaks(scanLeaks(dir)));
}
