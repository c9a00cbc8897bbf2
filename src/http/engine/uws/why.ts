/**
 * Why uWebSockets.js did not load natively, in words an operator can act on: which native file
 * it wanted, and what this system lacks for it (the C library version the build needs, or a
 * build for this Node.js ABI at all). The packages' own messages bury that under a generic
 * "supports only Node.js versions ..." line, or print it as warnings before a JavaScript
 * imitation takes over.
 */

/** This process's Node.js, its ABI and platform, as named in uWebSockets.js's file names. */
export function thisNode(): string {
  return `Node.js ${process.version} (ABI ${process.versions.modules}, ${process.platform}-${process.arch}${libcOfThisSystem()})`;
}

/** `, glibc 2.36`, `, musl` or '' when it cannot be told. */
function libcOfThisSystem(): string {
  if (process.platform !== 'linux') return '';
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime === undefined ? ', not glibc (musl?)' : `, glibc ${header.glibcVersionRuntime}`;
}

/** The reason from what the package threw, or from the warnings it printed (`said`). */
export function whyNotNative(thrown: string | undefined, said: readonly string[]): string {
  const text = [thrown ?? '', ...said].join('\n');
  const file = /uws_[a-z0-9]+_[a-z0-9]+_\d+\.node/.exec(text)?.[0];
  const needs = /`(GLIBC_[\d.]+|GLIBCXX_[\d.]+|CXXABI_[\d.]+)' not found/.exec(text)?.[1];
  const what = file === undefined ? 'its native build' : `its native build ${file}`;
  if (needs !== undefined) {
    return `uWebSockets.js cannot load ${what}: it needs ${needs.replace('_', ' ')} or later, and this is ${thisNode()}`;
  }
  if (file !== undefined && /cannot find module|no such file|not found/i.test(text)) {
    return `uWebSockets.js has no native build for ${thisNode()}: ${file} is not in the package`;
  }
  const first = text
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '' && !/supports only|not compatible|^Error:$/i.test(l));
  return `uWebSockets.js has no native build that loads on ${thisNode()}${first === undefined ? '' : `: ${first}`}`;
}
