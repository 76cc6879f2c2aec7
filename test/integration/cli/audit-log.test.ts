// The audit log as an administrator reads it: `svcmail admin audit-log list` (spawned) and the API
// route behind it answer newest first; the pages of that order neither overlap nor skip an entry.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE, ISSUER, startTestApi, TEST_SECRET, type TestApi } from '../../helpers/api.js';
import { freshSqlite } from '../../helpers/databases.js';

const BIN = fileURLToPath(new URL('../../../bin/svcmail.js', import.meta.url));

interface Entry {
  uid: string;
  action: string;
  resourceUid: string;
  createdAt: string;
}

describe('audit log order', { timeout: 120_000 }, () => {
  let api: TestApi;
  let admin: string;
  let conf: string;
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-audit-order-'));
  /** The domains' uids in the order they were created. */
  const created: string[] = [];

  const cli = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, '--config', conf, 'admin', '--url', api.url, 'audit-log', 'list', ...args], {
        env: { ...process.env, NODE_ENV: 'test', SVCMAIL_CONFIG: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });

  beforeAll(async () => {
    api = await startTestApi({ name: 'sqlite', open: async () => freshSqlite() });
    admin = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
    conf = join(dir, 'svcmail.conf');
    writeFileSync(conf, JSON.stringify({ 'auth:secret': TEST_SECRET, 'auth:options:audience': AUDIENCE, 'auth:options:issuer': ISSUER }));
    // Five audited changes, one after the other (several may share a millisecond).
    for (let i = 0; i < 5; i++) {
      const r = await api.call('POST', '/api/mail/domains', { token: admin, body: { name: `order${i}.test` } });
      expect(r.status).toBe(201);
      created.push(r.body.uid as string);
    }
  }, 90_000);
  afterAll(async () => {
    await api?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the API lists newest first without ?sort; paging walks that order exactly; ?sort=createdAt still gives oldest first', async () => {
    const all = await api.call('GET', '/api/mail/audit-log?action=domains.create', { token: admin });
    expect(all.status).toBe(200);
    const rows = all.body as Entry[];
    expect(rows.map((e) => e.resourceUid)).toEqual([...created].reverse());
    const times = rows.map((e) => Date.parse(e.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    const paged: string[] = [];
    for (let page = 0; page < 3; page++) {
      const p = await api.call('GET', `/api/mail/audit-log?action=domains.create&limit=2&page=${page}`, { token: admin });
      paged.push(...(p.body as Entry[]).map((e) => e.uid));
    }
    expect(paged).toEqual(rows.map((e) => e.uid));

    const oldest = await api.call('GET', '/api/mail/audit-log?action=domains.create&sort=createdAt', { token: admin });
    expect((oldest.body as Entry[]).map((e) => e.resourceUid)).toEqual(created);
  });

  it('svcmail admin audit-log list prints the newest entry first, in JSON and as text, page by page', async () => {
    const json = await cli(['--json', '--where', 'action=domains.create']);
    expect(json.code, json.stderr).toBe(0);
    expect((JSON.parse(json.stdout) as Entry[]).map((e) => e.resourceUid)).toEqual([...created].reverse());

    const text = await cli(['--where', 'action=domains.create']);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n').filter((l) => l.includes('domains.create'));
    expect(lines.map((l) => created.find((u) => l.includes(u)))).toEqual([...created].reverse());

    const first = await cli(['--json', '--where', 'action=domains.create', '--limit', '2', '--page', '0']);
    const second = await cli(['--json', '--where', 'action=domains.create', '--limit', '2', '--page', '1']);
    expect([...JSON.parse(first.stdout), ...JSON.parse(second.stdout)].map((e: Entry) => e.resourceUid)).toEqual(
      [...created].reverse().slice(0, 4),
    );
  });
});
