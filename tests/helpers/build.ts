import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, statSync } from 'node:fs';
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
 * Makes `dist/` (the compiled service `npm start` runs) current: rebuilt as the build script does
 * (the TypeScript, and the command line's executable bit; the console's bundle has
 * ensureConsoleBuilt) only when a source is newer than the last build (`npm ci` builds it through
 * `prepare`; a build takes several seconds).
 */
export function ensureBuilt(): void {
  const main = join(ROOT, 'dist/main.js');
  const sources = Math.max(newest(join(ROOT, 'src')), ...['tsconfig.json', 'tsconfig.build.json', 'package.json'].map((f) => statSync(join(ROOT, f)).mtimeMs));
  if (existsSync(main) && statSync(main).mtimeMs >= sources) return;
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`tsc -p tsconfig.build.json failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
  chmodSync(join(ROOT, 'dist/cli/main.js'), 0o755); // the package bin, as `npm run build` leaves it
}
