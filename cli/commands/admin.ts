import type { Command } from 'commander';
import type { DomainVerdict } from '../../lib/dns/index.js';
import { ADMIN_GROUPS, POLICIES, verbDescription, type AdminGroup } from '../admin/groups.js';
import type { ApiClient } from '../admin/client.js';
import { CliError, collect, configFrom, emit, EXIT, table, type GlobalOptions } from '../output.js';

type Rec = Record<string, unknown> & { uid: string; version: number };
interface AdminOpts {
  url?: string;
}

const UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// Loaded on use: the client signs its token with lib/auth, which the other commands (and the
// supervisor) can do without; the declarations below need only cli/admin/groups.ts.
const client = () => import('../admin/client.js');

async function session(cmd: Command): Promise<{ g: GlobalOptions; api: ApiClient }> {
  const g = cmd.optsWithGlobals<GlobalOptions & AdminOpts>();
  const { adminClient } = await client();
  return { g, api: await adminClient(configFrom(g), g.url) };
}

const scopeOf = (grp: AdminGroup, sep = '?') => (grp.adminScope ? `${sep}scope=admin` : '');

/** A uid, or the value of the group's key field (a domain name, an address). */
export async function resolveRecord(api: ApiClient, grp: AdminGroup, id: string): Promise<Rec> {
  if (UID.test(id) || !grp.key) return api.call('GET', `${grp.path}/${encodeURIComponent(id)}${scopeOf(grp)}`);
  const found = (await api.call(
    'GET',
    `${grp.path}?${grp.key}=${encodeURIComponent(id.toLowerCase())}&limit=2${scopeOf(grp, '&')}`,
  )) as Rec[];
  if (found.length === 0) throw new CliError(`${grp.name}: no record with ${grp.key} ${id}`, 66);
  return found[0];
}

const fieldsOf = async (pairs: string[] = [], body?: string): Promise<Record<string, unknown>> => {
  const { fieldPair } = await client();
  let base: Record<string, unknown> = {};
  if (body) {
    try {
      base = JSON.parse(body) as Record<string, unknown>;
    } catch {
      throw new CliError('--body must be a JSON object', EXIT.usage);
    }
  }
  return { ...base, ...Object.fromEntries(pairs.map(fieldPair)) };
};

function renderOne(grp: AdminGroup, r: Rec): string {
  return (
    Object.entries(r)
      .map(([k, v]) => `${k.padEnd(14)} ${typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`)
      .join('\n') + `\n\n${grp.name}: 1 shown`
  );
}

