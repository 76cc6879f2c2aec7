import { wbxml } from '../../plugins/index.js';
import { fail, ok, skip, warn, type Check, type CheckResult, type DoctorContext } from './types.js';

// Mobile sync on the public URL, as a phone meets it: OPTIONS at the path real clients hard-code,
// then — with the test sign-in's app password (--signin-user, --signin-password) — Provision and a
// FolderSync from a synthetic device (DeviceId svcmaildoctor; one record, reused by every run, and
// forgotten like any device idle beyond mail:jobs:eas_device_cleanup:device_ttl_days).

const PATH = '/Microsoft-Server-ActiveSync';
const DEVICE = 'svcmaildoctor';
const TIMEOUT_MS = 5000;
const { decode, encode, el } = wbxml;

async function post(base: string, cmd: string, body: Buffer, auth: string, policyKey = 0) {
  const q = new URLSearchParams({ Cmd: cmd, User: 'doctor', DeviceId: DEVICE, DeviceType: 'svcmaildoctor' });
  const res = await fetch(`${base}${PATH}?${q}`, {
    method: 'POST',
    redirect: 'manual',
    signal: AbortSignal.timeout(TIMEOUT_MS),
    headers: {
      authorization: auth,
      'ms-asprotocolversion': '16.1',
      'content-type': 'application/vnd.ms-sync.wbxml',
      'user-agent': 'svcmail-doctor',
      ...(policyKey ? { 'x-ms-policykey': String(policyKey) } : {}),
    },
    body: new Uint8Array(body),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  const wbxmlAnswer = (res.headers.get('content-type') ?? '').startsWith('application/vnd.ms-sync.wbxml') && buf.length > 0;
  return { status: res.status, tree: wbxmlAnswer ? decode(buf) : null, text: wbxmlAnswer ? '' : buf.toString().slice(0, 160) };
}

type Tree = ReturnType<typeof decode>;
const find = (t: Tree | null | undefined, ...tags: string[]): Tree | undefined =>
  tags.reduce<Tree | undefined>((n, tag) => n?.children?.find((c) => c.tag === tag), t ?? undefined);

/** Provision (two steps) and FolderSync from 0 with the app password: what failed, or the folder count. */
async function session(base: string, signin: NonNullable<DoctorContext['signin']>): Promise<{ folders: number } | { problem: string }> {
  const auth = `Basic ${Buffer.from(`${signin.user}:${signin.password}`, 'utf8').toString('base64')}`;
  const pv = (tag: string, c?: Parameters<typeof el>[2]) => el('Provision', tag, c);
  const ask = (key?: number) =>
    pv('Provision', [
      pv('Policies', [
        pv('Policy', [pv('PolicyType', 'MS-EAS-Provisioning-WBXML'), ...(key ? [pv('PolicyKey', key), pv('Status', '1')] : [])]),
      ]),
    ]);
  let key = 0;
  for (let step = 0; step < 2; step++) {
    const r = await post(base, 'Provision', encode(ask(key || undefined)), auth);
    if (r.status !== 200) return { problem: `Provision answered HTTP ${r.status} ${r.text}` };
    key = Number(find(r.tree, 'Policies', 'Policy', 'PolicyKey')?.text ?? 0);
    if (!key) return { problem: `Provision gave no policy key (status ${find(r.tree, 'Status')?.text ?? '?'})` };
  }
  const fs = await post(
    base,
    'FolderSync',
    encode(el('FolderHierarchy', 'FolderSync', [el('FolderHierarchy', 'SyncKey', '0')])),
    auth,
    key,
  );
  const status = find(fs.tree, 'Status')?.text;
  if (fs.status !== 200 || status !== '1') return { problem: `FolderSync answered HTTP ${fs.status}, status ${status ?? fs.text}` };
  return { folders: Number(find(fs.tree, 'Changes', 'Count')?.text ?? 0) };
}

export const checkMobileSync: Check = async (ctx) => {
  const base = ctx.config.get('mail:autodiscover:public_url').replace(/\/+$/, '');
  const title = 'Mobile sync (ActiveSync) answers on the public URL';
  if (!base) return skip('activesync', title, 'mail:autodiscover:public_url is not set: the public URL is not known');
  const out: CheckResult[] = [];
  try {
    const r = await fetch(`${base}${PATH}`, { method: 'OPTIONS', redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
    const versions = r.headers.get('ms-asprotocolversions');
    if (r.status === 404)
      return warn('activesync', title, `${base}${PATH}: 404`, 'enable the eas plugin (PUT /api/system/plugins/eas {"enabled": true})');
    if (r.status !== 200 || !versions)
      return fail(
        'activesync',
        title,
        `${base}${PATH}: OPTIONS answered ${r.status}`,
        'route /Microsoft-Server-ActiveSync to the protocols daemon (packaging/nginx/svcmail.conf) and check svcmail status',
      );
    out.push(ok('activesync', title, `versions ${versions}`));
  } catch (e) {
    return fail(
      'activesync',
      title,
      `${base}${PATH}: ${(e as Error).message}`,
      'check DNS and TLS for the public URL, and that the protocols daemon runs',
    );
  }
  const t2 = 'Mobile sync: Provision and FolderSync of a test device';
  if (!ctx.signin) {
    out.push(skip('activesync:foldersync', t2, 'give --signin-user and --signin-password (an app password) to try a device session'));
    return out;
  }
  try {
    const s = await session(base, ctx.signin);
    out.push(
      'problem' in s
        ? fail('activesync:foldersync', t2, s.problem, 'check the user has a mailbox and the app password works (svcmail logs protocols)')
        : ok('activesync:foldersync', t2, `device ${DEVICE} provisioned, ${s.folders} folders listed`),
    );
  } catch (e) {
    out.push(fail('activesync:foldersync', t2, (e as Error).message, 'check that the protocols daemon runs (svcmail status)'));
  }
  return out;
};
