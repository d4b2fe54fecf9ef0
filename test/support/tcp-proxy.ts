// A switchable TCP proxy (node net) standing for the one-writer proxy in front of a Galera cluster
// (HAProxy, MaxScale, ProxySQL): every connection goes to the current target; switch() points new
// connections at another port and cuts the open ones, as HAProxy's `on-marked-down
// shutdown-sessions` does, so no client keeps writing through the old node.
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** The target port new connections go to. */
  readonly target: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  switchTo(port: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: number): Promise<TcpProxy> {
  let current = target;
  let accepted = 0;
  const open = new Set<net.Socket>();
  const cutAll = () => {
    for (const s of open) s.destroy();
    open.clear();
  };
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect(current, '127.0.0.1');
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    get target() {
      return current;
    },
    get accepted() {
      return accepted;
    },
    switchTo(p: number) {
      current = p;
      cutAll();
    },
    close() {
      cutAll();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