function addGroup(admin: Command, grp: AdminGroup): Command {
  const c = admin.command(grp.name).description(grp.summary);
  if (grp.verbs.includes('list')) {
    c.command('list')
      .description(verbDescription(grp, 'list'))
      .option('--limit <n>', 'page size', '100')
      .option('--page <n>', 'zero-based page', '0')
      .option('--where <field=value>', 'filter (repeatable)', collect)
      .action(async (o: { limit: string; page: string; where?: string[] }, cmd: Command) => {
        const { g, api } = await session(cmd);
        const q = new URLSearchParams({ limit: o.limit, page: o.page });
        for (const w of o.where ?? []) q.append(...(w.split(/=(.*)/s).slice(0, 2) as [string, string]));
        if (grp.adminScope) q.set('scope', 'admin');
        const rows = (await api.call('GET', `${grp.path}?${q}`)) as Rec[];
        emit(g, rows, (d: Rec[]) => `${table(d, grp.columns)}\n\n${grp.name}: ${d.length} listed`);
      });
  }
  if (grp.verbs.includes('show')) {
    c.command(`show <${grp.key ?? 'uid'}>`)
      .description(verbDescription(grp, 'show'))
      .action(async (id: string, _o: unknown, cmd: Command) => {
        const { g, api } = await session(cmd);
        emit(g, await resolveRecord(api, grp, id), (r: Rec) => renderOne(grp, r));
      });
  }
  if (grp.verbs.includes('create')) {
    c.command(grp.createArg ? `create <${grp.createArg}>` : 'create')
      .description(verbDescription(grp, 'create'))
      .option('--field <name=value>', 'a field (value as JSON when it parses; repeatable)', collect)
      .option('--body <json>', 'all fields as one JSON object')
      .action(async (arg: string | object, o: { field?: string[]; body?: string } | Command, cmd?: Command) => {
        const [value, opts, command] =
          typeof arg === 'string'
            ? [arg, o as { field?: string[]; body?: string }, cmd!]
            : [undefined, arg as { field?: string[]; body?: string }, o as Command];
        const { g, api } = await session(command);
        const body = { ...(await fieldsOf(opts.field, opts.body)), ...(grp.createArg && value ? { [grp.createArg]: value } : {}) };
        const r = (await api.call('POST', grp.path, body)) as Rec;
        emit(g, r, (x: Rec) => `${grp.name}: created ${grp.createArg ? (x[grp.createArg] as string) : x.uid} (uid ${x.uid})`);
      });
  }
  if (grp.verbs.includes('update')) {
    c.command(`update <${grp.key ?? 'uid'}>`)
      .description(verbDescription(grp, 'update'))
      .option('--field <name=value>', 'a field to change (repeatable)', collect)
      .option('--body <json>', 'fields as one JSON object')
      .action(async (id: string, o: { field?: string[]; body?: string }, cmd: Command) => {
        const { g, api } = await session(cmd);
        const rec = await resolveRecord(api, grp, id);
        const r = (await api.call('PUT', `${grp.path}/${rec.uid}`, { ...(await fieldsOf(o.field, o.body)), version: rec.version })) as Rec;
        emit(g, r, (x: Rec) => `${grp.name}: updated ${id} (version ${x.version})`);
      });
  }
  if (grp.verbs.includes('delete')) {
    c.command(`delete <${grp.key ?? 'uid'}>`)
      .description(verbDescription(grp, 'delete'))
      .action(async (id: string, _o: unknown, cmd: Command) => {
        const { g, api } = await session(cmd);
        const rec = await resolveRecord(api, grp, id);
        await api.call('DELETE', `${grp.path}/${rec.uid}?version=${rec.version}`);
        emit(g, { deleted: rec.uid }, () => `${grp.name}: deleted ${id}`);
      });
  }
  return c;
}

function mailboxExtras(c: Command, grp: AdminGroup): void {
  c.commands
    .find((x) => x.name() === 'create')!
    .requiredOption('--owner <uid>', 'owner user uid (repeatable)', collect)
    .option('--name <display name>')
    .option('--quota <size>', 'quota, e.g. 10G (0: none)');
  // create maps --owner/--name/--quota onto the body
  c.commands
    .find((x) => x.name() === 'create')!
    .hook('preAction', async (_t, cmd) => {
      const o = cmd.opts<{ owner: string[]; name?: string; quota?: string; field?: string[] }>();
      const { parseBytes } = await client();
      const extra = [
        `owners=${JSON.stringify(o.owner)}`,
        ...(o.name ? [`name=${JSON.stringify(o.name)}`] : []),
        ...(o.quota ? [`quotaBytes=${parseBytes(o.quota)}`] : []),
      ];
      cmd.setOptionValue('field', [...(o.field ?? []), ...extra]);
    });
  c.command('aliases <address>')
    .description('add or remove alias addresses of a mailbox')
    .option('--add <alias>', 'alias to add (repeatable)', collect)
    .option('--remove <alias>', 'alias to remove (repeatable)', collect)
    .action(async (id: string, o: { add?: string[]; remove?: string[] }, cmd: Command) => {
      const { g, api } = await session(cmd);
      const rec = await resolveRecord(api, grp, id);
      const drop = new Set((o.remove ?? []).map((a) => a.toLowerCase()));
      const next = [...new Set([...(rec.aliases as string[]).filter((a) => !drop.has(a)), ...(o.add ?? []).map((a) => a.toLowerCase())])];
      const r = (await api.call('PUT', `${grp.path}/${rec.uid}?scope=admin`, { aliases: next, version: rec.version })) as Rec;
      emit(g, r, (x: Rec) => `mailboxes: ${id} aliases now ${(x.aliases as string[]).join(', ') || '(none)'}`);
    });
  c.command('quota <address> <size>')
    .description('set the quota of a mailbox (10G, 512M, 0 for none)')
    .action(async (id: string, size: string, _o: unknown, cmd: Command) => {
      const { g, api } = await session(cmd);
      const { parseBytes } = await client();
      const rec = await resolveRecord(api, grp, id);
      const r = (await api.call('PUT', `${grp.path}/${rec.uid}?scope=admin`, {
        quotaBytes: parseBytes(size),
        version: rec.version,
      })) as Rec;
      emit(g, r, (x: Rec) => `mailboxes: ${id} quota ${x.quotaBytes as number} bytes`);
    });
}

