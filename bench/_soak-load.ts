// The load of the soak (bench/soak.ts): MTA hand-offs, API clients and push sockets.
import { createHash } from 'node:crypto';
import WebSocket from 'ws';
import { signToken } from '../lib/auth/index.js';
import { loadConfig } from '../lib/config/index.js';

export interface Mailbox {
  uid: string;
  address: string;
  owner: string;
  token: string;
  inbox: string;
  archive: string;
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** One hand-off's bytes: the corpus message with a header that makes it unique (its sha256 names it). */
export function uniqueRaw(run: string, i: number, base: Buffer): Buffer {
  const nl = base.includes('\r\n') ? '\r\n' : '\n';
  return Buffer.concat([Buffer.from(`X-Soak-Id: ${run}-${i}${nl}`), base]);
}

/** 1–3 distinct recipient mailboxes for hand-off i. */
export function recipientsOf(i: number, boxes: Mailbox[]): Mailbox[] {
  const picked = new Set<number>();
  for (let k = 0; k < 1 + (i % 3); k++) picked.add((i * 7 + k * 13) % boxes.length);
  return [...picked].map((n) => boxes[n]);
}

export interface HandoffStats {
  /** `${mailboxUid}|${sha256}` of every copy the hand-off acknowledged (202, queued or duplicate on a retry). */
  acknowledged: Set<string>;
  latencies: number[];
  retries: number;
  /** Hand-offs that never got a 202 after every retry. */
  failed: number;
  refusedRecipients: number;
}

/** `senders` connections hand off `count` messages to POST /internal/mta/deliver; a failed try is retried with the same transaction id. */
export async function handOff(
  url: string,
  secret: string,
  run: string,
  count: number,
  senders: number,
  corpus: Buffer[],
  boxes: Mailbox[],
): Promise<HandoffStats> {
  const byAddress = new Map(boxes.map((b) => [b.address, b.uid]));
  const stats: HandoffStats = { acknowledged: new Set(), latencies: [], retries: 0, failed: 0, refusedRecipients: 0 };
  let next = 0;
  await Promise.all(
    Array.from({ length: senders }, async () => {
      while (next < count) {
        const i = next++;
        const raw = uniqueRaw(run, i, corpus[i % corpus.length]);
        const sha = sha256(raw);
        const rcpts = recipientsOf(i, boxes).map((b) => b.address);
        for (let attempt = 0; ; attempt++) {
          const t = performance.now();
          try {
            const res = await fetch(`${url}/internal/mta/deliver`, {
              method: 'POST',
              body: new Uint8Array(raw),
              headers: {
                authorization: `Bearer ${secret}`,
                'x-envelope-from': 'sender%40remote.example',
                'x-envelope-to': rcpts.map(encodeURIComponent).join(','),
                'x-transaction-id': `${run}-${i}`,
              },
            });
            const body = (await res.json()) as { results?: Array<{ recipient: string; status: string }> };
            if (res.status === 202) {
              stats.latencies.push(performance.now() - t);
              for (const r of body.results ?? []) {
                if (r.status === 'queued' || r.status === 'duplicate') stats.acknowledged.add(`${byAddress.get(r.recipient)}|${sha}`);
                else stats.refusedRecipients++;
              }
              break;
            }
          } catch {
            /* a reset connection: try again, as an MTA would */
          }
          if (attempt >= 4) {
            stats.failed++;
            break;
          }
          stats.retries++;
          await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
        }
      }
    }),
  );
  return stats;
}

export interface ClientStats {
  ops: Record<'list' | 'read' | 'flag' | 'move', number[]>;
  statuses: Record<string, number>;
}

/**
 * One API client acting as the owner of `box` until `stop()` says so: list the Inbox, read a
 * message, flag it and mark it read, and now and then move one to the Archive and back.
 */
export async function apiClient(url: string, box: Mailbox, stop: () => boolean, stats: ClientStats, seed: number): Promise<void> {
  let rnd = seed;
  const random = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const call = async (op: keyof ClientStats['ops'], method: string, path: string, body?: unknown): Promise<unknown> => {
    const t = performance.now();
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${box.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const out = res.headers.get('content-type')?.includes('json') ? await res.json() : await res.arrayBuffer();
    stats.ops[op].push(performance.now() - t);
    const key = `${op} ${res.status}`;
    stats.statuses[key] = (stats.statuses[key] ?? 0) + 1;
    return res.ok ? out : null;
  };
  type Msg = { uid: string; version: number; flagged: boolean };
  while (!stop()) {
    try {
      const from = random() < 0.2 ? box.archive : box.inbox;
      const list = (await call('list', 'GET', `/api/mail/messages?folderUid=${from}&sort=-date&limit=50`)) as Msg[] | null;
      if (!list?.length) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      const pick = list[Math.floor(random() * list.length)];
      const msg = (await call('read', 'GET', `/api/mail/messages/${pick.uid}`)) as Msg | null;
      if (!msg) continue;
      const flagged = (await call('flag', 'PUT', `/api/mail/messages/${msg.uid}`, {
        seen: true,
        flagged: !msg.flagged,
        version: msg.version,
      })) as Msg | null;
      if (flagged && random() < 0.25)
        await call('move', 'POST', `/api/mail/messages/${msg.uid}/move`, {
          folderUid: from === box.inbox ? box.archive : box.inbox,
          version: flagged.version,
        });
    } catch {
      const key = 'network error';
      stats.statuses[key] = (stats.statuses[key] ?? 0) + 1;
    }
  }
}

export interface PushStats {
  connected: number;
  events: number;
  byType: Record<string, number>;
  closedEarly: number;
  errors: number;
}

/** `n` push sockets, each signed in as a mailbox owner and subscribed to its Inbox and Archive. */
export async function openSockets(pushUrl: string, n: number, boxes: Mailbox[], stats: PushStats): Promise<{ close(): void }> {
  const sockets: WebSocket[] = [];
  let closing = false;
  for (let start = 0; start < n; start += 200) {
    await Promise.all(
      Array.from(
        { length: Math.min(200, n - start) },
        (_, k) =>
          new Promise<void>((resolve) => {
            const box = boxes[(start + k) % boxes.length];
            const ws = new WebSocket(pushUrl, { headers: { authorization: `Bearer ${box.token}` }, perMessageDeflate: false });
            sockets.push(ws);
            const done = setTimeout(resolve, 30_000);
            ws.on('error', () => {
              stats.errors++;
              clearTimeout(done);
              resolve();
            });
            ws.on('close', () => {
              if (!closing) stats.closedEarly++;
            });
            ws.on('message', (raw) => {
              const f = JSON.parse(raw.toString()) as { type: string; data?: { type?: string; action?: string } };
              if (f.type === 'LOGGED_IN') ws.send(JSON.stringify({ id: 1, type: 'SUBSCRIBE', data: [box.inbox, box.archive] }));
              else if (f.type === 'SUBSCRIBED') {
                stats.connected++;
                clearTimeout(done);
                resolve();
              } else if (f.type === 'MESSAGE') {
                stats.events++;
                const key = `${f.data?.type}.${f.data?.action}`;
                stats.byType[key] = (stats.byType[key] ?? 0) + 1;
              }
            });
          }),
      ),
    );
  }
  return {
    close() {
      closing = true;
      for (const ws of sockets) ws.terminate();
    },
  };
}

/**
 * A domain and `count` mailboxes (user<i>@<domain>, owned by user<i>) created through the API as an
 * elevated administrator, each with its owner's token and its Inbox and Archive folders.
 */
export async function seedMailboxes(
  url: string,
  opts: { secret: string; audience: string; domain: string; count: number; ttlSeconds: number },
): Promise<Mailbox[]> {
  const config = loadConfig({
    env: { NODE_ENV: 'production' },
    values: { 'auth:secret': opts.secret, 'auth:options:audience': opts.audience, 'auth:options:issuer': opts.audience },
  });
  const admin = await signToken(config, { uid: 'root', roles: ['admin'], elevated: true });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(url + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { uid: string };
  };
  await post('/api/mail/domains', { name: opts.domain, verified: true });
  const boxes: Mailbox[] = [];
  for (let i = 0; i < opts.count; i++) {
    const address = `user${i}@${opts.domain}`;
    const { uid } = await post('/api/mail/mailboxes', { address, owners: [`user${i}`] });
    const token = await signToken(config, { uid: `user${i}`, ttlSeconds: opts.ttlSeconds });
    const res = await fetch(`${url}/api/mail/folders?mailboxUid=${uid}`, { headers: { authorization: `Bearer ${token}` } });
    const folders = (await res.json()) as Array<{ uid: string; role: string }>;
    const folder = (role: string) => folders.find((f) => f.role === role)!.uid;
    boxes.push({ uid, address, owner: `user${i}`, token, inbox: folder('inbox'), archive: folder('archive') });
  }
  return boxes;
}
