// The resolve hook of module-watch.mjs (module hooks run apart from the modules they watch).
import { appendFileSync } from 'node:fs';

export async function resolve(specifier, context, next) {
  const file = process.env.MODULE_WATCH_FILE;
  if (file !== undefined && specifier.includes('@opentelemetry')) appendFileSync(file, `${specifier}\n`);
  return next(specifier, context);
}
