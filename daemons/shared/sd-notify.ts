// sd_notify(3) over the NOTIFY_SOCKET datagram socket, with unix-dgram (node:dgram has no AF_UNIX).
// systemd (Type=notify) waits for READY=1 before it counts the unit started, kills it when the
// WATCHDOG=1 pings stop for WatchdogSec, and shows STATUS= in `systemctl status`.
import { createRequire } from 'node:module';

interface DgramSocket {
  send(buf: Buffer, offset: number, length: number, path: string, cb?: (err?: Error) => void): void;
  close(): void;
  on(event: 'error', fn: (err: Error) => void): void;
}

const require = createRequire(import.meta.url);

export interface Notifier {
  /** False when not started by a service manager (no NOTIFY_SOCKET): every call is then a no-op. */
  readonly active: boolean;
  ready(status?: string): Promise<void>;
  status(text: string): Promise<void>;
  stopping(status?: string): Promise<void>;
  watchdog(): Promise<void>;
  /** Pings WATCHDOG=1 at half of WATCHDOG_USEC while alive() says so; returns the stop function. */
  startWatchdog(alive?: () => boolean): () => void;
  close(): void;
}

/** Half the watchdog interval in ms, or null when systemd asked for none (or asked another process). */
export function watchdogIntervalMs(env: NodeJS.ProcessEnv = process.env, pid = process.pid): number | null {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isFinite(usec) || usec <= 0) return null;
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return null;
  return Math.max(1, Math.floor(usec / 2000));
}

export function createNotifier(env: NodeJS.ProcessEnv = process.env, onError: (e: Error) => void = () => undefined): Notifier {
  const path = env.NOTIFY_SOCKET;
  // unix-dgram copies the path with strncpy, so abstract sockets (@name) cannot be addressed.
  const usable = Boolean(path) && !path!.startsWith('@');
  if (path?.startsWith('@'))
    onError(new Error(`NOTIFY_SOCKET ${path} is an abstract socket, which is not supported; readiness is not reported`));
  let socket: DgramSocket | null = null;
  const send = (text: string) =>
    new Promise<void>((resolve) => {
      if (!usable) return resolve();
      try {
        if (!socket) {
          const unix = require('unix-dgram') as { createSocket(type: 'unix_dgram'): DgramSocket };
          socket = unix.createSocket('unix_dgram');
          socket.on('error', onError);
        }
        const buf = Buffer.from(text);
        socket.send(buf, 0, buf.length, path!, (err) => {
          if (err) onError(err);
          resolve();
        });
      } catch (e) {
        onError(e as Error);
        resolve();
      }
    });
  const withStatus = (head: string, status?: string) => send(status ? `${head}\nSTATUS=${status}` : head);
  return {
    active: usable,
    ready: (status) => withStatus(`READY=1\nMAINPID=${process.pid}`, status),
    status: (text) => send(`STATUS=${text}`),
    stopping: (status) => withStatus('STOPPING=1', status),
    watchdog: () => send('WATCHDOG=1'),
    startWatchdog(alive = () => true) {
      const every = watchdogIntervalMs(env);
      if (!usable || every === null) return () => undefined;
      const timer = setInterval(() => {
        if (alive()) void send('WATCHDOG=1');
      }, every);
      timer.unref();
      return () => clearInterval(timer);
    },
    close() {
      try {
        socket?.close();
      } catch {
        /* already closed */
      }
      socket = null;
    },
  };
}
