// The service's log lines read by pino's tools: its real output, piped through pino-pretty's
// command line, comes out as pino-pretty renders pino's own lines (the level's label, the
// process, the message, then the fields: the event, an error's type, message and stack).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { freePort, ROOT, startServer } from '../helpers/server.ts';

const PINO_PRETTY = join(ROOT, 'node_modules/.bin/pino-pretty');

/** `lines` as pino-pretty renders them, without colours. */
function pretty(lines: readonly string[]): string {
  const run = spawnSync(PINO_PRETTY, ['--no-colorize'], { input: `${lines.join('\n')}\n`, encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

/** pino-pretty's head of a line: `[time] LEVEL (pid): msg`, `(name/pid)` on the line that has a `name` (pino's logger name). */
const HEAD = /^\[\d\d:\d\d:\d\d\.\d{3}\] (DEBUG|INFO|WARN|ERROR) \((?:rbac-gateway\/)?(\d+)\): (.+)$/;

test('pino-pretty renders every line the service writes: level label, pid, message, event and an error with its stack', { timeout: 120_000 }, async (t) => {
  // Redis on a port where nothing listens: the primary logs `redis.error` with the error in `err`.
  const server = await startServer({ env: { AUTH_LOG_LEVEL: 'debug', AUTH_WORKERS: '1', AUTH_REDIS_URL: `redis://127.0.0.1:${await freePort()}` } });
  t.after(() => server.kill());
  const client = server.client();
  assert.equal((await client.createRole('admins')).status, 201);
  for (const t0 = Date.now(); !server.output().includes('"event":"redis.error"') && Date.now() - t0 < 10_000;) await new Promise((r) => setTimeout(r, 50));
  assert.equal(await server.stop(), 0);

  const json = server
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'));
  const parsed = json.map((l) => JSON.parse(l) as { level: number; msg: string; event: string; pid: number });
  assert.ok(
    parsed.some((l) => l.event === 'redis.error'),
    'a line with an error',
  );
  const rendered = pretty(json);
  const heads = rendered.split('\n').filter((l) => HEAD.test(l));
  assert.equal(heads.length, json.length, `one rendered head per line:\n${rendered}`);
  const labels: Record<number, string> = { 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR' };
  heads.forEach((head, i) => {
    const [, label, pid, msg] = HEAD.exec(head) ?? [];
    const line = parsed[i];
    assert.equal(label, labels[line?.level ?? 0], head);
    assert.equal(Number(pid), line?.pid, head);
    assert.equal(msg, line?.msg, head);
  });
  for (const event of ['primary.starting', 'primary.listening', 'worker.ready', 'worker.stopping', 'redis.error']) {
    assert.ok(rendered.includes(`event: "${event}"`), `${event} rendered:\n${rendered}`);
  }
  const redisError = rendered.slice(rendered.indexOf('redis error'));
  assert.match(redisError, /err: \{\n\s+"type": "Error",\n\s+"message": "[^"]*ECONNREFUSED[^"]*",\n\s+"stack":\n\s+Error: [^\n]*ECONNREFUSED/);
});
