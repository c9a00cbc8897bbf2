// Loaded with `node --import` (NODE_OPTIONS, so the cluster's workers load it too): records every
// module specifier naming @opentelemetry that any module of the process asks to load, one a line,
// in the file MODULE_WATCH_FILE. A test then knows whether a process loaded OpenTelemetry at all.
import { register } from 'node:module';

register('./module-watch-hooks.mjs', import.meta.url);
