import type { Command } from 'commander';
import type { Config } from '../../lib/config/index.js';
import { ALL_DAEMONS, detectManager, parsePm2List, parseSystemctlShow, plan, run, type Action, type DaemonStatus } from '../supervisor.js';
import { CliError, configFrom, emit, EXIT, table, type GlobalOptions } from '../output.js';

function checkDaemon(daemon?: string): void {
  if (daemon && !(ALL_DAEMONS as readonly string[]).includes(daemon))
    throw new CliError(`unknown daemon ${daemon}; one of ${ALL_DAEMONS.join(', ')}`, EXIT.usage);
}

/** Seconds start and restart wait for the daemons to answer, unless SVCMAIL_READY_TIMEOUT says otherwise (0: do not wait). */
export const READY_TIMEOUT_SECONDS = 120;
const POLL_MS = 500;

export function readyTimeoutSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.SVCMAIL_READY_TIMEOUT;
  if (v === undefined || v.trim() === '') return READY_TIMEOUT_SECONDS;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0)
    throw new CliError(`SVCMAIL_READY_TIMEOUT=${v}: a number of seconds (0: do not wait for the daemons)`, EXIT.usage);
  return n;
}

// Loaded on use, by start and restart once the daemons run: lib/setup/doctor pulls in the
// datastore, the PKI and the product catalogue, which `svcmail start --foreground` can do without.
const doctor = () => import('../../lib/setup/doctor/index.js');

/** One look at readiness: whom we still wait for (empty: ready), why, and what answered. */
interface Look {
  waiting: string[];
  why: string;
  daemons?: Record<string, string>;
}

/**
 * With the api daemon among those started, readiness is what GET /api/status says, asked to require
 * the other daemons started with it (on a first start none has a heartbeat the api could go by).
 * A daemon started alone is asked directly, with the probe /api/status would use.
 */
async function look(config: Config, started: readonly string[]): Promise<Look> {
  const { httpGetAt, isPeerDaemon, probePeer } = await doctor();
  if (started.includes('api')) {
    const address = config.get('listen:api');
    const others = started.filter(isPeerDaemon);
    let r: { status: number; text: string };
    try {
      r = await httpGetAt(address, `/api/status${others.length ? `?require=${others.join(',')}` : ''}`, 3000);
    } catch (e) {
      return {
        waiting: ['api'],
        why: `the api daemon does not answer at ${address} (${(e as { code?: string }).code ?? (e as Error).message})`,
      };
    }
    let body: { message?: string; details?: Array<{ path?: string }>; daemons?: Record<string, string> } = {};
    try {
      body = JSON.parse(r.text) as typeof body;
    } catch {
      /* judged by the status */
    }
    if (r.status === 200) return { waiting: [], why: '', daemons: { api: 'ready', ...body.daemons } };
    const named = (body.details ?? []).map((d) => d.path ?? '').filter(isPeerDaemon);
    return named.length
      ? { waiting: named, why: `/api/status: ${body.message ?? `answered ${r.status}`}` }
      : { waiting: ['api'], why: `/api/status answered ${r.status}: ${(body.message ?? r.text).slice(0, 160)}` };
  }
  const daemon = started[0];
  if (!isPeerDaemon(daemon)) return { waiting: [], why: '' };
  const p = await probePeer(config, daemon, 3000);
  return p.state === 'down' ? { waiting: [daemon], why: p.detail } : { waiting: [], why: '', daemons: { [daemon]: p.state } };
}

const names = (list: readonly string[]) =>
  list.length > 1 ? `${list.slice(0, -1).join(', ')} and ${list[list.length - 1]}` : (list[0] ?? '');

/**
 * Polls until every started daemon answers, with one progress line (rewritten in place on a
 * terminal, a new line whenever the daemons waited for change otherwise); fails naming the daemons
 * that never answered. Answers the line that says the appliance is ready.
 */
