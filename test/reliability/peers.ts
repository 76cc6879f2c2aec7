// Network peers that misbehave on purpose: a TCP proxy in front of a real service that can stop
// answering (black hole) or go away (connection refused), and a server that accepts connections and
// never answers (a hanging scanner).
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface Proxy {
  port: number;
  /** Connections stay open but nothing goes through any more (a network black hole). */
  blackhole(): void;
  /** Every connection is cut and new ones are refused. */
  close(): Promise<void>;
}

export async function tcpProxy(target: { host: string; port: number }): Promise<Proxy> {
  const sockets = new Set<Socket>();
  let holes = false;
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
    return s;
  };
  const server: Server = createServer((client) => {
    track(client);
    if (holes) {
      client.on('data', () => undefined);
      return;
    }
    const upstream = track(connect(target));
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    blackhole() {
      holes = true;
      for (const s of sockets) {
        s.unpipe();
        s.removeAllListeners('close');
        s.on('data', () => undefined); // read and drop: the peer's writes succeed, no answer ever comes
      }
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Accepts connections, reads whatever comes, never answers and never closes (until stop). */
export async function silentServer(): Promise<{ port: number; connections: number; stop(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((s) => {
    connections += 1;
    sockets.add(s);
    s.on('data', () => undefined);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    get connections() {
      return connections;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
