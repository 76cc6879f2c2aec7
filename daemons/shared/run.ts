import { ConfigError, loadConfig, type Config } from '../../lib/config/index.js';
import { createNotifier } from './sd-notify.js';

export interface RunningDaemon {
  /** Bound address, for the log line and tests. */
  address: string;
  close(): Promise<void>;
  /** Watchdog pings stop while this answers false, so systemd restarts a wedged daemon. */
  healthy?(): boolean;
}

/** Parses the few flags a daemon takes directly: --config FILE and repeated --set a:b:c=value. */
export function daemonArgs(argv: string[]): { file?: string; set: string[] } {
  const out: { file?: string; set: string[] } = { set: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--config') out.file = argv[++i];
    else if (argv[i] === '--set') out.set.push(argv[++i]);
  }
  return out;
}

/**
 * Runs a daemon as a process: config errors end it with one line and exit 78 (EX_CONFIG, which
 * systemd does not restart in a loop); SIGTERM and SIGINT shut it down cleanly.
 */
export async function runAsProcess(name: string, start: (config: Config) => Promise<RunningDaemon>): Promise<void> {
  let config: Config;
  try {
    const args = daemonArgs(process.argv.slice(2));
    config = loadConfig({ file: args.file, set: args.set });
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`svcmail-${name}: configuration error: ${e.message}\n`);
      process.exit(78);
    }
    throw e;
  }
  const notify = createNotifier(process.env, (e) => process.stderr.write(`svcmail-${name}: sd_notify: ${e.message}\n`));
  let running: RunningDaemon;
  try {
    await notify.status('starting');
    running = await start(config);
  } catch (e) {
    process.stderr.write(`svcmail-${name}: cannot start: ${e instanceof ConfigError ? e.message : (e as Error).message}\n`);
    process.exit(e instanceof ConfigError ? 78 : 1);
  }
  // READY=1 only now: start() resolves once the daemon really listens (Supervision: Type=notify).
  await notify.ready(`listening on ${running.address}`);
  const parent = foregroundParent();
  parent?.send?.({ svcmail: 'ready', address: running.address });
  const stopWatchdog = notify.startWatchdog(() => running.healthy?.() ?? true);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    stopWatchdog();
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    notify
      .stopping(`stopping after ${signal}`)
      .then(() => running.close())
      .then(
        () => process.exit(0),
        (e: unknown) => {
          process.stderr.write(`svcmail-${name}: shutdown after ${signal} failed: ${(e as Error).message}\n`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // A killed `svcmail start --foreground` leaves no daemon behind: its IPC channel closes.
  parent?.on('disconnect', () => stop('the foreground parent exited'));
}

/**
 * The IPC channel to `svcmail start --foreground` (cli/foreground.ts), which sets SVCMAIL_FOREGROUND;
 * other parents with a channel (pm2's fork mode) are left alone. Unreferenced: it never keeps a
 * stopping daemon alive.
 */
function foregroundParent(): NodeJS.Process | null {
  if (process.env.SVCMAIL_FOREGROUND !== '1' || !process.send) return null;
  process.channel?.unref();
  return process;
}