async function waitUntilReady(
  config: Config,
  started: readonly string[],
  timeoutSeconds: number,
  label: string,
): Promise<{ seconds: number; daemons: Record<string, string> }> {
  const t0 = Date.now();
  const tty = process.stderr.isTTY;
  let said = '';
  let last: Look = { waiting: [...started], why: '' };
  process.stderr.write(
    `${label}: waiting up to ${timeoutSeconds} s for ${started.includes('api') ? '/api/status to say ready' : `the ${started[0]} daemon to answer`}\n`,
  );
  for (;;) {
    last = await look(config, started);
    const seconds = Math.round((Date.now() - t0) / 1000);
    if (!last.waiting.length) {
      if (tty && said) process.stderr.write('\r\x1b[K');
      return { seconds, daemons: last.daemons ?? {} };
    }
    const line = `… not ready yet: ${names(last.waiting)}`;
    if (tty) process.stderr.write(`\r\x1b[K${line} (${seconds} s)`);
    else if (line !== said) process.stderr.write(`${line}\n`);
    said = line;
    if (Date.now() - t0 >= timeoutSeconds * 1000) break;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  if (tty) process.stderr.write('\n');
  const { notReadyPhrase } = await doctor();
  const which = last.waiting.includes('api') ? 'the api daemon' : notReadyPhrase(last.waiting).replace(/ (does|do) not answer$/, '');
  throw new CliError(
    `${label}: ${which} did not become ready within ${timeoutSeconds} s: ${last.why}; svcmail logs ${last.waiting[0]} says why, svcmail doctor checks the rest`,
    EXIT.unavailable,
  );
}

/** start, restart, stop and logs: hand over to the service manager and pass its exit status on; start and restart then wait until the daemons answer. */
export function supervise(
  action: Exclude<Action, 'status'>,
  daemon: string | undefined,
  g: GlobalOptions,
  opts: { follow?: boolean; lines?: number } = {},
): Promise<void> {
  checkDaemon(daemon);
  const manager = detectManager();
  if (manager === 'none') {
    throw new CliError(
      action === 'start'
        ? 'neither systemd nor pm2 runs here: svcmail start --foreground runs the daemons in this terminal (or install pm2: npm install -g pm2)'
        : `neither systemd nor pm2 runs here, so there is nothing to ${action}`,
      EXIT.unavailable,
    );
  }
  const waits = action === 'start' || action === 'restart';
  // Read before anything starts: a configuration that does not load fails here, not after the wait.
  const timeout = waits ? readyTimeoutSeconds() : 0;
  const config = waits && timeout > 0 ? configFrom(g) : null;
  for (const inv of plan(manager, action, daemon, opts)) {
    const r = run(inv, false);
    if (r.status !== 0)
      throw new CliError(
        `${inv.cmd} ${inv.args.join(' ')} failed (exit ${r.status})${r.stderr ? `: ${r.stderr.trim()}` : ''}`,
        EXIT.failure,
      );
  }
  const label = `${action}: ${daemon ?? 'all daemons'} (via ${manager})`;
  if (!config) {
    if (action !== 'logs' && !g.json) process.stdout.write(`${label}\n`);
    return Promise.resolve();
  }
  const started = daemon ? [daemon] : [...ALL_DAEMONS];
  const waiting = waitUntilReady(config, started, timeout, label).then(({ seconds, daemons }) => {
    const ready = Object.entries(daemons)
      .filter(([, s]) => s === 'ready')
      .map(([d]) => d);
    const unchecked = Object.entries(daemons)
      .filter(([d, s]) => s === 'unchecked' && started.includes(d))
      .map(([d]) => d);
    const parts = [
      ready.length ? `${names(ready)} answer${ready.length === 1 ? 's' : ''}` : '',
      unchecked.length ? `${names(unchecked)} not asked (no address to ask)` : '',
    ].filter(Boolean);
    emit(
      g,
      { action, daemons: started, manager, ready: true, seconds, answering: ready, unchecked },
      () => `${label}: ready after ${seconds} s: ${parts.join('; ')}`,
    );
  });
  pendingWait = waiting;
  waiting.catch(() => undefined); // reported by whoever awaits it: the caller or the postAction hook below
  return waiting;
}

/** The readiness wait of the last start or restart, finished by the postAction hook when the command's action did not await it. */
let pendingWait: Promise<void> | null = null;

export function status(daemon: string | undefined): { manager: string; daemons: DaemonStatus[] } {
  checkDaemon(daemon);
  const manager = detectManager();
  const daemons = daemon ? [daemon] : [...ALL_DAEMONS];
  if (manager === 'none')
    return { manager, daemons: daemons.map((d) => ({ daemon: d, state: 'unmanaged', pid: null, detail: 'no systemd or pm2 here' })) };
  const invs = plan(manager, 'status', daemon);
  if (manager === 'pm2') {
    const r = run(invs[0], true);
    if (r.status !== 0) throw new CliError(`pm2 jlist failed: ${r.stderr.trim()}`, EXIT.unavailable);
    return { manager, daemons: parsePm2List(r.stdout, daemons) };
  }
  return { manager, daemons: invs.map((inv, i) => parseSystemctlShow(daemons[i], run(inv, true).stdout)) };
}

export function registerSupervise(program: Command): void {
  // Whatever command started the daemons, its exit waits for their readiness and a failure to get
  // ready ends it like any command's error (one line, the exit status).
  program.hook('postAction', async () => {
    const p = pendingWait;
    pendingWait = null;
    if (p) await p;
  });
  for (const action of ['stop', 'restart'] as const) {
    program
      .command(`${action} [daemon]`)
      .description(
        action === 'restart'
          ? `restart the daemons (all, or one of ${ALL_DAEMONS.join(', ')}) through systemd or pm2, then wait until they answer (SVCMAIL_READY_TIMEOUT seconds, default ${READY_TIMEOUT_SECONDS}; 0: do not wait)`
          : `stop the daemons (all, or one of ${ALL_DAEMONS.join(', ')}) through systemd or pm2`,
      )
      .action((daemon: string | undefined, _o: unknown, cmd: Command) => supervise(action, daemon, cmd.optsWithGlobals<GlobalOptions>()));
  }
  program
    .command('status [daemon]')
    .description('state of each daemon under systemd or pm2; exit 3 when one is not running')
    .action((daemon: string | undefined, _o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const s = status(daemon);
      emit(
        g,
        s,
        (d: typeof s) =>
          `${table(d.daemons as never, ['daemon', 'state', 'pid', 'detail'])}\n\nstatus: ${d.daemons.filter((x) => /^(active|online)/.test(x.state)).length} of ${d.daemons.length} running (${d.manager})`,
      );
      if (!s.daemons.every((x) => /^(active|online)/.test(x.state))) process.exitCode = 3; // LSB: program is not running
    });
  program
    .command('logs [daemon]')
    .description('recent log lines of the daemons (journalctl under systemd, pm2 logs otherwise)')
    .option('-f, --follow', 'keep printing new lines')
    .option('-n, --lines <n>', 'how many lines', (v) => Number(v), 100)
    .action((daemon: string | undefined, opts: { follow?: boolean; lines: number }, cmd: Command) =>
      supervise('logs', daemon, cmd.optsWithGlobals<GlobalOptions>(), opts),
    );
}
