import { request } from 'node:http';
import { httpBase, socketTarget } from './probes.js';
import { fail, ok, warn, type CheckResult, type DoctorContext } from './types.js';

// Spec: svcmail doctor, "each daemon up and ready (... push ...)". The push daemon is part of every
// install, so its address is checked even when listen:push is left at its default, and readiness is
// read from /push/status (daemons/push/main.ts) rather than a bare TCP connect: the answer names the
// event transport, which must be the one this configuration selects (Redis when redis:url is set,
// else the embedded hub) or events published elsewhere never reach that copy.

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

interface PushStatus { status?: string; transport?: string; connections?: number; dropped?: number }

/** GET over TCP or a unix socket (listen:push may be either). */
function get(address: string, path: string, timeoutMs = 3000): Promise<{ status: number; text: string }> {
  const target = socketTarget(address);
  return new Promise((resolve, reject) => {
    const req = request({ ...('path' in target ? { socketPath: target.path } : { host: new URL(httpBase(address)).hostname.replace(/^\[|\]$/g, ''), port: target.port }), path, timeout: timeoutMs }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${address} within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

export async function checkPushDaemon(ctx: DoctorContext, address: string): Promise<CheckResult> {
  const id = 'daemon:push';
  const title = 'push daemon up and ready';
  const start = 'svcmail start push (then svcmail logs push)';
  let r: { status: number; text: string };
  try {
    r = await get(address, '/push/status');
  } catch (e) {
    const code = (e as { code?: string }).code ?? '';
    const detail = `${address}: ${code || (e as Error).message}`;
    // Development runs the api daemon alone often enough; clients then just get no live updates.
    if (CONNECT_CODES.has(code) && ctx.config.isDevelopment) return warn(id, title, `${detail} (NODE_ENV ${ctx.config.nodeEnv})`, `${start}; without it clients get no live updates`);
    return fail(id, title, detail, `${start}; without it clients get no live updates`);
  }
  let body: PushStatus = {};
  try {
    body = JSON.parse(r.text) as PushStatus;
  } catch { /* judged below */ }
  if (r.status !== 200 || body.status !== 'ok') {
    return fail(id, title, `${address}: /push/status answered ${r.status} ${r.text.slice(0, 120)}`, `something other than the push daemon answers there: check listen:push, then ${start}`);
  }
  const want = ctx.config.get('redis:url') ? 'redis' : 'hub';
  const detail = `${address}: /push/status ok, transport ${body.transport}, ${body.connections ?? 0} connections, ${body.dropped ?? 0} slow clients dropped`;
  return body.transport === want ? ok(id, title, detail)
    : warn(id, title, `${detail}; this configuration selects ${want}`, 'the daemon runs with another configuration than this one (redis:url): svcmail restart push');
}
