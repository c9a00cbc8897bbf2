/**
 * The minimal ceiling: the least a uWebSockets.js has_permission handler can do. It reads the
 * Authorization header and both route parameters (as any such handler must) and answers 200 with
 * one fixed body (the gateway's own `true` answer, so the same size) and uWS's own headers only:
 * no request id, no revision, no content type. Beside it, bare-server.ts adds what the contract
 * requires of every answer; the gateway's CPU per request over this one's is what the whole
 * service costs above the HTTP engine itself.
 *
 * Env: BARE_PORT, MINIMAL_BODY. Run as its own process by bench/lib/gateway.ts.
 */
import uWS from 'uWebSockets.js';

const port = Number(process.env.BARE_PORT);
const body = Buffer.from(process.env.MINIMAL_BODY ?? '{"success":true,"code":200,"message":"OK","data":{"has_permission":true}}');
const parentPid = process.ppid;
let seen = 0;

const app = uWS.App();
app.get('/api/has_permission/:user/:permission', (res, req) => {
  // Read, and kept alive for the optimiser: a handler that ignored its input would cost less than any real one.
  seen += req.getHeader('authorization').length + (req.getParameter(0)?.length ?? 0) + (req.getParameter(1)?.length ?? 0);
  res.end(body);
});
app.any('/*', (res) => {
  res.writeStatus('404 Not Found').end();
});
app.listen('127.0.0.1', port, (token) => {
  if (token === false) {
    console.error(JSON.stringify({ msg: 'listen failed', port }));
    process.exit(1);
  }
  console.log(JSON.stringify({ event: 'primary.listening', msg: 'listening', port }));
});

setInterval(() => {
  if (process.ppid !== parentPid) process.exit(0);
}, 1_000).unref();
process.on('SIGTERM', () => {
  if (seen < 0) console.log(seen);
  process.exit(0);
});
