import net from 'node:net';

/**
 * Workers share the port through SO_REUSEPORT, which would also let a second instance started on
 * the same port silently take half of the connections. A plain bind without SO_REUSEPORT fails
 * while anyone listens there, so the primary tries one (and releases it) before forking.
 */
export function portIsFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}
