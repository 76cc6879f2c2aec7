import { Agent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type Server } from 'node:http';
import { createConnection, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { RequestHandler } from 'express';
import { ApiError } from '../../lib/errors/index.js';
import {
  addressKey,
  answerHead,
  carriesCredentials,
  clientAddress,
  RefusalMemory,
  tooManyRequests,
  trustOfServer,
  upgradeRefusal,
} from '../../lib/http/index.js';
import type { Logger } from '../../lib/log/index.js';

/** "host:port" or a unix socket path, as listen:* spell it. */
function connectTo(address: string): Socket {
  if (address.startsWith('/')) return createConnection(address);
  const i = address.lastIndexOf(':');
  return createConnection(Number(address.slice(i + 1)), address.slice(0, i).replace(/^\[|\]$/g, ''));
}

/** Headers that name the client address: the front door sends only its own X-Forwarded-For. */
const CLIENT_ADDRESS_HEADERS = new Set(['x-forwarded-for', 'forwarded', 'x-real-ip']);

/**
 * The front door without nginx (Architecture: Supervision): WebSocket upgrades on /push are
 * passed to the push daemon byte for byte but for the client address, so one base URL serves
 * everything. Origin, cookies and Authorization go on unchanged: the push daemon makes every
 * decision itself. The client address is decided here as req.ip is for the api's own requests
 * (the app's 'trust proxy', i.e. trusted_proxies only) and sent as the one X-Forwarded-For, any the
 * client sent dropped: the push daemon believes X-Forwarded-For from loopback, so a header passed
 * through unchanged would let a client name any address and dodge the per-address limit.
 *
 * Rate limiting (Spec: Limits) is counted by the push daemon alone, once per upgrade, under the
 * address given here: counting here as well would count each upgrade twice in the counters shared
 * through Redis (halving the limit), or keep a second, unshared count per api copy without it. The
 * front door only remembers the push daemon's 429 verdicts for an address (until their
 * Retry-After) and answers that address's next upgrades without a token itself, so a flood through
 * the front door stops here without reaching the push daemon. An upgrade carrying a token always
 * goes on: the push daemon may sign it in and count it per user instead, as the API does. nginx
 * does the same with packaging/nginx/svcmail.conf (the push daemon reads the address it appends).
 */
export function forwardPushUpgrades(server: Server, pushAddress: string, log: Logger): void {
  const refused = new RefusalMemory();
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    client.on('error', () => undefined);
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/push') {
      client.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const address = clientAddress(req, trustOfServer(server));
    const key = addressKey(address);
    const anonymous = !carriesCredentials(req);
    const left = anonymous ? refused.secondsLeft(key) : 0;
    if (left) {
      client.end(upgradeRefusal(tooManyRequests(left)));
      return;
    }
    const upstream = connectTo(pushAddress);
    upstream.setNoDelay(true);
    upstream.once('error', (e) => {
      log.warn({ err: e.message, push: pushAddress }, 'front door: push daemon unreachable');
      client.end('HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    });
    upstream.once('connect', () => {
      upstream.removeAllListeners('error');
      upstream.on('error', () => client.destroy());
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        if (!CLIENT_ADDRESS_HEADERS.has(req.rawHeaders[i].toLowerCase())) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      }
      lines.push(`X-Forwarded-For: ${address}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      client.pipe(upstream).pipe(client);
      // The push daemon writes a refusal's head in one piece (lib/http/upgrade-limit.ts upgradeRefusal).
      if (anonymous) {
        upstream.once('data', (chunk: Buffer) => {
          const answer = answerHead(chunk);
          if (answer?.status === 429) refused.remember(key, answer.retryAfter ?? 60);
        });
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  });
}

/** The paths the protocols daemon serves (Spec: Protocol plugin routes), as packaging/nginx/svcmail.conf routes them. */
export function isProtocolPath(path: string): boolean {
  const p = path.toLowerCase();
  return (
    p === '/vendor-server-activesync' ||
    p.startsWith('/vendor-server-activesync/') ||
    p === '/microsoft-server-activesync' ||
    p.startsWith('/microsoft-server-activesync/') ||
    p === '/mapi' ||
    p.startsWith('/mapi/') ||
    p.startsWith('/autodiscover/')
  );
}

// Hop-by-hop headers (RFC 9110 7.6.1) belong to one connection and are not passed on.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
]);

/**
 * The front door without nginx for plain HTTP: requests for the protocol paths are streamed to the
 * protocols daemon (listen:protocols) and its answer streamed back, so one base URL serves
 * everything. The api daemon has already decided the client address (through trusted_proxies)
 * and passes it in X-Forwarded-For, which the protocols daemon believes from loopback. When the
 * protocols daemon cannot be reached the answer is 502 api-122. Mount first: the body must still
 * be unread.
 */
export function forwardProtocolRequests(address: string, log: Logger): RequestHandler {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const target = address.startsWith('/')
    ? { socketPath: address }
    : {
        host: address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, ''),
        port: Number(address.slice(address.lastIndexOf(':') + 1)),
      };
  return (req, res, next) => {
    if (!isProtocolPath(req.path)) return next();
    const headers: OutgoingHttpHeaders = {};
    // Expect: 100-continue was already answered by this server.
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && k !== 'expect' && v !== undefined) headers[k] = v;
    if (req.headers['transfer-encoding']) delete headers['content-length'];
    headers['x-forwarded-for'] = req.ip ?? req.socket.remoteAddress ?? '';
    headers['x-forwarded-proto'] = req.protocol;
    const upstream = httpRequest({ ...target, agent, method: req.method, path: req.originalUrl, headers });
    upstream.on('response', (answer) => {
      const out: string[] = [];
      for (let i = 0; i < answer.rawHeaders.length; i += 2)
        if (!HOP_BY_HOP.has(answer.rawHeaders[i].toLowerCase())) out.push(answer.rawHeaders[i], answer.rawHeaders[i + 1]);
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    upstream.on('error', (e) => {
      if (res.headersSent || res.destroyed) return res.destroy();
      log.warn({ err: e.message, protocols: address }, 'front door: protocols daemon unreachable');
      req.resume(); // drain what the client still sends, so the 502 reaches it
      next(new ApiError('api-122'));
    });
    // A client that goes away (a long poll given up) ends the upstream request too.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  };
}
