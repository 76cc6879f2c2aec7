// The document backend at start-up, with the real driver: a server that does not answer and a
// standalone server (a wire-protocol stand-in, test/helpers/mongo-standalone.ts) are refused with
// one line naming the setting and what to do — by openStore, by svcmail doctor's datastore check and
// by svcmail setup --datastore-url mongodb://…, which writes the document backend's settings.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../lib/config/index.js';
import { CHECK_IDS, runDoctor } from '../../../lib/setup/doctor/index.js';
import { runSetup, SetupError } from '../../../lib/setup/index.js';
import { openStore } from '../../../lib/storage/index.js';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { startStandaloneMongo, type StandaloneMongo } from '../../helpers/mongo-standalone.js';
import { freePort } from '../../helpers/ports.js';

let standalone: StandaloneMongo;
let dir: string;
beforeAll(async () => {
  standalone = await startStandaloneMongo();
  dir = mkdtempSync(join(tmpdir(), 'svcmail-docstart-'));
});
afterAll(async () => {
  await standalone?.close();
  rmSync(dir, { recursive: true, force: true });
});

const configFor = (url: string) =>
  loadConfig({ env: { NODE_ENV: 'test' }, values: { data_dir: dir, datastore: 'document', 'datastores:document:url': url } });
const models = () => productModels(productRegistry());

describe('document backend start-up', () => {
  it('refuses a standalone server: transactions need a replica set, and it says how to make one', async () => {
    const err = await openStore(configFor(standalone.url), models()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/standalone MongoDB server.*--replSet.*rs\.initiate\(\).*replicaSet=/);
    // It asked the server itself, and created nothing there.
    expect(standalone.commands).toContain('hello');
    expect(standalone.commands.filter((c) => !['hello', 'isMaster', 'ismaster', 'ping', 'endSessions'].includes(c))).toEqual([]);
  });

  it('refuses a server that does not answer, naming the setting; and a URL that is not MongoDB’s', async () => {
    const url = `mongodb://svc:secret@127.0.0.1:${await freePort()}/svcmail?serverSelectionTimeoutMS=500`;
    const err = (await openStore(configFor(url), models()).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(/^datastores:document:url: MongoDB at mongodb:\/\/127\.0\.0\.1:\d+\/svcmail.* does not answer/);
    expect(err.message).not.toContain('secret');
    await expect(openStore(configFor('postgres://x/y'), models())).rejects.toThrow(/must be a mongodb:\/\/ or mongodb\+srv:\/\/ URL/);
    await expect(openStore(configFor(''), models())).rejects.toThrow(/datastore: document needs datastores:document:url/);
  });

  it('svcmail doctor: the datastore check fails with the reason and the fix; checks that need the datastore say so', async () => {
    const results = await runDoctor(
      { config: configFor(standalone.url) } as never,
      undefined,
      // Only the checks this file is about: every other is skipped.
      new Set(CHECK_IDS.filter((id) => id !== 'datastore' && id !== 'dkim')),
    );
    const byId = Object.fromEntries(results.map((r) => [r.id, r]));
    expect(byId.datastore).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/^mongodb:\/\/127\.0\.0\.1:\d+\/svcmail.*: datastores:document:url names a standalone MongoDB server/),
      fix: expect.stringContaining('datastores:document:url'),
    });
    expect(byId.dkim).toMatchObject({ status: 'skip', detail: expect.stringContaining('datastore does not answer') });
  });
});

describe('svcmail setup --datastore-url', () => {
  const input = (datastoreUrl: string) => ({
    configFile: join(dir, 'svcmail.json'),
    domains: ['example.test'],
    host: 'mail.example.test',
    authUrl: 'https://signin.example.test',
    authSecret: 'a-secret-of-at-least-16-characters',
    dataDir: join(dir, 'data'),
    datastoreUrl,
  });

  it('mongodb:// chooses the document backend and stops at the datastore with its reason', async () => {
    const err = await runSetup(input(standalone.url)).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/standalone MongoDB server/);
    const written = JSON.parse(readFileSync(join(dir, 'svcmail.json'), 'utf8')) as Record<string, unknown>;
    expect(written).toMatchObject({ datastore: 'document', 'datastores:document:url': standalone.url });
    expect(written['datastores:sql:url']).toBeUndefined();
  });

  it('refuses a URL of no backend before writing anything', async () => {
    const err = await runSetup({ ...input('mysql://db/mail'), configFile: join(dir, 'other.json') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SetupError);
    expect((err as Error).message).toMatch(/--datastore-url: give postgres:\/\/…, sqlite:.* or mongodb:\/\//);
    expect(existsSync(join(dir, 'other.json'))).toBe(false);
  });
});
