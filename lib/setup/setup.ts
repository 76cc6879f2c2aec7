import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DomainModel } from '../settings/index.js';
import { loadConfig, schema, type Config, type SettingName } from '../config/index.js';
import { INGEST_SECRET_DEFAULT } from '../config/index.js';
import { productModels, productRegistry } from '../catalog.js';
import { checklistFor, type ChecklistItem } from '../dns/index.js';
import { datastoreSettings, openStore, type Store } from '../storage/index.js';
import { readConfigFile, SERVICE_USER, systemUser, writeConfigFile } from './config-file.js';
import { ensureCa, ensureDkimKey } from './keys.js';
import { caDir, dkimDir, dkimKeyFiles } from '../config/index.js';

export interface SetupInput {
  configFile: string;
  domains: string[];
  host?: string;
  baseUrl?: string;
  authUrl?: string;
  authSecret?: string;
  authAudience?: string;
  authIssuer?: string;
  dataDir?: string;
  datastoreUrl?: string;
  redisUrl?: string;
  /** Replace the ingest secret, the CA and the DKIM keys (and accept a different sign-in secret). */
  rotate?: boolean;
}

export type StepState = 'created' | 'kept' | 'updated' | 'rotated';

export interface SetupStep {
  step: string;
  state: StepState;
  detail: string;
}

export interface SetupResult {
  configFile: string;
  steps: SetupStep[];
  checklist: ChecklistItem[];
  /** Served domains not yet verified: their inbound mail is refused until they are. */
  unverified: string[];
}

export type Progress = (step: string, detail: string) => void;

export class SetupError extends Error {}

export const randomSecret = (bytes = 32) => randomBytes(bytes).toString('base64url');

/** The Redis setting the configuration schema declares, if any (null: this build has none). */
function redisSetting(): SettingName | null {
  const names = ['redis:url', 'mail:redis:url', 'events:redis:url'];
  return (names.find((n) => n in schema) as SettingName | undefined) ?? null;
}

/** As root, the files setup made belong to the service user (the daemons run as svcmail). */
function handOver(dirs: string[]): void {
  const user = process.getuid?.() === 0 ? systemUser(SERVICE_USER) : null;
  if (!user) return;
  const walk = (p: string) => {
    if (!existsSync(p)) return;
    chownSync(p, user.uid, user.gid);
    try {
      for (const e of readdirSync(p, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(p, e.name));
        else chownSync(join(p, e.name), user.uid, user.gid);
      }
    } catch {
      /* a file, not a directory */
    }
  };
  dirs.forEach(walk);
}

function hostOfUrl(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    throw new SetupError(`${url}: not a URL`);
  }
}

type Values = Map<SettingName, unknown>;
type Note = (step: string, state: StepState, detail: string) => void;
type DomainRecord = { name: string; verified: boolean; dkimSelector: string; dkimPublicKey?: string | null };

/** Sets a value the user gave (undefined or empty: left as it is). */
function setGiven(values: Values, name: SettingName, value: unknown): void {
  if (value !== undefined && value !== '') values.set(name, value);
}

/** Fills the settings the command line names (host, URLs, audience, issuer, data_dir, datastore, Redis), defaulting what is still unset. */
function fillSettings(input: SetupInput, values: Values, file: string, domains: string[]): void {
  const set = (name: SettingName, value: unknown) => setGiven(values, name, value);
  const host = input.host ?? (values.get('mail:host') as string | undefined);
  if (!host) throw new SetupError('name the public host name with --host (for example mail.example.org)');

  set('mail:host', host);
  set('mail:base_url', input.baseUrl ?? (values.has('mail:base_url') ? undefined : `https://${host}`));
  set('mail:auth_server_url', input.authUrl);
  if (!values.get('mail:auth_server_url')) throw new SetupError('name the sign-in service with --auth-url URL');
  set('auth:options:audience', input.authAudience ?? (values.has('auth:options:audience') ? undefined : domains[0]));
  set(
    'auth:options:issuer',
    input.authIssuer ?? (values.has('auth:options:issuer') ? undefined : hostOfUrl(values.get('mail:auth_server_url') as string)),
  );
  set('data_dir', input.dataDir ? resolve(input.dataDir) : values.has('data_dir') ? undefined : resolve(dirname(file), 'data'));
  fillDatastore(input.datastoreUrl, values);
  if (input.redisUrl) {
    const name = redisSetting();
    if (!name) throw new SetupError('--redis-url: this build has no Redis setting yet');
    set(name, input.redisUrl);
  }
}

/**
 * --datastore-url: a mongodb:// URL chooses the document backend (datastore: document and its URL),
 * a postgres:// or sqlite: URL the SQL backend; an unknown scheme is refused before anything is written.
 */
function fillDatastore(url: string | undefined, values: Values): void {
  if (!url) return;
  const settings = datastoreSettings(url);
  if (!settings)
    throw new SetupError(
      '--datastore-url: give postgres://…, sqlite:/path/file.sqlite or mongodb://…?replicaSet=… (a MongoDB replica set)',
    );
  for (const [name, value] of Object.entries(settings)) values.set(name as SettingName, value);
}

/** The sign-in secret comes from the sign-in service; a different one replaces the stored one only with rotate. */
function fillAuthSecret(input: SetupInput, values: Values): void {
  const storedSecret = values.get('auth:secret') as string | undefined;
  if (input.authSecret && storedSecret && input.authSecret !== storedSecret && !input.rotate) {
    throw new SetupError('auth:secret: the configuration holds a different secret; pass --rotate to replace it');
  }
  if (input.authSecret) setGiven(values, 'auth:secret', input.authSecret);
  if (!values.get('auth:secret'))
    throw new SetupError('give the secret shared with the sign-in service with --auth-secret (at least 16 characters)');
}

