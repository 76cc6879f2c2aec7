import { chmodSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import type { Logger } from '../log/index.js';
import type { Transport, WireMessage } from './types.js';

/** A peer whose unsent data passes this is cut off; it reconnects (never unbounded memory in the hub). */
const PEER_MAX_BUFFER = 64 * 1024 * 1024;
const LINE_MAX = 16 * 1024 * 1024;
/** Messages kept while the hub is changing hands (its host restarted); the oldest go first. */
const PENDING_MAX = 10_000;
/** Peers retry every 30–100 ms; a new host waits this long before sending what it queued. */
const HANDOVER_MS = 300;
/** Lines written this recently before the hub went away may have died with it: they are sent again (at-least-once). */
const RESEND_MS = 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A process's start time (clock ticks since boot, /proc/<pid>/stat field 22); '' where /proc is absent. */
function startTimeOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

/** The lock names its holder by pid and start time, so a pid reused after a reboot is not taken for the holder. */
const LOCK_TEXT = `${process.pid} ${startTimeOf(process.pid)}`;

function holderAlive(text: string): boolean {
  const [pidText, start = ''] = text.trim().split(' ');
  const pid = Number(pidText);
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !start || startTimeOf(pid) === '' || startTimeOf(pid) === start;
}

/** Splits newline-delimited JSON from a stream; a line that never ends is refused. */
function lineReader(sock: Socket, onLine: (line: string) => void): void {
  let buf = '';
  sock.setEncoding('utf8');
  sock.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line) onLine(line);
    }
    if (buf.length > LINE_MAX) sock.destroy();
  });
}

/**
 * The embedded shared event channel for one host, needing no extra server. Every daemon connects
 * to a unix socket under data_dir; when nobody answers there, the first one to take the lock file
 * hosts the hub in its own process and the others connect to it. The hub forwards each message to
 * every other peer. When the host stops (or dies), the others elect a new host within a fraction of
 * a second and send what they queued meanwhile, plus what they wrote in the last second before the
 * host went away (it may have died unread): an event can then arrive twice, never silently not at all.
 * The lock names its holder by pid and start time, so a stale lock after a crash or reboot is taken over. Why a socket and not a database log: no polling
 * delay and no write per event on the mail store; the socket file mode (0600, directory 0700) keeps
 * other local users from reading or forging events, which an abstract socket or loopback port would not.
 */
export class HubTransport implements Transport {
  readonly name = 'hub' as const;
  #deliver: (msg: WireMessage) => void = () => undefined;
  #server: Server | null = null;
  readonly #peers = new Set<Socket>();
  #conn: Socket | null = null;
  #pending: string[] = [];
  #recent: Array<{ at: number; line: string }> = [];
  #closed = false;
  #ownerCheck: NodeJS.Timeout | null = null;

  constructor(
    readonly path: string,
    private readonly log?: Logger,
  ) {
    if (Buffer.byteLength(path) > 100) throw new Error(`events:hub:socket: ${path} is too long for a unix socket (100 bytes at most)`);
  }

  get lockPath(): string {
    return `${this.path}.lock`;
  }

  /** Whether this process hosts the hub (for status and tests). */
  get hosting(): boolean {
    return this.#server !== null;
  }

  async start(deliver: (msg: WireMessage) => void): Promise<void> {
    this.#deliver = deliver;
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    await this.#join();
  }

