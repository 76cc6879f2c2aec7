import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { socketmapServer } from '../../../lib/mta-client/index.js';
import { freshSqlite } from '../../helpers/databases.js';
import { freePort } from '../../helpers/scanners.js';
import { ingestFixture, message, INGEST_SECRET, type IngestFixture } from './setup.js';

const BIN = fileURLToPath(new URL('../../../bin/svcmail.js', import.meta.url));

/** Runs `svcmail deliver` exactly as Postfix pipe(8) does: message on stdin, exit code back. */
function deliverCmd(args: string[], stdin: string, env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'deliver', ...args], {
      env: { ...process.env, NODE_ENV: 'test', SVCMAIL_CONFIG: '', ...env },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stderr }));
    child.stdin.end(stdin);
  });
}

function socketmap(port: number, query: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port }, () => s.write(`${Buffer.byteLength(query)}:${query},`));
    let buf = '';
    s.on('data', (d) => {
      buf += d;
      const m = /^(\d+):/.exec(buf);
      if (m && buf.length >= m[0].length + Number(m[1]) + 1) {
        s.destroy();
        resolve(buf.slice(m[0].length, m[0].length + Number(m[1])));
      }
    });
    s.on('error', reject);
  });
}

describe('svcmail deliver (pipe command) and the socketmap helper', () => {
  let f: IngestFixture;
  const env = () => ({ SVCMAIL_INGEST_SECRET: INGEST_SECRET });
  beforeAll(async () => {
    f = await ingestFixture({ name: 'sqlite', open: async () => freshSqlite() }, { 'mail:ingest:max_message_bytes': 32 * 1024 });
  });
  afterAll(async () => f?.close());

  it('exit 0 and one queued entry; the same queue id again creates no duplicate', async () => {
    const raw = message({ subject: 'via pipe' });
    const a = await deliverCmd(
      ['--url', f.api.url, '-f', 'sender@remote.example', '-q', '4XyZ12AbC', '--', 'alice@example.test'],
      raw,
      env(),
    );
    expect(a).toMatchObject({ code: 0 });
    expect(a.stderr).toMatch(/alice@example.test: queued/);
    const b = await deliverCmd(
      ['--url', f.api.url, '-f', 'sender@remote.example', '-q', '4XyZ12AbC', '--', 'alice@example.test'],
      raw,
      env(),
    );
    expect(b.code).toBe(0);
    expect(b.stderr).toMatch(/duplicate/);
    const rows = await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: 'mta:4XyZ12AbC' } });
    expect(rows).toHaveLength(1);
    expect(rows[0].size).toBe(Buffer.byteLength(raw));
  });

  it.each([
    ['unknown user → 67', ['-f', 'a@remote.example', '--', 'ghost@example.test'], {}, 67],
    ['domain not served → 67', ['-f', 'a@remote.example', '--', 'x@nowhere.example'], {}, 67],
    [
      'wrong secret → 75 (deferred, not bounced)',
      ['-f', 'a@remote.example', '--', 'alice@example.test'],
      { SVCMAIL_INGEST_SECRET: 'wrong-secret-000000' },
      75,
    ],
  ])('%s', async (_name, args, extraEnv, code) => {
    const r = await deliverCmd(['--url', f.api.url, ...args], message(), { ...env(), ...extraEnv });
    expect(r.code, r.stderr).toBe(code);
  });

  it('service unreachable → 75; message too large → 69', async () => {
    const down = await deliverCmd(
      ['--url', `http://127.0.0.1:${await freePort()}`, '-f', 'a@remote.example', '--', 'alice@example.test'],
      message(),
      env(),
    );
    expect(down.code).toBe(75);
    const big = await deliverCmd(
      ['--url', f.api.url, '-f', 'a@remote.example', '--', 'alice@example.test'],
      message({ body: 'y'.repeat(40 * 1024) }),
      env(),
    );
    expect(big.code).toBe(69);
    expect(big.stderr).toMatch(/too large/);
  });

  it('socketmap: domain and resolve answer OK / NOTFOUND; a broken secret answers TEMP', async () => {
    const port = await freePort();
    const server = socketmapServer({ url: f.api.url, secret: INGEST_SECRET });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    const bad = socketmapServer({ url: f.api.url, secret: 'not-the-secret-0000' });
    const badPort = await freePort();
    await new Promise<void>((r) => bad.listen(badPort, '127.0.0.1', r));
    try {
      expect(await socketmap(port, 'domain example.test')).toBe('OK svcmail');
      expect(await socketmap(port, 'domain nowhere.example')).toBe('NOTFOUND ');
      expect(await socketmap(port, 'resolve alice@example.test')).toBe('OK alice@example.test');
      expect(await socketmap(port, 'resolve ghost@example.test')).toBe('NOTFOUND ');
      expect(await socketmap(badPort, 'resolve alice@example.test')).toMatch(/^TEMP /);
    } finally {
      server.close();
      bad.close();
    }
  });
});
