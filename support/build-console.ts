/**
 * Bundles the read-only console (src/console/, docs/console.md) into dist/console/: one minified
 * script, one stylesheet, the page and its icon, the four files the service reads at start-up and serves
 * from memory at /console. `npm run build` (and so `npm ci`, through `prepare`) and `npm run dev`
 * run it; tests that start servers call {@link ensureConsoleBuilt}.
 *
 *   node --import tsx support/build-console.ts     # prints the sizes, raw and gzipped
 */
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOURCES = join(ROOT, 'src/console');
/** Where the service looks for the bundle (src/http/handle/console.ts). */
export const CONSOLE_DIR = join(ROOT, 'dist/console');
/** The files of the bundle, as the service serves them under /console/. */
export const CONSOLE_FILES = ['index.html', 'console.js', 'console.css', 'favicon.svg'] as const;

export interface BundledFile {
  readonly name: string;
  readonly bytes: number;
  readonly gzipBytes: number;
}

/** Newest modification time of a file under `dir` (the client's sources are bundled too). */
function newest(dir: string): number {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).reduce((max, f) => {
    const s = statSync(join(dir, f));
    return s.isFile() ? Math.max(max, s.mtimeMs) : max;
  }, 0);
}

/**
 * Builds into a fresh folder beside the target and renames each file into place, so that a
 * server starting meanwhile reads either the old file or the new one, never half of one.
 */
export async function buildConsole(outDir: string = CONSOLE_DIR): Promise<BundledFile[]> {
  const staging = `${outDir}.staging-${process.pid}`;
  mkdirSync(staging, { recursive: true });
  await build({
    entryPoints: { console: join(SOURCES, 'main.tsx') },
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022'],
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(SOURCES, 'tsconfig.json'),
    legalComments: 'none',
    outdir: staging,
    logLevel: 'warning',
  });
  await build({ entryPoints: [join(SOURCES, 'console.css')], bundle: true, minify: true, outdir: staging, logLevel: 'warning' });
  for (const page of ['index.html', 'favicon.svg']) copyFileSync(join(SOURCES, page), join(staging, page));
  mkdirSync(outDir, { recursive: true });
  const sizes = CONSOLE_FILES.map((name) => {
    const bytes = readFileSync(join(staging, name));
    renameSync(join(staging, name), join(outDir, name));
    return { name, bytes: bytes.length, gzipBytes: gzipSync(bytes, { level: 9 }).length };
  });
  rmSync(staging, { recursive: true, force: true });
  return sizes;
}

/** Builds the bundle when a source (the console's or the client's) is newer than it, or it is missing. */
export async function ensureConsoleBuilt(): Promise<void> {
  const built = CONSOLE_FILES.map((f) => join(CONSOLE_DIR, f));
  if (built.every((f) => existsSync(f))) {
    const oldest = Math.min(...built.map((f) => statSync(f).mtimeMs));
    const sources = Math.max(newest(SOURCES), newest(join(ROOT, 'src/client')), statSync(join(ROOT, 'support/build-console.ts')).mtimeMs);
    if (oldest >= sources) return;
  }
  await buildConsole();
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const sizes = await buildConsole();
  for (const f of sizes) console.log(`dist/console/${f.name}: ${f.bytes} bytes, ${f.gzipBytes} gzipped`);
}
