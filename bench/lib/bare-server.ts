/**
 * The ceiling: a bare uWebSockets.js server that does only what any has_permission handler must do
 * (the same route pattern, the same request headers and both parameters read, a body of the same
 * size, the same response headers) and nothing else: no authentication, no graph, no validation.
 * Run as its own process by bench/run.ts, so it gets a core of its own like the gateway.
 *
 * Env: BARE_PORT (or AUTH_SERVER_PORT), BARE_BODY_TRUE / BARE_BODY_FALSE (bodies captured from the gateway),
 * BARE_REVISION (X-Authz-Revision), BARE_REQUEST_ID_LEN (length of generated request ids).
 */
import uWS from 'uWebSockets.js';

// AUTH_SERVER_PORT too: started in a gateway's place, it is a gateway that answers wrongly.
const port = Number(process.env.BARE_PORT ?? process.env.AUTH_SERVER_PORT);
const fallback = '{"success":true,"code":200,"message":"OK","data":{"has_permission":false},"timestamp":"2026-01-01T00:00:00.000000"}';
const bodyFalse = Buffer.from(process.env.BARE_BODY_FALSE ?? fallback);
const bodyTrue = Buffer.from(process.env.BARE_BODY_TRUE ?? fallback);
const revision = process.env.BARE_REVISION ?? '0';
const idLen = Number(process.env.BARE_REQUEST_ID_LEN ?? '16');
const parentPid = process.ppid;

let counter = 0;
let flip = false;
const nextId = (): string => (++counter).toString(16).padStart(idLen, '0');

const app = uWS.App();
app.get('/api/has_permission/:user/:permission', (res, req) => {
  const authorization = req.getHeader('authorization');
  const sentId = req.getHeader('x-request-id');
  req.getHeader('x-authz-min-revision');
  req.getHeader('origin');
  const user = req.getParameter(0) ?? '';
  const permission = req.getParameter(1) ?? '';
  const requestId = sentId.length > 0 && sentId.length <= 128 ? sentId : nextId();
  if (!authorization.startsWith('Bearer ') || user.length === 0) {
    res.cork(() => {
      res.writeStatus('401 Unauthorized').writeHeader('Content-Type', 'application/json').writeHeader('X-Request-Id', requestId).end('{}');
    });
    return;
  }
  // Both bodies in turn, so both sizes are served.
  flip = !flip;
  const body = flip && permission.length > 0 ? bodyTrue : bodyFalse;
  res.cork(() => {
    res
      .writeStatus('200 OK')
      .writeHeader('Content-Type', 'application/json')
      .writeHeader('X-Request-Id', requestId)
      .writeHeader('X-Authz-Revision', revision)
      .end(body);
  });
});
app.any('/*', (res) => {
  res.cork(() => {
    res.writeStatus('404 Not Found').writeHeader('Content-Type', 'application/json').end('{}');
  });
});
app.listen('127.0.0.1', port, (token) => {
  if (token === false) {
    console.error(JSON.stringify({ msg: 'listen failed', port }));
    process.exit(1);
  }
  // Said as the gateway says it (docs/operations.md §8), so the one launcher waits for either the same way.
  console.log(JSON.stringify({ event: 'primary.listening', msg: 'listening', port }));
});

// Never outlive the benchmark, even when it was killed without a chance to clean up.
setInterval(() => {
  if (process.ppid !== parentPid) process.exit(0);
}, 1_000).unref();
process.on('SIGTERM', () => process.exit(0));