/**
 * Only verified domains accept inbound mail. verify checks the domain's records live and verifies it
 * when its MX points here; --force verifies it without DNS (a closed network), audited like any write.
 */
function domainExtras(c: Command, grp: AdminGroup): void {
  c.command('verify <name>')
    .description(
      'verify a domain so it accepts inbound mail: when its MX record points here, or with --force without looking at DNS (closed networks)',
    )
    .option('--force', 'verify without the DNS check')
    .action(async (name: string, o: { force?: boolean }, cmd: Command) => {
      const { g, api } = await session(cmd);
      if (o.force) {
        const rec = await resolveRecord(api, grp, name);
        const r = (await api.call('PUT', `${grp.path}/${rec.uid}`, { verified: true, version: rec.version })) as Rec;
        emit(g, r, () => `domains: ${name} verified without a DNS check (--force): inbound mail is accepted`);
        return;
      }
      const r = (await api.call('POST', '/api/admin/dns-checklist/verify', { domain: name })) as { domains: DomainVerdict[] };
      const { describeVerdicts } = await import('../../lib/dns/index.js');
      emit(g, r, (x: { domains: DomainVerdict[] }) => describeVerdicts(x.domains).join('\n'));
      if (!r.domains.every((d) => d.verified)) process.exitCode = EXIT.failure;
    });
}

