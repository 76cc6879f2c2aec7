// `svcmail deliver --json`, run as Postfix pipe(8) runs it (message on stdin) against a real api:
// one JSON object on stdout whatever the outcome, and the sysexits code unchanged.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshSqlite } from '../../helpers/databases.js';
import { freePort } from '../../helpers/scanners.js';
import { ingestFixture, message, INGEST_SECRET, type IngestFixture } from '../ingest/setup.js';

const BIN = fileURLToPath(new URL('../../../bin/svcmail.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function deliver(args: string[], stdin: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'deliver', ...args], {
      env: { ...process.env, NODE_ENV: 'test', SVCMAIL_CONFIG: '', SVCMAIL_INGEST_SECRET: INGEST_SECRET, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined); // a usage error exits before reading stdin
    child.stdin.end(stdin);
  });
}

/** stdout must be exactly one JSON object (nothing before or after it). */
function report(r: Run): Record<string, unknown> {
  const parsed = JSON.parse(r.stdout) as unknown;
  expect(parsed, r.stdout).toBeTypeOf('object');
  return parsed as Record<string, unknown>;
}

describe('svcmail deliver --json', { timeout: 120_000 }, () => {
  let f: IngestFixture;
  beforeAll(async () => {
    f = await ingestFixture({ name: 'sqlite', open: async () => freshSqlite() }, { 'mail:ingest:max_message_bytes': 32 * 1024 });
  });
  afterAll(async () => f?.close());

  it('delivered: the outcome, queue id, transaction id, per-recipient results, status and exit code 0 on stdout only', async () => {
    const r = await deliver(
      ['--json', '--url', f.api.url, '-f', 'sender@remote.example', '-q', '7AbCdE1234', '--', 'alice@example.test'],
      message({ subject: 'json' }),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(report(r)).toEqual({
      outcome: 'delivered',
      exitCode: 0,
      status: '2.0.0',
      text: 'alice@example.test: queued',
      queueId: '7AbCdE1234',
      transactionId: 'mta:7AbCdE1234',
      queued: 1,
      recipients: [{ recipient: 'alice@example.test', status: 'queued', mailboxes: 1 }],
      httpStatus: 202,
      error: null,
    });
    const again = await deliver(
      ['--url', f.api.url, '--json', '-f', 'sender@remote.example', '-q', '7AbCdE1234', '--', 'alice@example.test'],
      message({ subject: 'json' }),
    );
    expect(again.code).toBe(0);
    expect(report(again)).toMatchObject({
      outcome: 'delivered',
      queued: 0,
      recipients: [{ recipient: 'alice@example.test', status: 'duplicate' }],
    });
  });

  it("an unknown user bounces: exit 67, status 5.1.1, the recipient's reason", async () => {
    const r = await deliver(['--json', '--url', f.api.url, '-f', 'a@remote.example', '--', 'ghost@example.test'], message());
    expect(r.code).toBe(67);
    expect(report(r)).toMatchObject({
      outcome: 'bounced',
      exitCode: 67,
      status: '5.1.1',
      text: 'ghost@example.test: no such recipient',
      httpStatus: 202,
      recipients: [{ recipient: 'ghost@example.test', status: 'unknown' }],
    });
  });

  it("a domain not served bounces with 5.1.2 and the service's error", async () => {
    const r = await deliver(['--json', '--url', f.api.url, '-f', 'a@remote.example', '--', 'x@nowhere.example'], message());
    expect(r.code).toBe(67);
    const out = report(r);
    expect(out).toMatchObject({ outcome: 'bounced', exitCode: 67, status: '5.1.2', httpStatus: 403, recipients: [] });
    expect(out.error).toMatchObject({ code: expect.stringMatching(/^api-1\d\d$/) });
  });

  it('too large: exit 69 (5.3.4); a wrong secret and an unreachable service defer with 75 (4.3.0)', async () => {
    const big = await deliver(
      ['--json', '--url', f.api.url, '-f', 'a@remote.example', '--', 'alice@example.test'],
      message({ body: 'y'.repeat(40 * 1024) }),
    );
    expect(big.code).toBe(69);
    expect(report(big)).toMatchObject({ outcome: 'bounced', exitCode: 69, status: '5.3.4', httpStatus: 413 });
    const wrong = await deliver(['--json', '--url', f.api.url, '-f', 'a@remote.example', '--', 'alice@example.test'], message(), {
      SVCMAIL_INGEST_SECRET: 'wrong-secret-000000',
    });
    expect(wrong.code).toBe(75);
    expect(report(wrong)).toMatchObject({ outcome: 'deferred', exitCode: 75, status: '4.3.0', httpStatus: 403 });
    const down = await deliver(
      ['--json', '--url', `http://127.0.0.1:${await freePort()}`, '-f', 'a@remote.example', '-q', 'Q1', '--', 'alice@example.test'],
      message(),
    );
    expect(down.code).toBe(75);
    expect(down.stderr).toBe('');
    expect(report(down)).toMatchObject({
      outcome: 'deferred',
      exitCode: 75,
      status: '4.3.0',
      text: expect.stringMatching(/unreachable/),
      queueId: 'Q1',
      httpStatus: null,
      recipients: [],
    });
  });

  it('a usage error still prints one object, exit 64', async () => {
    const r = await deliver(['--json', '--', 'alice@example.test'], message());
    expect(r.code).toBe(64);
    expect(report(r)).toMatchObject({ outcome: 'bounced', exitCode: 64, status: '5.3.0', text: expect.stringMatching(/--from/) });
  });

  it('without --json stdout stays empty and the status line goes to stderr, as pipe(8) expects', async () => {
    const r = await deliver(['--url', f.api.url, '-f', 'a@remote.example', '--', 'ghost@example.test'], message());
    expect(r.code).toBe(67);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('5.1.1 ghost@example.test: no such recipient\n');
  });
});
