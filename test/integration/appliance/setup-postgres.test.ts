// svcmail setup --datastore-url postgres://… --redis-url … writes the configuration, creates the
// schema and the domain in PostgreSQL, and svcmail doctor reaches both servers; a column dropped
// from a PostgreSQL table is reported (information_schema). PostgreSQL and Redis are
// required in CI, skipped elsewhere when absent.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_IDS } from '../../../lib/setup/doctor-ids/index.js';
import { freshPostgres, postgresAvailable, type TestDatabase } from '../../helpers/databases.js';
import { redisAvailable, TEST_REDIS_URL } from '../../helpers/redis.js';
import { mode, setupArgs, svcmail } from './helpers.js';

const withPostgres = await postgresAvailable();
const withRedis = await redisAvailable();

describe.skipIf(!withPostgres)('svcmail setup on PostgreSQL (and Redis)', () => {
  let dir: string;
  let conf: string;
  let db: TestDatabase;
  const query = async <R extends object>(sql: string): Promise<R[]> => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      return (await c.query(sql)).rows as R[];
    } finally {
      await c.end();
    }
  };
  /** doctor with only the given checks (the others need daemons and peers this test does not start). */
  const doctor = async (checks: string[]) => {
    const skips = CHECK_IDS.filter((c) => !checks.includes(c)).flatMap((c) => ['--skip', c]);
    const r = await svcmail(['--config', conf, '--json', 'doctor', ...skips]);
    return {
      code: r.code,
      stdout: r.stdout,
      byId: Object.fromEntries(r.json().results.map((x: { id: string }) => [x.id, x])) as Record<
        string,
        { status: string; detail: string; fix?: string }
      >,
    };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-setup-pg-'));
    conf = join(dir, 'svcmail.conf');
    db = await freshPostgres();
  });
  afterAll(async () => {
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the datastore and Redis URLs, creates the schema and records the domain in PostgreSQL', { timeout: 120_000 }, async () => {
    const r = await svcmail([
      ...setupArgs(dir, 'http://127.0.0.1:9', ['--datastore-url', db.url, ...(withRedis ? ['--redis-url', TEST_REDIS_URL] : [])]),
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(mode(conf)).toBe('640');
    const stored = JSON.parse(readFileSync(conf, 'utf8'));
    expect(stored['datastores:sql:url']).toBe(db.url);
    if (withRedis) expect(stored['redis:url']).toBe(TEST_REDIS_URL);
    // The data went to PostgreSQL, not to an SQLite file in the data directory.
    const domains = await query<{ name: string; dkimSelector: string; dkimPublicKey: string }>(
      'SELECT name, "dkimSelector", "dkimPublicKey" FROM domains',
    );
    expect(domains).toMatchObject([{ name: 'example.test', dkimSelector: 'mail' }]);
    expect(domains[0].dkimPublicKey).toBe(readFileSync(join(dir, 'data/dkim/example.test.mail.pub'), 'utf8'));
    expect(() => readFileSync(join(dir, 'data/svcmail.sqlite'))).toThrow();

    const again = await svcmail([
      ...setupArgs(dir, 'http://127.0.0.1:9', ['--datastore-url', db.url, ...(withRedis ? ['--redis-url', TEST_REDIS_URL] : [])]),
      '--json',
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.json().steps.every((s: { state: string }) => s.state === 'kept')).toBe(true);
    expect(await query('SELECT name FROM domains')).toHaveLength(1);
  });

  it('doctor reaches the PostgreSQL datastore (schema in sync), the DKIM key recorded there and Redis', { timeout: 120_000 }, async () => {
    const { code, byId, stdout } = await doctor(['datastore', 'dkim', 'redis', 'secrets']);
    const name = new URL(db.url).pathname.slice(1);
    expect(byId.datastore, stdout).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(new RegExp(`^postgres://[^ ]*/${name}: answers; \\d+ models, every table and column present`)),
    });
    expect(byId['dkim:example.test'].status).toBe('ok');
    expect(byId.secrets.status).toBe('ok');
    if (withRedis) expect(byId.redis).toMatchObject({ status: 'ok', detail: expect.stringMatching(/PONG/) });
    else expect(byId.redis.status).toBe('skip');
    expect(code, stdout).toBe(0);
  });

  it('doctor reports a column and a table missing from PostgreSQL, with the fix', { timeout: 120_000 }, async () => {
    await query('ALTER TABLE quarantine_items DROP COLUMN detail');
    await query('DROP TABLE auto_replies_sent');
    const { code, byId } = await doctor(['datastore']);
    expect(code).toBe(1);
    expect(byId.datastore).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/tables missing: auto_replies_sent; columns missing: quarantine_items\.detail$/),
      fix: expect.stringMatching(/synchronize on/),
    });
  });
});
