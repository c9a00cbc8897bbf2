// The JSON logger and its catalogue of events: every line carries the stable `event` of its
// message; every message logged in src/ is catalogued; docs/operations.md §8 lists the catalogue.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { hostname } from 'node:os';
import { AppError } from '../../../src/errors/index.ts';
import {
  createLogger,
  errorFields,
  LEVEL_NUMBERS,
  LOG_EVENTS,
  logSpanIdsFrom,
  UNCATALOGUED_EVENT,
  type LogLevel,
  type LogMessage,
} from '../../../src/log/index.ts';
import { eventOf } from '../../../src/log/events.ts';

const SRC = fileURLToPath(new URL('../../../src', import.meta.url));
const DOCS = fileURLToPath(new URL('../../../docs/operations.md', import.meta.url));
const LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** The lines `fn` writes to stdout, parsed (stdout is swapped only while `fn` runs, synchronously). */
function captured(fn: () => void): Array<Record<string, unknown>> {
  const chunks: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    fn();
  } finally {
    process.stdout.write = write;
  }
  const text = chunks.join('');
  assert.ok(text === '' || text.endsWith('\n'), 'whole lines');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('a line is {level, time, pid, hostname, event, msg, …base, …fields} as pino writes it: the event of its message, which no field overrides', () => {
  const log = createLogger('debug', { role: 'primary' });
  const spoofed = { event: 'spoofed', msg: 'spoofed', level: 'error', time: 'never', pid: 1, hostname: 'elsewhere' };
  const [line] = captured(() => log.info('listening', { port: 5000, ...spoofed }));
  assert.deepEqual(Object.keys(line ?? {}).slice(0, 6), ['level', 'time', 'pid', 'hostname', 'event', 'msg']);
  assert.equal(line?.level, 30, "info is pino's 30");
  assert.equal(line?.event, 'primary.listening');
  assert.equal(line?.msg, 'listening');
  assert.ok(typeof line?.time === 'number' && Math.abs(line.time - Date.now()) < 60_000, 'epoch milliseconds');
  assert.equal(line?.pid, process.pid);
  assert.equal(line?.hostname, hostname());
  assert.equal(line?.role, 'primary');
  assert.equal(line?.port, 5000);
  assert.ok(!('trace_id' in (line ?? {})), 'no span ids while traces are off');
});

test('an error in `err` is written as {type, message, stack, code}, whatever was thrown', () => {
  const log = createLogger('info');
  const failure = new AppError('ERR_STORE_UNAVAILABLE', 'the database is unavailable');
  const wrapped = new Error('hydration failed', { cause: failure });
  const [app, chained, text, other] = captured(() => {
    log.error('worker cannot start', { err: failure });
    log.error('worker cannot start', { err: wrapped });
    log.error('worker cannot start', { err: 'told by a worker' });
    log.error('worker cannot start', { err: 42 });
  });
  const e = app?.err as Record<string, unknown>;
  assert.equal(e.type, 'AppError');
  assert.equal(e.message, 'the database is unavailable');
  assert.equal(e.code, 'ERR_STORE_UNAVAILABLE');
  assert.match(String(e.stack), /^AppError: the database is unavailable\n\s+at /);
  const c = chained?.err as Record<string, unknown>;
  assert.equal(c.type, 'Error');
  assert.equal((c.cause as Record<string, unknown>).code, 'ERR_STORE_UNAVAILABLE');
  assert.deepEqual(text?.err, { type: 'Error', message: 'told by a worker' });
  assert.deepEqual(other?.err, { type: 'number', message: '42' });
  assert.deepEqual(errorFields(new TypeError('x')).type, 'TypeError');
});

test('while a span is active, a line carries its trace_id and span_id', () => {
  const log = createLogger('info');
  const ids = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
  logSpanIdsFrom(() => ids);
  try {
    const [line] = captured(() => log.info('listening'));
    assert.equal(line?.trace_id, ids.traceId);
    assert.equal(line?.span_id, ids.spanId);
  } finally {
    logSpanIdsFrom(undefined);
  }
  const [after] = captured(() => log.info('listening'));
  assert.ok(!('trace_id' in (after ?? {})));
});

test('each level writes at and above the configured one; silent writes nothing', () => {
  const all: Array<[LogLevel, string[]]> = [
    ['debug', ['debug', 'info', 'warn', 'error']],
    ['info', ['info', 'warn', 'error']],
    ['warn', ['warn', 'error']],
    ['error', ['error']],
    ['silent', []],
  ];
  for (const [level, written] of all) {
    const log = createLogger(level);
    const lines = captured(() => {
      for (const l of LEVELS) log[l]('worker ready');
    });
    assert.deepEqual(
      lines.map((l) => l.level),
      written.map((w) => LEVEL_NUMBERS[w as keyof typeof LEVEL_NUMBERS]),
      level,
    );
    assert.ok(lines.every((l) => l.event === 'worker.ready'));
    assert.deepEqual(
      LEVELS.filter((l) => log.enabled(l)),
      written,
      `enabled() at ${level}`,
    );
  }
});

