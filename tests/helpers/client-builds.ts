import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './server.ts';

/**
 * What the client tests do outside the service's own toolchain: compile a consumer's program
 * with tsc in strict mode (as a user's project would), run it with plain Node.js (no tsx), and
 * use npm as a user would, without the registry.
 */

const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/**
 * Compiles `files` of `dir` (and what they import) into `dir/outDir`: strict, ES modules for Node.js,
 * with Node.js's types from the service's own node_modules; throws with tsc's messages.
 */
export function compileStrict(dir: string, files: readonly string[], outDir: string): void {
  const args = [
    ...['--strict', '--noUncheckedIndexedAccess', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext'],
    ...['--types', 'node', '--typeRoots', join(ROOT, 'node_modules/@types'), '--outDir', outDir, '--pretty', 'false'],
  ];
  const r = spawnSync(process.execPath, [TSC, ...args, ...files], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`tsc failed (${String(r.status)}):\n${r.stdout}${r.stderr}`.slice(0, 6000));
}

/** Runs `script` with plain Node.js and returns what it printed; throws with its stderr when it fails. */
export function runNode(script: string, args: readonly string[], cwd?: string): string {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', timeout: 60_000, ...(cwd === undefined ? {} : { cwd }) });
  if (r.status !== 0) throw new Error(`node ${script} failed (${String(r.status)}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** Runs npm in `cwd` without asking the registry anything, its cache in `cache`; returns stdout. */
export function npmOffline(cwd: string, args: readonly string[], cache: string): string {
  const env = { ...process.env, npm_config_cache: cache, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  const r = spawnSync('npm', [...args, '--offline'], { cwd, encoding: 'utf8', env, timeout: 120_000 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${String(r.status)}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}
