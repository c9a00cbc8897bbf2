import type { Config } from '../config/index.ts';
import { workerBus } from '../invalidation/index.ts';
import type { Logger } from '../log/index.ts';
import { startWorker, type RedisStatus, type StartedWorker } from './compose.ts';
import { listenToPrimary, tell } from './ipc.ts';
import { WorkerLifecycle } from './lifecycle.ts';
import { reportMetrics } from './metrics.ts';
import { startTracing } from '../trace/index.ts';

/**
 * A worker process under the primary: joins the change fan-out before anything can be cached,
 * serves, and stops gracefully on the primary's word or on a signal. It exits when the primary
 * goes away, so a killed primary leaves no orphan serving a stale graph.
 */
export async function runWorkerProcess(config: Config, log: Logger): Promise<void> {
  const bus = workerBus();
  const redis: RedisStatus = { state: config.AUTH_REDIS_URL === undefined ? 'off' : 'down' };
  const lifecycle = new WorkerLifecycle(config, log);
  let started: StartedWorker | undefined;
  listenToPrimary({
    change: (m) => bus.receive(m),
    redis: (subscribed) => {
      const was = redis.state;
      redis.state = subscribed ? 'up' : 'down';
      // Changes published while the subscription was down are lost: catch up at once.
      if (was === 'down' && redis.state === 'up') void started?.revalidate();
    },
    drain: () => lifecycle.drain(),
    shutdown: () => lifecycle.stop('shutdown'),
    metrics: (id) => reportMetrics(id, started?.metrics, log),
    disconnected: () => {
      bus.disconnected();
      lifecycle.orphaned();
    },
  });
  lifecycle.listenToSignals();
  await bus.join();
  try {
    started = await startWorker(config, log, bus, { redis, tracer: await startTracing(config, log, 'worker') });
  } catch (err) {
    return lifecycle.failed(err);
  }
  if (!lifecycle.started(started)) return;
  tell({ t: 'ready', port: started.port });
  log.debug('worker ready', { port: started.port });
}
