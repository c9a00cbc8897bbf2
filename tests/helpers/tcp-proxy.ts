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
        const reset = (): void => {
          client.resetAndDestroy();
          upstream.resetAndDestroy();
        };
        client.on('error', reset);
        upstream.on('error', reset);
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
      for (const s of sockets) s.resetAndDestroy();
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
