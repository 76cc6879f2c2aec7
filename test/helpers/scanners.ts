// Real rspamd and clamd for the inbound tests (see ../shared/TESTING.md, Scanners). Started once per
// test file on free loopback ports; rspamd's hyperscan cache lives in a fixed directory under the
// system temp dir so only the first start of a machine pays the ~30 s compile.
import { freePort } from './ports.js';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDnsServer, type DnsServer } from './dns-server.js';
import { programPath, requirePrograms } from './peers.js';

export const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';
export const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';

export interface Scanners {
  rspamdUrl: string;
  clamdAddress: string;
  /** The loopback resolver rspamd asks. */
  resolver: DnsServer;
  stop(): Promise<void>;
}

async function waitFor(check: () => Promise<boolean>, what: string, ms: number, child: ChildProcess): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} did not start within ${ms} ms`);
}

/** Whether rspamd and clamd are installed; reports nothing (for tests that use them when they are there). */
export function scannersInstalled(): boolean {
  return programPath('rspamd') !== undefined && programPath('clamd') !== undefined;
}

/** Whether rspamd and clamd are installed; when not, one line and a skip, or in CI a failure (./peers.ts). */
export function requireScanners(): boolean {
  return requirePrograms('rspamd', 'clamd');
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

function track(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

export interface Rspamd {
  url: string;
  /** The loopback resolver rspamd asks: every question it saw (test/helpers/dns-server.ts). */
  resolver: DnsServer;
  /** The configuration directory (rspamd.conf, local.d/), for rspamadm configdump. */
  dir: string;
  /** rspamd's log so far (level `logLevel`; at info, one line per scanned message naming qid, ip, user and from). */
  log(): string;
  stop(): Promise<void>;
}

/** rspamadm's view of the configuration as rspamd merged it: one section (e.g. "options") as JSON. */
export function rspamdConfigDump(dir: string, section: string): Record<string, unknown> {
  const out = execFileSync('rspamadm', [...rspamdVars(dir), 'configdump', '-j', '-c', join(dir, 'rspamd.conf'), section], {
    encoding: 'utf8',
  });
  return JSON.parse(out) as Record<string, unknown>;
}

/** The paths rspamd and rspamadm are given: state in `dir`, the hyperscan cache shared by every run. */
function rspamdVars(dir: string): string[] {
  const cache = join(tmpdir(), 'svcmail-rspamd-cache');
  mkdirSync(cache, { recursive: true });
  return [`--var=DBDIR=${cache}`, `--var=RUNDIR=${dir}/run`, `--var=LOGDIR=${dir}/log`, `--var=LOCAL_CONFDIR=${dir}`];
}

/**
 * rspamd on a free loopback port. It asks DNS only of a resolver on loopback (nothing leaves the
 * machine): one started here answering NXDOMAIN, or `opts.resolver`. The setting goes where the stock
 * rspamd.conf merges local settings ($LOCAL_CONFDIR/local.d/options.inc, priority 1): a second
 * `dns {}` beside the stock options.inc would be ignored, and rspamd would ask resolv.conf's resolver.
 */
export async function startRspamd(opts: { resolver?: DnsServer; workers?: number; logLevel?: 'error' | 'info' } = {}): Promise<Rspamd> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-rspamd-'));
  for (const d of ['run', 'log', 'local.d']) mkdirSync(join(dir, d));
  const resolver = opts.resolver ?? (await startDnsServer());
  const port = await freePort();
  writeFileSync(
    join(dir, 'local.d', 'options.inc'),
    `dns { nameserver = ["${resolver.address}"]; timeout = 1s; retransmits = 2; sockets = 2; }\n`,
  );
  // The stock fuzzy rule names rspamd.com's servers, which rspamd resolves through the system's
  // resolver when it reads its configuration: a closed loopback port keeps the module on and local.
  writeFileSync(join(dir, 'local.d', 'fuzzy_check.conf'), 'rule "rspamd.com" { servers = "127.0.0.1:9"; }\n');
  writeFileSync(
    join(dir, 'rspamd.conf'),
    `.include "$CONFDIR/common.conf"
options {
  pidfile = "$RUNDIR/rspamd.pid";
  .include "$CONFDIR/options.inc"
  .include(try=true; priority=1,duplicate=merge) "$LOCAL_CONFDIR/local.d/options.inc"
}
logging { type = "file"; filename = "$LOGDIR/rspamd.log"; level = "${opts.logLevel ?? 'error'}"; }
worker "normal" {
  bind_socket = "127.0.0.1:${port}";
  .include "$CONFDIR/worker-normal.inc"
  count = ${opts.workers ?? 1};
}
`,
  );
  const child = track(
    spawn('rspamd', ['-f', '-i', '-u', 'root', '-g', 'root', '-c', join(dir, 'rspamd.conf'), ...rspamdVars(dir)], { stdio: 'ignore' }),
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/ping`, { signal: AbortSignal.timeout(1000) })).ok, 'rspamd', 120_000, child);
  return {
    url,
    resolver,
    dir,
    log: () => (existsSync(join(dir, 'log', 'rspamd.log')) ? readFileSync(join(dir, 'log', 'rspamd.log'), 'utf8') : ''),
    stop: async () => {
      await stopChild(child);
      if (!opts.resolver) await resolver.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function startClamd(): Promise<{ address: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-clamd-'));
  mkdirSync(join(dir, 'db'));
  // freshclam cannot download here: one local signature makes EICAR detectable offline.
  writeFileSync(join(dir, 'db', 'local.ndb'), `Eicar-Test-Signature-Local:0:*:${Buffer.from(EICAR).toString('hex')}\n`);
  const port = await freePort();
  writeFileSync(
    join(dir, 'clamd.conf'),
    [
      `DatabaseDirectory ${dir}/db`,
      `TCPSocket ${port}`,
      'TCPAddr 127.0.0.1',
      'Foreground yes',
      `LogFile ${dir}/clamd.log`,
      'StreamMaxLength 60M',
      '',
    ].join('\n'),
  );
  const child = track(spawn('clamd', ['-c', join(dir, 'clamd.conf')], { stdio: 'ignore' }));
  const address = `127.0.0.1:${port}`;
  const ping = () =>
    new Promise<boolean>((resolve) => {
      import('node:net').then(({ connect }) => {
        const s = connect({ host: '127.0.0.1', port }, () => s.write('zPING\0'));
        s.on('data', (d) => {
          resolve(d.toString().startsWith('PONG'));
          s.destroy();
        });
        s.on('error', () => resolve(false));
      });
    });
  await waitFor(ping, 'clamd', 60_000, child);
  return {
    address,
    stop: async () => {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * rspamd and clamd. `resolverDelayMs` makes the loopback resolver answer after that long, like a
 * working caching resolver (0: at once); `rspamdWorkers` normal workers (one per core in production).
 */
export async function startScanners(opts: { resolverDelayMs?: number; rspamdWorkers?: number } = {}): Promise<Scanners> {
  const resolver = await startDnsServer({}, { delayMs: opts.resolverDelayMs });
  const [r, c] = await Promise.all([startRspamd({ resolver, workers: opts.rspamdWorkers }), startClamd()]);
  return {
    rspamdUrl: r.url,
    clamdAddress: c.address,
    resolver,
    stop: async () => {
      await Promise.all([r.stop(), c.stop()]);
      await resolver.close();
    },
  };
}

export { freePort };