/** Generates the ingest secret (missing, the default, too short, or with rotate) and the server id (when missing). */
function ensureGenerated(input: SetupInput, values: Values, note: Note): void {
  const ingest = values.get('mail:transport:ingest:secret') as string | undefined;
  if (!ingest || ingest === INGEST_SECRET_DEFAULT || ingest.length < 16 || input.rotate) {
    values.set('mail:transport:ingest:secret', randomSecret());
    note(
      'ingest secret',
      ingest && ingest !== INGEST_SECRET_DEFAULT ? 'rotated' : 'created',
      'mail:transport:ingest:secret (give it to the MTA hand-off: svcmail deliver reads it from this file)',
    );
  } else note('ingest secret', 'kept', 'mail:transport:ingest:secret');
  // The server id is published in DNS (_svc TXT), not a secret: --rotate keeps it.
  if (!values.get('mail:server_id')) {
    values.set('mail:server_id', randomSecret(12));
    note('server id', 'created', `mail:server_id ${values.get('mail:server_id') as string}`);
  } else note('server id', 'kept', `mail:server_id ${values.get('mail:server_id') as string}`);
}

/** Validates the settings as the daemons will load them, writes the file (only then), and returns the configuration it holds. */
function writeValidated(values: Values, file: string, hadFile: boolean, note: Note): Config {
  let config: Config;
  try {
    config = loadConfig({ values: Object.fromEntries(values) as never, env: { NODE_ENV: 'production' } });
  } catch (e) {
    throw new SetupError(`not written: ${(e as Error).message}`);
  }
  if (!values.has('mail:pki:local_ca:dir')) values.set('mail:pki:local_ca:dir', caDir(config));
  mkdirSync(dirname(file), { recursive: true });
  const wrote = writeConfigFile(file, values);
  note('configuration', wrote ? (hadFile ? 'updated' : 'created') : 'kept', file);
  return loadConfig({ file, env: { NODE_ENV: 'production' } });
}

/** Makes the domain's DKIM key, records the domain with its public key, and returns its DNS checklist and whether it is verified. */
async function setUpDomain(
  store: Store,
  config: Config,
  domain: string,
  rotate: boolean,
  note: Note,
  progress: Progress,
): Promise<{ checklist: ChecklistItem[]; verified: boolean }> {
  const selector = config.get('mail:dkim:selector');
  const files = dkimKeyFiles(config, domain, selector);
  progress(`DKIM ${domain}`, 'generating a 2048-bit RSA key (a few seconds)');
  note(`DKIM ${domain}`, await ensureDkimKey(files, rotate), files.key);
  const publicKey = readFileSync(files.pub, 'utf8');
  const repo = store.repo<DomainRecord>(DomainModel);
  const existing = await repo.findOne({ name: domain });
  if (!existing) {
    await repo.create({
      name: domain,
      enabled: true,
      verified: false,
      aliases: [],
      dkimSelector: selector,
      dkimPublicKey: publicKey,
    } as never);
    note(`domain ${domain}`, 'created', 'recorded with its DKIM public key');
  } else if (existing.dkimPublicKey !== publicKey || existing.dkimSelector !== selector) {
    await repo.update(existing.uid, { dkimSelector: selector, dkimPublicKey: publicKey });
    note(`domain ${domain}`, 'updated', 'DKIM public key recorded');
  } else note(`domain ${domain}`, 'kept', 'already recorded');
  const checklist = checklistFor({
    domain,
    host: config.get('mail:host'),
    serverId: config.get('mail:server_id'),
    dkimSelector: selector,
    dkimPublicKey: publicKey,
  });
  return { checklist, verified: Boolean(existing?.verified) };
}

/**
 * svcmail setup: fills the configuration, generates what is missing (ingest secret, server id,
 * local CA, a DKIM key per domain), records the domains, and returns the DNS checklist. Running it
 * again changes nothing unless asked: keys and secrets are replaced only with rotate.
 */
export async function runSetup(input: SetupInput, progress: Progress = () => undefined): Promise<SetupResult> {
  const steps: SetupStep[] = [];
  const note: Note = (step, state, detail) => {
    steps.push({ step, state, detail });
    progress(step, `${state}: ${detail}`);
  };
  const file = resolve(input.configFile);
  progress('config', `reading ${file}`);
  const values = readConfigFile(file);
  const hadFile = values.size > 0;

  const domains = [...new Set(input.domains.map((d) => d.trim().toLowerCase()).filter(Boolean))];
  if (domains.length === 0) throw new SetupError('name the mail domain with --domain');
  fillSettings(input, values, file, domains);
  fillAuthSecret(input, values);
  ensureGenerated(input, values, note);
  const config = writeValidated(values, file, hadFile, note);
  mkdirSync(resolve(config.get('data_dir')), { recursive: true, mode: 0o750 });

  const ca = caDir(config);
  progress('local CA', `P-256 CA in ${ca}`);
  note('local CA', await ensureCa(ca, Boolean(input.rotate)), ca);

  const checklist: ChecklistItem[] = [];
  const unverified: string[] = [];
  progress('datastore', 'opening the datastore');
  const store = await openStore(config, productModels(productRegistry()));
  try {
    for (const domain of domains) {
      const d = await setUpDomain(store, config, domain, Boolean(input.rotate), note, progress);
      if (!d.verified) unverified.push(domain);
      checklist.push(...d.checklist);
    }
  } finally {
    await store.close();
  }
  handOver([resolve(config.get('data_dir')), ca, dkimDir(config)]);
  return { configFile: file, steps, checklist, unverified };
}