  async #join(): Promise<void> {
    for (let attempt = 0; !this.#closed; attempt++) {
      if (await this.#connect()) return;
      if (await this.#host()) return;
      await sleep(30 + Math.random() * 70);
      if (attempt === 200) this.log?.warn({ path: this.path }, 'event hub: still cannot join or host the hub');
    }
  }

  #connect(): Promise<boolean> {
    return new Promise((resolve) => {
      const sock = createConnection(this.path);
      sock.once('error', () => resolve(false));
      sock.once('connect', () => {
        sock.removeAllListeners('error');
        sock.setNoDelay(true);
        this.#conn = sock;
        lineReader(sock, (line) => this.#parse(line));
        sock.on('error', () => undefined);
        sock.on('close', () => {
          if (this.#conn === sock) this.#conn = null;
          const since = Date.now() - RESEND_MS;
          this.#pending.unshift(...this.#recent.filter((r) => r.at >= since).map((r) => r.line));
          this.#recent = [];
          if (!this.#closed) void this.#join(); // #connect and #host send the queue
        });
        this.#flush();
        resolve(true);
      });
    });
  }

  async #host(): Promise<boolean> {
    try {
      writeFileSync(this.lockPath, LOCK_TEXT, { flag: 'wx', mode: 0o600 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = readFileSync(this.lockPath, 'utf8');
      // A live holder is (becoming) the host: try to connect again. A dead one left a stale lock.
      if (holder.trim() !== LOCK_TEXT && !holderAlive(holder)) {
        try {
          if (readFileSync(this.lockPath, 'utf8') === holder) unlinkSync(this.lockPath);
        } catch {
          /* someone else cleaned up */
        }
      }
      return false;
    }
    try {
      unlinkSync(this.path);
    } catch {
      /* no stale socket */
    }
    const server = createServer((sock) => this.#peer(sock));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.path, () => resolve());
    });
    chmodSync(this.path, 0o600);
    this.#server = server;
    this.log?.info({ path: this.path }, 'event hub: hosting');
    // Self-healing against a lock race: a host whose lock now names another process steps down.
    this.#ownerCheck = setInterval(() => {
      let owner = '';
      try {
        owner = readFileSync(this.lockPath, 'utf8');
      } catch {
        /* removed */
      }
      if (owner !== LOCK_TEXT) void this.#stepDown();
    }, 2000);
    this.#ownerCheck.unref();
    // What this process queued while the hub changed hands goes out once the others had time to reconnect.
    setTimeout(() => this.#flush(), HANDOVER_MS).unref();
    return true;
  }

  async #stepDown(): Promise<void> {
    if (!this.#server) return;
    const server = this.#server;
    this.#server = null;
    if (this.#ownerCheck) clearInterval(this.#ownerCheck);
    for (const p of this.#peers) p.destroy();
    this.#peers.clear();
    server.close();
    if (!this.#closed) await this.#join();
  }

  #peer(sock: Socket): void {
    sock.setNoDelay(true);
    this.#peers.add(sock);
    sock.on('error', () => undefined);
    sock.on('close', () => this.#peers.delete(sock));
    lineReader(sock, (line) => {
      this.#broadcast(`${line}\n`, sock);
      this.#parse(line);
    });
  }

  #broadcast(line: string, from: Socket | null): void {
    for (const p of this.#peers) {
      if (p === from) continue;
      if (p.writableLength > PEER_MAX_BUFFER) {
        this.log?.warn('event hub: a peer fell too far behind; disconnected');
        p.destroy();
        continue;
      }
      p.write(line);
    }
  }

  #parse(line: string): void {
    try {
      this.#deliver(JSON.parse(line) as WireMessage);
    } catch {
      this.log?.warn('event hub: malformed message ignored');
    }
  }

  send(msg: WireMessage): void {
    const line = `${JSON.stringify(msg)}\n`;
    if (this.#server) this.#broadcast(line, null);
    else if (this.#conn && !this.#conn.destroyed) {
      const now = Date.now();
      this.#conn.write(line);
      this.#recent.push({ at: now, line });
      if (this.#recent.length > PENDING_MAX || this.#recent[0].at < now - RESEND_MS)
        this.#recent = this.#recent.filter((r) => r.at >= now - RESEND_MS).slice(-PENDING_MAX);
    } else {
      if (this.#pending.length >= PENDING_MAX) this.#pending.shift();
      this.#pending.push(line);
    }
  }

  #flush(): void {
    const lines = this.#pending;
    this.#pending = [];
    for (const l of lines) this.send(JSON.parse(l) as WireMessage);
  }

  watch(): void {
    /* the hub forwards every message; each process filters by its handlers */
  }
  unwatch(): void {
    /* see watch */
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#ownerCheck) clearInterval(this.#ownerCheck);
    this.#conn?.destroy();
    if (this.#server) {
      for (const p of this.#peers) p.destroy();
      await new Promise<void>((r) => this.#server!.close(() => r()));
      this.#server = null;
      try {
        if (readFileSync(this.lockPath, 'utf8') === LOCK_TEXT) {
          unlinkSync(this.path);
          unlinkSync(this.lockPath);
        }
      } catch {
        /* already gone */
      }
    }
  }
}
