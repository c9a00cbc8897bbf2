import cluster from 'node:cluster';
import { ConfigError, loadConfig, redactedConfig, type Config } from './config/index.ts';
import { createLogger, type Logger } from './log/index.ts';

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  if (cluster.isPrimary) process.stderr.write(`rbac-gateway: configuration error: ${err.message}\n`);
  process.exit(2);
}

if (cluster.isPrimary && process.argv.includes('--check-config')) {
  // Validated above without opening a database, a socket or a file of the service's own.
  process.stdout.write(`${JSON.stringify({ config: redactedConfig(config) })}\n`);
  process.exit(0);
}

/** A crash is one JSON line like every other event (then exit code 1, as Node's own handling gives). */
function logCrashes(log: Logger): void {
  if (!log.enabled('error')) return;
  process.on('uncaughtException', (err: unknown) => {
    log.error('uncaught exception; exiting', { err });
    process.exit(1);
  });
}

// Each process loads only its own side: the primary never needs the HTTP, cache and store code,
// nor a worker the supervisor's (start-up time is module loading, mostly).
if (cluster.isPrimary) {
  const log = createLogger(config.AUTH_LOG_LEVEL, { role: 'primary' });
  logCrashes(log);
  const { runPrimary } = await import('./primary/index.ts');
  process.exit(await runPrimary(config, log));
} else {
  const log = createLogger(config.AUTH_LOG_LEVEL, { role: 'worker', worker: cluster.worker?.id });
  logCrashes(log);
  const { runWorkerProcess } = await import('./worker/index.ts');
  await runWorkerProcess(config, log);
}
