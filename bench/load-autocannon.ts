/**
 * One autocannon run against has_permission: keep-alive connections, pipelining 1, each connection
 * rotating through its own slice of the probe URLs. One request object in `verifyEvery` carries an
 * onResponse that checks the answer against the model (autocannon converts headers for every
 * response that has one, so only a sample gets it). Latency is taken from every response with
 * sub-millisecond resolution (autocannon's own histogram rounds to whole milliseconds), leaving
 * out each connection's first answer.
 */
import autocannon from 'autocannon';
import { probePath, type Probe } from './dataset.ts';
import { newTally, headerGetter, judge, record, type Expectation, type Tally } from './verify.ts';
import { Samples, type Latency } from './stats.ts';

export interface LoadSpec {
  url: string;
  authorization: string;
  probes: Probe[];
  connections: number;
  durationS: number;
  verifyEvery: number;
  expectation: Expectation;
}

export interface LoadOutcome {
  requests: number;
  durationS: number;
  rps: number;
  latency: Latency;
  non2xx: number;
  errors: number;
  timeouts: number;
  tally: Tally;
}

const PER_CONNECTION = 256;

export async function runAutocannon(spec: LoadSpec): Promise<LoadOutcome> {
  const tally = newTally();
  const makeRequests = (offset: number): autocannon.Request[] =>
    Array.from({ length: Math.min(PER_CONNECTION, spec.probes.length) }, (_, i) => {
      const p = spec.probes[(offset + i) % spec.probes.length] as Probe;
      const req: autocannon.Request = { method: 'GET', path: probePath(p) };
      if (i % spec.verifyEvery === 0) {
        req.onResponse = (status, body, _ctx, headers) => {
          record(tally, judge(p, spec.expectation, status, body, headerGetter(headers)));
        };
      }
      return req;
    });
  let clientNo = 0;
  const samples = new Samples();
  const options: autocannon.Options = {
    url: spec.url,
    connections: spec.connections,
    pipelining: 1,
    duration: spec.durationS,
    timeout: 10,
    headers: { authorization: spec.authorization },
    requests: makeRequests(0),
    setupClient: (client) => {
      // A different window of the probe set per connection, so the server sees them all at once.
      client.setRequests(makeRequests((clientNo++ * PER_CONNECTION) % spec.probes.length));
    },
  };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const limitS = spec.durationS + 30;
    const guard = setTimeout(() => {
      instance.stop();
      reject(new Error(`autocannon did not finish within ${limitS} s`));
    }, limitS * 1000);
    const instance = autocannon(options, (err: unknown, r) => {
      clearTimeout(guard);
      if (err !== null && err !== undefined) reject(err instanceof Error ? err : new Error(String(err)));
      else resolve(r);
    });
    // A connection's first answer waited for every other connection to be set up: not a latency.
    const started = new WeakSet<object>();
    instance.on('response', (client, _status, _bytes, responseTime) => {
      if (started.has(client)) samples.add(responseTime);
      else started.add(client);
    });
  });
  const requests = result.requests.total;
  return {
    requests,
    durationS: result.duration,
    rps: requests / result.duration,
    latency: samples.latency(),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    tally,
  };
}
