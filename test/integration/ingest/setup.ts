import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type SettingName } from '../../../lib/config/index.js';
import { createLogger } from '../../../lib/log/index.js';
import { mailPort, recordingOutbound, type WorkerDeps } from '../../../lib/ingest/index.js';
import { cleanScanners, realScanners } from '../../../lib/scan/index.js';
import { seedUsers, startTestApi, TEST_SECRET, AUDIENCE, ISSUER, type TestApi } from '../../helpers/api.js';
import { datastoreOf, type Backend } from '../../helpers/databases.js';

export const INGEST_SECRET = 'ingest-secret-0123456789abcdef';

export interface IngestFixture {
  api: TestApi;
  dataDir: string;
  users: Awaited<ReturnType<typeof seedUsers>>;
  /** POST /internal/mta/deliver as the MTA does. */
  deliver(opts: {
    from?: string;
    to: string[];
    raw: string | Buffer;
    tx?: string;
    headers?: Record<string, string>;
    secret?: string;
  }): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Worker-side dependencies over the same store; env production makes scanning fail closed. */
  worker(opts?: { env?: 'test' | 'production'; values?: Partial<Record<SettingName, unknown>>; scanners?: 'real' | 'clean' }): WorkerDeps;
  close(): Promise<void>;
}

export async function ingestFixture(backend: Backend, values: Partial<Record<SettingName, unknown>> = {}): Promise<IngestFixture> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svcmail-ingest-'));
  const base = { data_dir: dataDir, 'mail:transport:ingest:secret': INGEST_SECRET, 'mail:jobs:wake_address': '', ...values } as Partial<
    Record<SettingName, unknown>
  >;
  const api = await startTestApi(backend, base);
  const users = await seedUsers(api);
  return {
    api,
    dataDir,
    users,
    async deliver({ from = 'sender@remote.example', to, raw, tx, headers = {}, secret = INGEST_SECRET }) {
      const res = await fetch(`${api.url}/internal/mta/deliver`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${secret}`,
          'content-type': 'message/rfc822',
          'x-envelope-from': encodeURIComponent(from),
          'x-envelope-to': to.map(encodeURIComponent).join(','),
          ...(tx ? { 'x-transaction-id': tx } : {}),
          ...headers,
        },
        body: typeof raw === 'string' ? raw : new Uint8Array(raw),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    worker({ env = 'test', values: extra = {}, scanners = 'real' } = {}) {
      const config = loadConfig({
        env: { NODE_ENV: env },
        values: {
          'auth:secret': TEST_SECRET,
          'auth:options:audience': AUDIENCE,
          'auth:options:issuer': ISSUER,
          'log:level': 'silent',
          ...datastoreOf(api.config),
          'mail:dns:nameservers': api.config.get('mail:dns:nameservers'),
          ...base,
          'mail:ingest:retry_backoff_seconds': 0,
          ...extra,
        },
      });
      const deps = {
        config,
        store: api.deps.store,
        events: api.deps.events,
        log: createLogger({ level: process.env.TEST_LOG ?? 'silent' }),
      };
      const port = mailPort(deps);
      return {
        ...deps,
        port,
        outbound: recordingOutbound(deps, port),
        scanners: scanners === 'real' ? realScanners(config) : cleanScanners,
        control: {},
      };
    },
    async close() {
      await api.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let seq = 0;
/** A plain RFC 5322 message. */
export function message(
  opts: { from?: string; to?: string; subject?: string; body?: string; headers?: Record<string, string> } = {},
): string {
  const extra = Object.entries(opts.headers ?? {})
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return (
    `From: ${opts.from ?? 'Sender <sender@remote.example>'}\r\nTo: ${opts.to ?? 'alice@example.test'}\r\nSubject: ${opts.subject ?? 'Hello'}\r\n` +
    `Message-ID: <m${Date.now()}.${seq++}@remote.example>\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\n${extra}Content-Type: text/plain; charset=utf-8\r\n\r\n${opts.body ?? 'Hello there, how are you?'}\r\n`
  );
}
