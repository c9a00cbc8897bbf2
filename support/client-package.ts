/**
 * Builds the typed client (src/client/) as a package of its own, `@rbac-gateway/client`, ready for
 * `npm pack` or `npm publish`: ES modules and their declarations, a package.json with `exports`,
 * and no dependency (it speaks HTTP through the platform's fetch). The service keeps importing
 * src/client/ itself; this only compiles the same files apart from the service
 * (`npm run build:client`, into dist/client-package/ unless a folder is given).
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOURCES = join(ROOT, 'src/client');
export const CLIENT_PACKAGE_NAME = '@rbac-gateway/client';

const COMPILER: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2023.d.ts'],
  types: ['node'],
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  verbatimModuleSyntax: true,
  rewriteRelativeImportExtensions: true,
  declaration: true,
  skipLibCheck: true,
  rootDir: SOURCES,
};

/** The package's manifest: the service's version, no dependencies, one entry point. */
function manifest(): object {
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; license: string; engines: object };
  return {
    name: CLIENT_PACKAGE_NAME,
    version: root.version,
    description: 'Typed HTTP client of rbac-gateway: every route, its types generated from the service’s OpenAPI document',
    license: root.license,
    type: 'module',
    engines: root.engines,
    sideEffects: false,
    exports: { '.': { types: './index.d.ts', default: './index.js' }, './package.json': './package.json' },
    main: './index.js',
    types: './index.d.ts',
    files: ['*.js', '*.d.ts', 'README.md'],
  };
}

const README = `# ${CLIENT_PACKAGE_NAME}

Typed HTTP client of rbac-gateway, for Node.js 20.11 or later (or any runtime with \`fetch\`).
No dependencies. Its types are generated from the service's \`/openapi.json\`.

\`\`\`ts
import { RbacClient } from '${CLIENT_PACKAGE_NAME}';

const rbac = new RbacClient({ baseUrl: 'http://127.0.0.1:5000', key: process.env.RBAC_CLIENT_KEY });
await rbac.createRole('editor', { description: 'Edits articles' });
await rbac.grant('editor', 'article.edit');
await rbac.addMember('alice', 'editor');
const res = await rbac.hasPermission('alice', 'article.edit');
if (res.data?.has_permission === true) {
  // allowed
}
\`\`\`

Every call resolves with the whole answer (\`status\`, \`headers\`, \`data\` or \`error\`, \`revision\`);
an error status is a value, never a throw. See docs/clients.md in the rbac-gateway repository.
`;

/**
 * tsc rewrites `./types.ts` to `./types.js` in the modules it emits but not in their declarations;
 * a consumer's compiler without allowImportingTsExtensions would refuse those, so they are
 * rewritten the same way.
 */
function jsSpecifiers(file: string): void {
  writeFileSync(file, readFileSync(file, 'utf8').replace(/(from '\.\/[a-z.-]+)\.ts'/g, "$1.js'"));
}

/** Compiles src/client/ into `outDir` with its manifest and README; throws with tsc's messages on an error. */
export function buildClientPackage(outDir: string = join(ROOT, 'dist/client-package')): string {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const files = readdirSync(SOURCES)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(SOURCES, f));
  const program = ts.createProgram(files, { ...COMPILER, outDir });
  const emitted = program.emit();
  const problems = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics];
  if (problems.length > 0 || emitted.emitSkipped) {
    const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };
    throw new Error(`the client package does not compile:\n${ts.formatDiagnostics(problems, host)}`);
  }
  for (const f of readdirSync(outDir).filter((name) => name.endsWith('.d.ts'))) jsSpecifiers(join(outDir, f));
  writeFileSync(join(outDir, 'package.json'), `${JSON.stringify(manifest(), null, 2)}\n`);
  writeFileSync(join(outDir, 'README.md'), README);
  return outDir;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(`built ${CLIENT_PACKAGE_NAME} in ${buildClientPackage(process.argv[2])}`);
}
