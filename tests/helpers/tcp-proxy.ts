/**
 * A TCP proxy the tests can cut: a real network fault between the service and its database.
 * `cut()` resets every open connection and stops listening (new connections are refused);
 * `restore()` listens again on the same port.
 */
import net from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Connections open through the proxy right now. */
  readonly open: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Resets a connected socket (the peer sees ECONNRESET); a socket still connecting is only
 * destroyed. The outage test's process was once seen spinning in Node's exit clean-up
 * (node::Environment::CleanupHandles, by gdb) after its tests had run; resetting a handle that
 * had not connected yet is the one unusual close this proxy made, so it makes it no more.
 */
function reset(s: net.Socket): void {
  if (s.pending || s.connecting) s.destroy();
  else s.resetAndDestroy();
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  let server: net.Server | undefined;
  const listen = (port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      const srv = net.createServer((client) => {
        const upstream = net.connect({ host: targetHost, port: targetPort });
        track(client);
        track(upstream);
        client.pipe(upstream);
        upstream.pipe(client);
        const resetBoth = (): void => {
          reset(client);
          reset(upstream);
        };
        client.on('error', resetBoth);
        upstream.on('error', resetBoth);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      srv.on('error', reject);
      srv.listen(port, '127.0.0.1', () => {
        server = srv;
        const addr = srv.address();
        resolve(typeof addr === 'object' && addr !== null ? addr.port : port);
      });
    });
  const port = await listen(0);
  const stopListening = (): Promise<void> =>
    new Promise((resolve) => {
      const srv = server;
      server = undefined;
      if (srv === undefined) return resolve();
      srv.close(() => resolve());
    });
  return {
    port,
    get open() {
      return sockets.size;
    },
    async cut() {
      const closing = stopListening();
      for (const s of sockets) reset(s);
      await closing;
    },
    async restore() {
      if (server === undefined) await listen(port);
    },
    async close() {
      const closing = stopListening();
      for (const s of sockets) s.destroy();
      await closing;
    },
  };
}
