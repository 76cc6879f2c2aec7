import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { requireTrusted } from '../auth/index.js';
import { dkimKeyFiles, INGEST_SECRET_DEFAULT } from '../config/index.js';
import { ApiError } from '../errors/index.js';
import { MailboxModel } from '../mail/index.js';
import { CA_CERT_FILE, localCaDir } from '../pki/index.js';
import { type Ctx, type Deps } from '../context/index.js';
import { DomainModel } from '../settings/index.js';
import { defineSingleton } from '../settings/index.js';

// Spec: /api/system/setup — first-run state (not shown in the spec; designed here). The facts come
// from the configuration, the datastore and the key files (what `svcmail setup` made); the steps
// are what the admin console's first-run guide marks done, stored in one record per deployment.

/** The first-run guide's steps, in order. */
export const SETUP_STEPS = ['signin', 'domains', 'dns', 'mailboxes', 'policies', 'branding'] as const;
export type SetupStep = (typeof SETUP_STEPS)[number];
const step = z.enum(SETUP_STEPS);

export const setupState = defineSingleton({
  name: 'setup',
  table: 'setup_state',
  read: 'trusted',
  fields: {
    completedSteps: z.array(step).max(SETUP_STEPS.length).default([]),
    /** When the last step was marked done (null while any is open). */
    completedAt: z.coerce.date().nullable().default(null),
  },
  summary: 'First-run state',
});

export const setupChange = z
  .object({
    complete: z.array(step).max(SETUP_STEPS.length).default([]),
    reopen: z.array(step).max(SETUP_STEPS.length).default([]),
    version: z.number().int().min(0).optional(),
  })
  .strict()
  .refine((b) => b.complete.length + b.reopen.length > 0, 'name at least one step in complete or reopen');

interface DomainRow {
  name: string;
  enabled: boolean;
  verified: boolean;
  dkimSelector: string;
  dkimPublicKey?: string | null;
}

/** What the first-run guide shows: facts checked now, and the steps marked done. */
export async function readSetup(deps: Pick<Deps, 'config' | 'store'>) {
  const { config } = deps;
  const state = await setupState.read(deps);
  const domains = await deps.store.repo<DomainRow>(DomainModel).list({ limit: 1000, sort: [{ field: 'name', dir: 'asc' }] });
  const mailboxes = await deps.store.repo(MailboxModel).count();
  const backend = config.get('mail:pki:backend');
  const caFile = join(localCaDir(config), CA_CERT_FILE);
  const ca =
    backend === 'local'
      ? {
          backend,
          present: existsSync(caFile),
          detail: existsSync(caFile) ? 'local P-256 CA present' : 'no local CA yet: run svcmail setup',
        }
      : {
          backend,
          present: Boolean(config.get('mail:pki:vault:addr')),
          detail: config.get('mail:pki:vault:addr')
            ? `PKI vault at ${config.get('mail:pki:vault:addr')}`
            : 'mail:pki:vault:addr is not set',
        };
  const domainView = domains.map((d) => ({
    name: d.name,
    enabled: d.enabled,
    verified: d.verified,
    dkimSelector: d.dkimSelector,
    dkimPublicKey: Boolean(d.dkimPublicKey),
    dkimKeyFile: existsSync(dkimKeyFiles(config, d.name, d.dkimSelector).key),
  }));
  const ingestSecret = config.get('mail:transport:ingest:secret');
  const configuration = {
    serverId: Boolean(config.get('mail:server_id')),
    host: config.get('mail:host') || null,
    authServerUrl: config.get('mail:auth_server_url') || null,
    ingestSecretChanged: ingestSecret !== INGEST_SECRET_DEFAULT,
  };
  const done = new Set(state.completedSteps);
  return {
    // svcmail setup fills these; without them the deployment cannot take mail or sign-ins.
    setupRan:
      configuration.serverId && configuration.ingestSecretChanged && Boolean(configuration.authServerUrl) && config.has('auth:secret'),
    configuration,
    ca,
    domains: domainView,
    dkim: {
      ready: domainView.filter((d) => d.dkimPublicKey && d.dkimKeyFile).map((d) => d.name),
      missing: domainView.filter((d) => !(d.dkimPublicKey && d.dkimKeyFile)).map((d) => d.name),
    },
    mailboxes,
    steps: SETUP_STEPS.map((s) => ({ step: s, done: done.has(s) })),
    complete: SETUP_STEPS.every((s) => done.has(s)),
    completedAt: state.completedAt,
    version: state.version,
  };
}

/** Marks steps done or open again (trusted role, fresh elevation, audited as setup.update); `body` is parsed by setupChange. */
export async function changeSetup(ctx: Ctx, body: z.output<typeof setupChange>) {
  requireTrusted(ctx.principal, ctx.config, { fresh: true });
  const both = body.complete.filter((s) => body.reopen.includes(s));
  if (both.length) throw new ApiError('api-106', `a step cannot be completed and reopened at once: ${both.join(', ')}`);
  // A step whose outcome can be checked is marked done only once it holds.
  if (body.complete.some((s) => s === 'domains' || s === 'dns') && !(await ctx.store.repo(DomainModel).count()))
    throw new ApiError('api-120', 'no domain is served yet: add one under /api/mail/domains first');
  if (body.complete.includes('mailboxes') && !(await ctx.store.repo(MailboxModel).count()))
    throw new ApiError('api-120', 'no mailbox exists yet');
  const cur = await setupState.read(ctx);
  const steps = SETUP_STEPS.filter((s) => (cur.completedSteps.includes(s) || body.complete.includes(s)) && !body.reopen.includes(s));
  const complete = steps.length === SETUP_STEPS.length;
  await setupState.write(ctx, {
    completedSteps: steps,
    completedAt: complete ? (cur.completedAt ?? new Date()) : null,
    version: body.version ?? cur.version,
  });
  return readSetup(ctx);
}
