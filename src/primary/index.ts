import { redactedConfig, type Config } from '../config/index.ts';
import { chooseEngine, EngineUnavailable, type Engine } from '../http/engine/index.ts';
import type { Logger } from '../log/index.ts';
import { ChangeHub } from './hub.ts';
import { portIsFree } from './port-check.ts';
import { startRelay } from './relay.ts';
import { Supervisor } from './supervisor.ts';
import { WorkerScrape } from './scrape.ts';
import { PrimaryMetrics, startMetricsServer } from '../metrics/primary.ts';
import { BUILD } from '../config/build.ts';
import type { RunningScheduler } from './workflows.ts';
import { ACK_TIMEOUT_MS } from '../ipc/timing.ts';
import { startTracing } from '../trace/index.ts';

/**
 * The primary: forks AUTH_WORKERS HTTP workers on one port, replaces a worker that dies (with
 * backoff), fans committed changes out between workers, and on SIGTERM/SIGINT stops them
 * gracefully. It holds no socket and no graph. Resolves with the process exit code.
 */
export async function runPrimary(config: Config, log: Logger): Promise<number> {
  const engine = engineOrExplain(config);
  if (engine === undefined) return 2;
  // Once per start: what runs, with which settings (secrets shown as `[redacted]`).
  log.info('starting', { name: BUILD.name, version: BUILD.version, node: process.version, engine: engine.name, config: redactedConfig(config) });
  log.info('http engine', { engine: engine.name, reason: engine.reason });
  engine.prepareCluster();
  const tracer = await startTracing(config, log, 'primary');
  const relay = await startRelay(config.AUTH_REDIS_URL, new ChangeHub(ACK_TIMEOUT_MS, log), log, !config.AUTH_ENABLE_ENCRYPTION, tracer);
  const scrape = new WorkerScrape();
  const metrics = new PrimaryMetrics({ version: BUILD.version, node: process.version, engine: engine.name });
  let scheduler: Promise<RunningScheduler> | undefined;
  // Loaded and started once the workers listen: its modules (the pool, the webhook sender) and
  // its store thread's start-up do not delay theirs.
  const listening = (): void => {
    scheduler ??= import('./workflows.ts').then((m) => m.startWorkflowScheduler(config, log, metrics, (msgs) => relay.fromPrimary(msgs), tracer));
  };
  const supervisor = new Supervisor(config, log, engine.name, relay, { scrape, restarted: () => metrics.restarted(), listening });
  if (!(await serveMetrics(config, log, metrics, scrape))) return 2;
  process.on('SIGTERM', () => supervisor.drainThenStop());
  process.on('SIGINT', () => supervisor.drainThenStop());
  const { AUTH_SERVER_HOST: host, AUTH_SERVER_PORT: port } = config;
  portIsFree(host, port).then(
    () => supervisor.start(),
    (err: unknown) => {
      const why = err instanceof Error && 'code' in err ? String(err.code) : String(err);
      supervisor.fatal(`cannot listen on ${host}:${port} (${why})`);
    },
  );
  const code = await supervisor.done;
  await stopScheduler(scheduler, log);
  await tracer.close(TRACES_CLOSE_MS);
  return code;
}

/** How long the spans not sent yet may take to go at stop: a collector that does not answer must not hold the exit. */
const TRACES_CLOSE_MS = 2_000;

/** How long the workflow scheduler may take to stop once the workers are gone. */
const SCHEDULER_STOP_MS = 5_000;

/**
 * Stops the scheduler within {@link SCHEDULER_STOP_MS}, holding the event loop open meanwhile.
 * Its store thread is unref'd by the pool when idle, so once the workers are gone a stop waiting
 * on that thread could be the only thing left: Node then ended the process with code 13 (an
 * unsettled await) instead of the code the supervisor chose.
 */
async function stopScheduler(scheduler: Promise<RunningScheduler> | undefined, log: Logger): Promise<void> {
  if (scheduler === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), SCHEDULER_STOP_MS)));
  try {
    const stopped = (await scheduler).stop().then(() => 'stopped' as const);
    if ((await Promise.race([stopped, late])) === 'late') log.warn('workflow scheduler did not stop in time', { after_ms: SCHEDULER_STOP_MS });
  } finally {
    clearTimeout(timer);
  }
}

/** `GET /metrics` on its own port (AUTH_METRICS_PORT; 0 turns it off); false after one line on stderr when it cannot listen. */
async function serveMetrics(config: Config, log: Logger, metrics: PrimaryMetrics, scrape: WorkerScrape): Promise<boolean> {
  const { AUTH_METRICS_HOST: host, AUTH_METRICS_PORT: port } = config;
  if (port === 0) return true;
  try {
    await startMetricsServer(host, port, async () => metrics.exposition(await scrape.collect()), log);
    return true;
  } catch (err) {
    const why = err instanceof Error && 'code' in err ? String(err.code) : String(err);
    process.stderr.write(`rbac-gateway: cannot start: cannot serve metrics on ${host}:${port} (${why}); set AUTH_METRICS_PORT (0 turns metrics off)\n`);
    return false;
  }
}

/** The configured engine, or undefined after one line on stderr when it cannot run here. */
function engineOrExplain(config: Config): Engine | undefined {
  try {
    return chooseEngine(config.AUTH_HTTP_ENGINE);
  } catch (err) {
    if (!(err instanceof EngineUnavailable)) throw err;
    process.stderr.write(`rbac-gateway: configuration error: ${err.message}\n`);
    return undefined;
  }
}
