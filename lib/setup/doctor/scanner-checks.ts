import { isConnectFailure } from '../../scan/index.js';
import { httpGet, tcpExchange } from './probes.js';
import { fail, ok, warn, type CheckResult, type Check, type DoctorContext } from './types.js';

// Spec: svcmail doctor, "scanners reachable (rspamd, clamd)". Every install scans inbound mail, so
// the configured address is checked, or the default one (lib/config/settings/ingest.ts) when none is
// set. lib/scan treats a scanner that cannot be connected to at all as clean in development only;
// doctor mirrors that: there a missing scanner is a warning, everywhere else a failure.

const CONNECT_CODES = /^(ECONNREFUSED|ENOENT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR_CONNECT_TIMEOUT)$/;

/** Nothing answered at all (lib/scan's ScannerUnreachable), as opposed to a wrong or slow answer. */
const notThere = (e: unknown) => isConnectFailure(e) || CONNECT_CODES.test((e as Error).message);

function unreachable(ctx: DoctorContext, id: string, title: string, detail: string, start: string, effect: string): CheckResult {
  return ctx.config.isDevelopment
    ? warn(
        id,
        title,
        `${detail} (NODE_ENV ${ctx.config.nodeEnv}: messages count as clean while it is down)`,
        `${start}; in production ${effect}`,
      )
    : fail(id, title, detail, `${start}; meanwhile ${effect}`);
}

async function checkRspamd(ctx: DoctorContext): Promise<CheckResult> {
  const id = 'scanner:rspamd';
  const title = 'rspamd reachable';
  const url = ctx.config.get('mail:scan:rspamd:url').replace(/\/+$/, '');
  const start = 'start rspamd (systemctl start rspamd) or set mail:scan:rspamd:url to its normal worker';
  try {
    const r = await httpGet(`${url}/ping`);
    return r.status === 200
      ? ok(id, title, `${url}: ${r.text.trim()}`)
      : fail(id, title, `${url}/ping answered ${r.status}`, 'check that mail:scan:rspamd:url names the rspamd normal worker');
  } catch (e) {
    const detail = `${url}: ${(e as Error).message}`;
    return notThere(e)
      ? unreachable(ctx, id, title, detail, start, 'inbound mail is filed as SUSPECT (SCAN_ENGINE_UNAVAILABLE)')
      : fail(id, title, detail, 'rspamd does not answer in time: check its load and logs (journalctl -u rspamd)');
  }
}

async function checkClamd(ctx: DoctorContext): Promise<CheckResult> {
  const id = 'scanner:clamd';
  const title = 'clamd reachable';
  const address = ctx.config.get('mail:scan:clamd:address');
  const start = 'start clamd (systemctl start clamav-daemon) or set mail:scan:clamd:address';
  try {
    const answer = await tcpExchange(address, Buffer.from('zPING\0'));
    return answer.replace(/\0/g, '').trim() === 'PONG'
      ? ok(id, title, `${address}: PONG`)
      : fail(id, title, `${address}: answered ${JSON.stringify(answer)}`, 'check that mail:scan:clamd:address names clamd');
  } catch (e) {
    const detail = `${address}: ${(e as Error).message}`;
    return notThere(e)
      ? unreachable(ctx, id, title, detail, start, 'inbound mail goes to Quarantine (virus scan failed)')
      : fail(id, title, detail, 'clamd does not answer in time: check its load and logs (journalctl -u clamav-daemon)');
  }
}

export const checkScanners: Check = async (ctx) => Promise.all([checkRspamd(ctx), checkClamd(ctx)]);
