/**
 * The file of the `transfer` kind: one client's data in the export's format (docs/api.md §17),
 * `memberships` memberships over a hundredth as many roles, a few permissions each. Written to a
 * file as it is generated, a megabyte at a time, never held whole; a digest of its lines that
 * does not depend on their order says whether an export of the imported client holds exactly the
 * same lines (the export sorts them, the file need not).
 */
import { closeSync, openSync, writeSync } from 'node:fs';

/** The layout of the imported client. */
export interface TransferShape {
  memberships: number;
  roles: number;
  /** Grants of each role, out of `permissions`. */
  grantsPerRole: number;
  permissions: number;
  /** Roles of each user (the last user may have fewer). */
  rolesPerUser: number;
  users: number;
}

export function transferShape(memberships: number): TransferShape {
  const roles = Math.max(1, Math.round(memberships / 100));
  const rolesPerUser = Math.min(3, roles);
  const permissions = 1_000;
  return { memberships, roles, grantsPerRole: 5, permissions, rolesPerUser, users: Math.ceil(memberships / rolesPerUser) };
}

/** Lines of each kind, without the header. */
export const dataLines = (s: TransferShape): number => s.roles + s.roles * s.grantsPerRole + s.memberships;

const pad = (i: number, width: number): string => String(i).padStart(width, '0');
const roleName = (r: number): string => `import-role-${pad(r, 6)}`;

/**
 * Every line after the header, in the export's own form (its keys in its order), so the same edge
 * is the same bytes in the file and in an export: roles, then grants, then memberships. User u
 * holds roles u, u + R/k, u + 2R/k (mod R): never one twice.
 */
function* lines(s: TransferShape): Generator<string> {
  for (let r = 0; r < s.roles; r++) yield JSON.stringify({ type: 'role', role: roleName(r), description: `imported role ${r}` });
  const stride = Math.floor(s.permissions / s.grantsPerRole);
  for (let r = 0; r < s.roles; r++)
    for (let g = 0; g < s.grantsPerRole; g++)
      yield JSON.stringify({ type: 'permission', role: roleName(r), permission: `import.res-${pad((r + g * stride) % s.permissions, 4)}:read` });
  const spread = Math.floor(s.roles / s.rolesPerUser);
  for (let m = 0; m < s.memberships; m++) {
    const u = Math.floor(m / s.rolesPerUser);
    const role = roleName((u + (m % s.rolesPerUser) * spread) % s.roles);
    yield JSON.stringify({ type: 'membership', user: `u${pad(u, 7)}@import.example`, role });
  }
}

export interface Digest {
  /** Lines after the first (the header, whose revision and time differ between files). */
  lines: number;
  /** Bytes of the whole file. */
  bytes: number;
  /** Sums of two 32-bit hashes of each of those lines: the same lines in any order give the same sums. */
  sums: [number, number];
}

const SUM_MOD = 2 ** 52;

/**
 * The digest of a stream of NDJSON, fed chunk by chunk as it arrives (a line may span two chunks):
 * FNV-1a and a multiplicative hash of each line's bytes, summed. Byte by byte, about a second for
 * a million lines: the export's reader must stay cheaper than the server it measures.
 */
export class LineDigest {
  #bytes = 0;
  #lines = 0;
  #inLine = false;
  #header = true;
  #a = 0x811c9dc5;
  #b = 0;
  #sumA = 0;
  #sumB = 0;

  feed(chunk: Uint8Array): void {
    this.#bytes += chunk.length;
    let [a, b] = [this.#a, this.#b];
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i] as number;
      if (c === 10) {
        this.#endLine(a, b);
        [a, b] = [0x811c9dc5, 0];
        continue;
      }
      this.#inLine = true;
      a = Math.imul(a ^ c, 0x01000193);
      b = (Math.imul(b, 31) + c) | 0;
    }
    [this.#a, this.#b] = [a, b];
  }

  #endLine(a: number, b: number): void {
    if (!this.#header) {
      this.#lines++;
      this.#sumA = (this.#sumA + (a >>> 0)) % SUM_MOD;
      this.#sumB = (this.#sumB + (b >>> 0)) % SUM_MOD;
    }
    this.#header = false;
    this.#inLine = false;
  }

  /** The digest so far; a last line without its newline counts. */
  digest(): Digest {
    if (this.#inLine) {
      this.#endLine(this.#a, this.#b);
      [this.#a, this.#b] = [0x811c9dc5, 0];
    }
    return { lines: this.#lines, bytes: this.#bytes, sums: [this.#sumA, this.#sumB] };
  }
}

const CHUNK = 1 << 20;

/** Writes the file of `s` to `path` (the header first), a megabyte at a time; its digest. */
export function writeTransferFile(path: string, s: TransferShape): Digest {
  const fd = openSync(path, 'w');
  const digest = new LineDigest();
  const flush = (text: string): void => {
    const bytes = Buffer.from(text, 'utf8');
    digest.feed(bytes);
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
  };
  try {
    let text = `${JSON.stringify({ format: 'rbac-gateway.export', version: 1, revision: 0, exported_at: new Date().toISOString().replace('Z', '000Z') })}\n`;
    for (const line of lines(s)) {
      text += `${line}\n`;
      if (text.length >= CHUNK) {
        flush(text);
        text = '';
      }
    }
    flush(text);
  } finally {
    closeSync(fd);
  }
  return digest.digest();
}
