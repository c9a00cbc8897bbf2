import { readFileSync } from 'node:fs';

/**
 * The package's name and version, read once from package.json (one folder above both `src/` and
 * the compiled `dist/`).
 */
export const BUILD: { readonly name: string; readonly version: string } = (() => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string; version: string };
  return Object.freeze({ name: pkg.name, version: pkg.version });
})();
