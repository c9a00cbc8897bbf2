import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './server.ts';

/** Newest modification time of any file under `dir`. */
function newest(dir: string): number {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).reduce((max, f) => {
    const s = statSync(join(dir, f));
    return s.isFile() ? Math.max(max, s.mtimeMs) : max;
  }, 0);
}

/**
 * Makes `dist/` (the compiled service `npm start` runs) current: rebuilt by the build script
 * (`npm run build`: the TypeScript, the command line's executable bit, the console) only when a
 * source is newer than the last build (`npm ci` builds it through `prepare`; a build takes
 * several seconds).
 */
export function ensureBuilt(): void {
  const main = join(ROOT, 'dist/main.js');
  const sources = Math.max(newest(join(ROOT, 'src')), ...['tsconfig.json', 'tsconfig.build.json', 'package.json'].map((f) => statSync(join(ROOT, f)).mtimeMs));
  if (existsSync(main) && statSync(main).mtimeMs >= sources) return;
  try {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, encoding: 'utf8' });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`npm run build failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}