export function registerAdmin(program: Command): void {
  const admin = program
    .command('admin')
    .description('administration over the HTTP API with a locally minted elevated token (audited as svcmail-cli)')
    .option('--url <base>', 'API base URL (default: http://<listen:api>)');
  for (const grp of ADMIN_GROUPS) {
    const c = addGroup(admin, grp);
    if (grp.name === 'mailboxes') mailboxExtras(c, grp);
    if (grp.name === 'domains') domainExtras(c, grp);
    if (grp.name === 'quarantine') {
      c.command('release <uid>')
        .description("file a quarantined message in its mailbox's Inbox")
        .action(async (uid: string, _o: unknown, cmd: Command) => {
          const { g, api } = await session(cmd);
          const r = await api.call('POST', `${grp.path}/${encodeURIComponent(uid)}/release`, {});
          emit(g, r ?? { released: uid }, () => `quarantine: released ${uid}`);
        });
      c.command('headers <uid>')
        .description('print the header block of a quarantined message')
        .action(async (uid: string, _o: unknown, cmd: Command) => {
          const { g, api } = await session(cmd);
          const r = await api.call('GET', `${grp.path}/${encodeURIComponent(uid)}/headers`);
          emit(g, r, (x: unknown) => `${typeof x === 'string' ? x : JSON.stringify(x, null, 2)}\n\nquarantine: headers of ${uid}`);
        });
    }
    if (grp.name === 'ingest-queue') {
      c.command('retry <uid>')
        .description('queue a failed ingest queue entry again')
        .action(async (uid: string, _o: unknown, cmd: Command) => {
          const { g, api } = await session(cmd);
          const r = await api.call('POST', `${grp.path}/${encodeURIComponent(uid)}/retry`, {});
          emit(g, r ?? { retried: uid }, () => `ingest-queue: ${uid} queued again`);
        });
    }
  }
  deviceExtras(admin.commands.find((x) => x.name() === 'devices')!);
  const pol = admin.command('policies').description(`system policies (${POLICIES.join(', ')})`);
  pol
    .command('show <policy>')
    .description('print a policy')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      if (!(POLICIES as readonly string[]).includes(name))
        throw new CliError(`unknown policy ${name}; one of ${POLICIES.join(', ')}`, EXIT.usage);
      const { g, api } = await session(cmd);
      emit(g, await api.call('GET', `/api/system/${name}`), (r: object) => `${JSON.stringify(r, null, 2)}\n\npolicies: ${name} shown`);
    });
  pol
    .command('set <policy>')
    .description('change fields of a policy')
    .option('--field <name=value>', 'a field (repeatable)', collect)
    .option('--body <json>', 'fields as one JSON object')
    .action(async (name: string, o: { field?: string[]; body?: string }, cmd: Command) => {
      if (!(POLICIES as readonly string[]).includes(name))
        throw new CliError(`unknown policy ${name}; one of ${POLICIES.join(', ')}`, EXIT.usage);
      const { g, api } = await session(cmd);
      const cur = (await api.call('GET', `/api/system/${name}`)) as { version?: number };
      const r = await api.call('PUT', `/api/system/${name}`, {
        ...(await fieldsOf(o.field, o.body)),
        ...(cur?.version ? { version: cur.version } : {}),
      });
      emit(g, r, () => `policies: ${name} updated`);
    });
}

/** devices: remote wipe, unblock and the "why does this device not have that message" inspection. */
function deviceExtras(c: Command): void {
  const path = (uid: string, tail = '') => `/api/mail/devices/${encodeURIComponent(uid)}${tail}`;
  c.command('wipe <uid>')
    .description('wipe the device at its next sync (audited); it is refused afterwards until unblocked')
    .option('--account-only', 'wipe only this account (devices speaking 16.1)')
    .action(async (uid: string, o: { accountOnly?: boolean }, cmd: Command) => {
      const { g, api } = await session(cmd);
      const r = await api.call('POST', path(uid, '/remote-wipe'), o.accountOnly ? { accountOnly: true } : {});
      emit(g, r, () => `devices: ${uid} will be wiped at its next sync`);
    });
  c.command('unblock <uid>')
    .description('let a blocked or wiped device sync again (it provisions anew and starts every folder over; audited)')
    .action(async (uid: string, _o: unknown, cmd: Command) => {
      const { g, api } = await session(cmd);
      emit(g, await api.call('POST', path(uid, '/unblock'), {}), () => `devices: ${uid} unblocked`);
    });
  c.command('inspect <uid>')
    .description('why a device does not have a message: folder synced, sync key, filter window, the item in its collection')
    .option('--message <uid>', 'the message to explain')
    .action(async (uid: string, o: { message?: string }, cmd: Command) => {
      const { g, api } = await session(cmd);
      const r = (await api.call('GET', path(uid, o.message ? `/inspect?message=${encodeURIComponent(o.message)}` : '/inspect'))) as {
        device: {
          deviceId: string;
          lastSyncAt: string | null;
          folders: Array<{ folderName: string | null; syncKey: number; items: number }>;
        };
        message: { verdict: string } | null;
      };
      emit(g, r, () =>
        [
          `device ${r.device.deviceId}, last sync ${r.device.lastSyncAt ?? 'never'}`,
          ...r.device.folders.map((f) => `  ${(f.folderName ?? '?').padEnd(20)} key ${f.syncKey}, ${f.items} items`),
          ...(r.message ? ['', r.message.verdict] : []),
        ].join('\n'),
      );
    });
}
