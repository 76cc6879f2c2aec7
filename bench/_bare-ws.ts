// The peer of the push benchmark: a bare `ws` server with no auth, no ACL and no event channel.
// Client i connects to /?i=<n>; the publisher connects to /pub and sends {i, frame}; the server
// writes the frame to socket i. Prints {"port": n} once listening.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

const sockets = new Map<number, WebSocket>();
const server = createServer();
const wss = new WebSocketServer({ server, perMessageDeflate: false });
wss.on('connection', (ws, req) => {
  const url = new URL(req.url ?? '/', 'http://bare.invalid');
  if (url.pathname === '/pub') {
    ws.on('message', (raw) => {
      const { i, frame } = JSON.parse(raw.toString()) as { i: number; frame: string };
      sockets.get(i)?.send(frame);
    });
    return;
  }
  const i = Number(url.searchParams.get('i'));
  sockets.set(i, ws);
  ws.on('close', () => sockets.delete(i));
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`));
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => process.exit(0));
