/** src/http/credentials.ts: the credential look-up of every request (a known key, a new key, a malformed one). */
import { randomUUID } from 'node:crypto';
import { Credentials, tenantOfKey } from '../../../../src/http/input/credentials.ts';
import type { MicroTask } from '../../task.ts';

const credentials = new Credentials(undefined);
const key = randomUUID();
const header = `Bearer ${key}`;
const fresh = Array.from({ length: 4_096 }, () => `Bearer ${randomUUID()}`);
let i = 0;

export const tasks: MicroTask[] = [
  {
    name: 'known key (remembered header)',
    check: () => {
      if (credentials.known(header)?.tenant !== tenantOfKey(key)) throw new Error('the key does not map to its tenant');
    },
    fn: () => credentials.known(header),
  },
  { name: 'new key (validate + SHA-256)', fn: () => new Credentials(undefined).known(fresh[i++ & 4095] ?? '') },
  {
    name: 'malformed header',
    check: () => {
      if (credentials.known('Bearer not-a-key') !== undefined) throw new Error('a malformed key was accepted');
    },
    fn: () => credentials.known('Bearer not-a-key'),
  },
];
