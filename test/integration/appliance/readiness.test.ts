// Readiness (Spec: GET /api/status): the real api daemon answers 200 only when its datastore answers
// and so does every daemon it forwards to or wakes that runs on this host (by its heartbeats) or
// that ?require= names; 503 api-113 naming the daemons otherwise. svcmail doctor's api row says the
// same, and svcmail start under a real pm2 waits for it and names the daemon that never answers.
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_IDS } from '../../../lib/setup/doctor-ids/index.js';
import { requirePrograms } from '../../helpers/peers.js';
import { freePort } from '../../helpers/scanners.js';
import {
  crash,
  pollUntil,
  setupArgs,
  startApiDaemon,
  startProtocolsDaemon,
  startPushDaemon,
  startWorkerDaemon,
  svcmail,
  type RunningDaemon,
} from './helpers.js';

interface Answer {
  status: number;
  body: {
    status?: string;
    code?: string;
    message?: string;
    details?: Array<{ path: string; message: string }>;
    daemons?: Record<string, string>;
  };
}

describe('GET /api/status waits for the daemons the api daemon forwards to', () => {
  let dir: string;
  let conf: string;
  const ports = { api: 0, push: 0, protocols: 0, wake: 0 };
  let api: RunningDaemon | undefined;
  let protocols: RunningDaemon | undefined;
  let push: RunningDaemon | undefined;
  let worker: RunningDaemon | undefined;

  const status = async (require?: string): Promise<Answer> => {
    const r = await fetch(`http://127.0.0.1:${ports.api}/api/status${require ? `?require=${require}` : ''}`);
    return { status: r.status, body: (await r.json()) as Answer['body'] };
  };
  /** What a phone's Autodiscover request gets through the api daemon's front door. */
  const forwarded = () =>
    fetch(`http://127.0.0.1:${ports.api}/autodiscover/autodiscover.xml`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml' },
      body: '<Autodiscover/>',
    }).then((r) => r.status);
  const doctorDaemons = async () => {
    const r = await svcmail([
      '--config',
      conf,
      '--json',
      'doctor',
      ...CHECK_IDS.filter((c) => c !== 'daemons').flatMap((c) => ['--skip', c]),
    ]);
    return Object.fromEntries(r.json().results.map((x: { id: string }) => [x.id, x])) as Record<
      string,
      { status: string; detail: string; fix?: string }
    >;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-ready-'));
    conf = join(dir, 'svcmail.conf');
    expect((await svcmail(setupArgs(dir, 'http://127.0.0.1:9'))).code).toBe(0);
    Object.assign(ports, { api: await freePort(), push: await freePort(), protocols: await freePort(), wake: await freePort() });
    // In the file, so every daemon and the CLI read the same addresses.
    for (const [name, value] of [
      ['listen:api', ports.api],
      ['listen:push', ports.push],
      ['listen:protocols', ports.protocols],
      ['mail:jobs:wake_address', ports.wake],
    ]) {
      const r = await svcmail(['--config', conf, 'config', 'set', String(name), `127.0.0.1:${value}`]);
      expect(r.code, r.stderr).toBe(0);
    }
    api = await startApiDaemon(conf, ports.api);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([api, protocols, push, worker].map((d) => d?.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('an api daemon alone is ready with its datastore; ?require= names a daemon that does not answer, whose requests meanwhile get 502', async () => {
    expect(await status()).toEqual({
      status: 200,
      body: {
        status: 'ok',
        version: expect.any(String),
        datastore: 'sqlite',
        daemons: { push: 'unchecked', protocols: 'unchecked', worker: 'unchecked' },
      },
    });
    expect(await status('protocols')).toEqual({
      status: 503,
      body: {
        code: 'api-113',
        status: 503,
        message: 'Not ready: the protocols daemon does not answer',
        details: [{ path: 'protocols', message: 'does not answer' }],
      },
    });
    const all = await status('api,push,protocols,worker');
    expect(all.status).toBe(503);
    expect(all.body.message).toBe('Not ready: the push, protocols and worker daemons do not answer');
    expect(all.body.details!.map((d) => d.path)).toEqual(['push', 'protocols', 'worker']);
    expect(await status('imap')).toMatchObject({
      status: 400,
      body: { code: 'api-106', message: expect.stringMatching(/require: unknown daemon imap/) },
    });
    // The window readiness closes: the front door cannot reach the protocols daemon yet.
    expect(await forwarded()).toBe(502);
  });

  it(
    'once the protocols daemon has run here it is waited for: 200 while it answers, 503 naming it after a crash, not after a clean stop',
    { timeout: 120_000 },
    async () => {
      protocols = await startProtocolsDaemon(conf, ports.protocols);
      // Its first heartbeat makes it expected without ?require=.
      const up = await pollUntil(
        () => status(),
        (a) => a.body.daemons?.protocols === 'ready',
      );
      expect(up).toMatchObject({
        status: 200,
        body: { status: 'ok', daemons: { protocols: 'ready', push: 'unchecked', worker: 'unchecked' } },
      });
      expect(await status('protocols')).toMatchObject({ status: 200 });
      expect(await forwarded()).not.toBe(502);

      await crash(protocols);
      const down = await pollUntil(
        () => status(),
        (a) => a.status !== 200,
      );
      expect(down).toEqual({
        status: 503,
        body: {
          code: 'api-113',
          status: 503,
          message: 'Not ready: the protocols daemon does not answer',
          details: [{ path: 'protocols', message: 'does not answer' }],
        },
      });
      // doctor's api row says which daemon keeps it unready, and how to start it.
      const doctor = await doctorDaemons();
      expect(doctor['daemon:api']).toMatchObject({
        status: 'fail',
        detail: expect.stringMatching(/\/api\/status answered 503 Not ready: the protocols daemon does not answer/),
        fix: expect.stringMatching(/^start it: svcmail start protocols/),
      });
      expect(doctor['daemon:protocols']).toMatchObject({ status: 'fail', detail: `127.0.0.1:${ports.protocols}: ECONNREFUSED` });

      protocols = await startProtocolsDaemon(conf, ports.protocols);
      expect(
        await pollUntil(
          () => status(),
          (a) => a.status === 200,
        ),
      ).toMatchObject({ status: 200, body: { daemons: { protocols: 'ready' } } });

      // Stopped on purpose: not waited for, unless required.
      await protocols.stop();
      protocols = undefined;
      expect(
        await pollUntil(
          () => status(),
          (a) => a.body.daemons?.protocols === 'unchecked',
        ),
      ).toMatchObject({ status: 200 });
      expect(await status('protocols')).toMatchObject({
        status: 503,
        body: { message: 'Not ready: the protocols daemon does not answer' },
      });
    },
  );

  it('the push daemon and the worker (at its wake address) count the same way', { timeout: 120_000 }, async () => {
    [push, worker] = await Promise.all([startPushDaemon(conf, ports.push), startWorkerDaemon(conf, ports.wake)]);
    const up = await pollUntil(
      () => status(),
      (a) => a.body.daemons?.push === 'ready' && a.body.daemons?.worker === 'ready',
    );
    expect(up).toMatchObject({ status: 200, body: { daemons: { push: 'ready', worker: 'ready', protocols: 'unchecked' } } });
    await Promise.all([crash(push), crash(worker)]);
    const down = await pollUntil(
      () => status(),
      (a) => a.body.details?.length === 2,
    );
    expect(down).toEqual({
      status: 503,
      body: {
        code: 'api-113',
        status: 503,
        message: 'Not ready: the push and worker daemons do not answer',
        details: [
          { path: 'push', message: 'does not answer' },
          { path: 'worker', message: 'does not answer' },
        ],
      },
    });
    [push, worker] = await Promise.all([startPushDaemon(conf, ports.push), startWorkerDaemon(conf, ports.wake)]);
    expect(
      await pollUntil(
        () => status(),
        (a) => a.status === 200,
      ),
    ).toMatchObject({ status: 200, body: { daemons: { push: 'ready', worker: 'ready' } } });
  });
});

describe.runIf(requirePrograms('pm2'))('svcmail start waits until /api/status says ready (real pm2)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-ready-pm2-'));
  const conf = join(dir, 'svcmail.conf');
  const env = { PM2_HOME: join(dir, 'pm2'), SVCMAIL_SUPERVISOR: 'pm2', SVCMAIL_CONFIG: conf };
  const ports = { api: 0, push: 0, protocols: 0, wake: 0 };
  let squatter: Server | undefined;

  beforeAll(async () => {
    expect((await svcmail(setupArgs(dir, 'http://127.0.0.1:9'))).code).toBe(0);
    Object.assign(ports, { api: await freePort(), push: await freePort(), protocols: await freePort(), wake: await freePort() });
    for (const [name, value] of [
      ['listen:api', ports.api],
      ['listen:push', ports.push],
      ['listen:protocols', ports.protocols],
      ['mail:jobs:wake_address', ports.wake],
    ]) {
      expect((await svcmail(['--config', conf, 'config', 'set', String(name), `127.0.0.1:${value}`])).code).toBe(0);
    }
  }, 60_000);
  afterAll(async () => {
    spawnSync('pm2', ['kill'], { env: { ...process.env, PM2_HOME: env.PM2_HOME } });
    await new Promise<void>((r) => (squatter ? squatter.close(() => r()) : r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a SVCMAIL_READY_TIMEOUT that is not a number of seconds before starting anything', async () => {
    const r = await svcmail(['start'], { ...env, SVCMAIL_READY_TIMEOUT: 'soon' });
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/SVCMAIL_READY_TIMEOUT=soon: a number of seconds/);
    expect(
      await fetch(`http://127.0.0.1:${ports.api}/api/status`).then(
        () => 'up',
        () => 'down',
      ),
    ).toBe('down');
  });

  it('starts all four daemons and says ready only once /api/status does', { timeout: 240_000 }, async () => {
    const start = await svcmail(['start'], env);
    expect(start.code, start.stderr + start.stdout).toBe(0);
    expect(start.stderr).toMatch(/start: all daemons \(via pm2\): waiting up to 120 s for \/api\/status to say ready/);
    expect(start.stdout).toMatch(/^start: all daemons \(via pm2\): ready after \d+ s: api, push, protocols and worker answer$/m);
    // Ready means every one answers, right away.
    expect((await fetch(`http://127.0.0.1:${ports.api}/api/status`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ports.protocols}/protocols/status`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ports.push}/push/status`)).status).toBe(200);
  });

  it('fails naming the daemon that never becomes ready', { timeout: 240_000 }, async () => {
    const stop = await svcmail(['stop', 'protocols'], env);
    expect(stop.code, stop.stderr).toBe(0);
    // Something else holds the protocols daemon's address: it cannot listen, and what answers there is not it.
    squatter = createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((r) => squatter!.listen(ports.protocols, '127.0.0.1', () => r()));
    const start = await svcmail(['start'], { ...env, SVCMAIL_READY_TIMEOUT: '45' });
    expect(start.code, start.stdout + start.stderr).toBe(69);
    expect(start.stderr).toMatch(/… not ready yet: protocols/);
    expect(start.stderr).toMatch(
      /svcmail: start: all daemons \(via pm2\): the protocols daemon did not become ready within 45 s: \/api\/status: Not ready: the protocols daemon does not answer; svcmail logs protocols says why/,
    );
    expect(start.stdout).not.toMatch(/ready after/);
  });
});