test('fields that cannot be serialised leave a line that says so, with its event', () => {
  const log = createLogger('info');
  const [line] = captured(() => log.warn('redis error', { code: 10n }));
  assert.equal(line?.event, 'redis.error');
  assert.equal(line?.msg, 'redis error');
  assert.match(String(line?.log_error), /^fields not serialisable: /);
});

test('a message outside the catalogue (a caller that typed it as a plain string) is logged as log.uncatalogued', () => {
  const log = createLogger('info');
  const [line] = captured(() => log.info('something new' as LogMessage));
  assert.equal(line?.event, UNCATALOGUED_EVENT);
  assert.equal(line?.msg, 'something new');
});

test('the catalogue: events named area.what in snake case, one message each, one event per message', () => {
  const messages = Object.values(LOG_EVENTS);
  assert.equal(new Set(messages).size, messages.length, 'no message names two events');
  for (const [event, msg] of Object.entries<string>(LOG_EVENTS)) {
    assert.match(event, /^[a-z]+\.[a-z]+(_[a-z]+)*$/, event);
    assert.ok(msg !== '' && msg.trim() === msg, event);
    assert.equal(eventOf(msg), event);
  }
  assert.ok(!Object.hasOwn(LOG_EVENTS, UNCATALOGUED_EVENT));
});

/** Every .ts file under `dir`. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

interface LogCall {
  readonly where: string;
  readonly level: string;
  readonly msg: string;
}

/** The string literals under `node` (a conditional's branches included). */
const literals = (node: ts.Node): string[] =>
  ts.isStringLiteralLike(node) ? [node.text] : ts.isConditionalExpression(node) ? [...literals(node.whenTrue), ...literals(node.whenFalse)] : [];

/** Every `<something>.debug|info|warn|error(<message>, …)` under src/ whose message is written there, and every string literal. */
function scanSource(): { calls: LogCall[]; strings: Set<string> } {
  const calls: LogCall[] = [];
  const strings = new Set<string>();
  for (const file of tsFiles(SRC)) {
    if (file.endsWith(join('log', 'events.ts'))) continue;
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isStringLiteralLike(node)) strings.add(node.text);
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && (LEVELS as readonly string[]).includes(node.expression.name.text)) {
        const target = node.expression.expression.getText(source);
        const first = node.arguments[0];
        if (target !== 'console' && first !== undefined) {
          const where = `${relative(SRC, file)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
          for (const msg of literals(first)) calls.push({ where, level: node.expression.name.text, msg });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { calls, strings };
}

/** The rows of the events table of docs/operations.md §8: event → [level, message]. */
function documented(): Map<string, [string, string]> {
  const text = readFileSync(DOCS, 'utf8');
  const section = text.slice(text.indexOf('## §8 Logs'));
  const rows = new Map<string, [string, string]>();
  for (const m of section.matchAll(/^\| `([a-z_.]+)` \| (debug|info|warn|error) \| `([^`]+)` \|/gm)) {
    assert.ok(!rows.has(m[1] as string), `${m[1]} documented twice`);
    rows.set(m[1] as string, [m[2] as string, m[3] as string]);
  }
  return rows;
}

test('every message logged in src/ is catalogued, and every catalogued one is logged somewhere', () => {
  const { calls, strings } = scanSource();
  assert.ok(calls.length >= 40, `the scan finds the log calls (${calls.length})`);
  const catalogued = new Set<string>(Object.values(LOG_EVENTS));
  assert.deepEqual(
    calls.filter((c) => !catalogued.has(c.msg)).map((c) => `${c.where} '${c.msg}'`),
    [],
    'not in src/log/events.ts',
  );
  assert.deepEqual(
    [...catalogued].filter((m) => !strings.has(m)),
    [],
    'catalogued but never logged',
  );
});

test('docs/operations.md §8 lists every event with its message, and the level its call sites log it at', () => {
  const rows = documented();
  assert.deepEqual([...rows.keys()].sort(), Object.keys(LOG_EVENTS).sort());
  for (const [event, msg] of Object.entries(LOG_EVENTS)) assert.equal(rows.get(event)?.[1], msg, event);
  for (const call of scanSource().calls) {
    assert.equal(rows.get(eventOf(call.msg))?.[0], call.level, `${call.where}: '${call.msg}' is logged at ${call.level}`);
  }
});
