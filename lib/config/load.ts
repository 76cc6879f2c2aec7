import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { schema, type SettingName } from './schema.js';

export type SettingValue<K extends SettingName> = z.infer<(typeof schema)[K]['schema']>;

/** A start-up configuration problem: one line naming the setting and what is wrong. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const DEV_ENVS = new Set(['dev', 'development', 'test']);

/** Spec: Development. Only code running from its TypeScript sources counts as "from sources". */
export const runningFromSources = import.meta.url.endsWith('.ts');

export interface LoadOptions {
  /** JSON file (--config FILE or SVCMAIL_CONFIG). */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** --set a:b:c=value flags, applied last. */
  set?: string[];
  /** Programmatic values (tests, the CLI), applied after the file and before env. */
  values?: Partial<Record<SettingName, unknown>>;
}

export class Config {
  readonly nodeEnv: string;
  /** NODE_ENV is dev, development or test. */
  readonly isDevelopment: boolean;
  readonly fromSources: boolean;
  readonly file?: string;
  readonly #values: Map<SettingName, unknown>;

  constructor(values: Map<SettingName, unknown>, nodeEnv: string, file?: string) {
    this.#values = values;
    this.nodeEnv = nodeEnv;
    this.isDevelopment = DEV_ENVS.has(nodeEnv);
    this.fromSources = runningFromSources;
    this.file = file;
    Object.freeze(this);
  }

  get<K extends SettingName>(name: K): SettingValue<K> {
    return this.#values.get(name) as SettingValue<K>;
  }

  has(name: SettingName): boolean {
    return this.#values.get(name) !== undefined;
  }

  /** Every setting with its value, secrets masked — for `svcmail config get` and diagnostics. */
  redacted(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const name of Object.keys(schema) as SettingName[]) {
      const v = this.#values.get(name);
      out[name] = schema[name].secret && v !== undefined ? '********' : v;
    }
    return out;
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Turn a nested or flat ("a:b:c") JSON object into setting names; unknown names are errors. */
export function flatten(obj: Record<string, unknown>, where: string, prefix = ''): Map<SettingName, unknown> {
  const out = new Map<SettingName, unknown>();
  for (const [k, v] of Object.entries(obj)) {
    const name = prefix ? `${prefix}:${k}` : k;
    if (name in schema) {
      out.set(name as SettingName, v);
    } else if (isPlainObject(v) && Object.keys(schema).some((s) => s.startsWith(`${name}:`))) {
      for (const [n, val] of flatten(v, where, name)) out.set(n, val);
    } else {
      throw new ConfigError(`${where}: unknown setting ${name} (see svcmail.conf(5) for the list)`);
    }
  }
  return out;
}

/** Strings from the environment or --set: take them as text when the setting is text, else as JSON. */
export function parseText(name: SettingName, raw: string): unknown {
  if (schema[name].schema.safeParse(raw).success) return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw; // validation below names the setting and the problem
  }
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  const at = issue.path.length ? ` (at ${issue.path.join('.')})` : '';
  return `${issue.message}${at}`;
}

/**
 * In development without auth:secret, `svcmail start` keeps a random secret here so the daemons and
 * the CLI (`svcmail token`, `svcmail admin`) share it; never read outside development.
 */
export const devSecretFile = (dataDir: string): string => join(dataDir, 'dev-auth-secret');

function readDevSecret(dataDir: string): string | null {
  try {
    return readFileSync(devSecretFile(dataDir), 'utf8').trim() || null;
  } catch {
    return null;
  }
}

type Decl = (typeof schema)[SettingName];

/** The settings gathered so far, each with where its value came from (for the validation message). */
interface Layers {
  values: Map<SettingName, unknown>;
  origin: Map<SettingName, string>;
  /** Lays the values of one source over the ones before it. */
  put(src: Map<SettingName, unknown>, where: string): void;
}

/** The declared defaults, as the bottom layer. */
function defaultLayers(): Layers {
  const values = new Map<SettingName, unknown>();
  const origin = new Map<SettingName, string>();
  for (const [name, decl] of Object.entries(schema) as [SettingName, Decl][]) {
    if (decl.default !== undefined) values.set(name, structuredClone(decl.default));
  }
  return {
    values,
    origin,
    put(src, where) {
      for (const [k, v] of src) {
        values.set(k, v);
        origin.set(k, where);
      }
    },
  };
}

/** The settings of a JSON config file (a missing or unreadable file is a start-up error). */
function readConfigJson(file: string): Map<SettingName, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (e as Error).message;
    throw new ConfigError(`config file ${file}: ${reason}`);
  }
  if (!isPlainObject(parsed)) throw new ConfigError(`config file ${file}: must hold a JSON object`);
  return flatten(parsed, `config file ${file}`);
}

/** Lays the SVCMAIL__a__b__c environment variables over the layers, each as its own source. */
function putEnvironment(layers: Layers, env: NodeJS.ProcessEnv): void {
  for (const [key, raw] of Object.entries(env)) {
    if (!key.startsWith('SVCMAIL__') || raw === undefined) continue;
    const name = key.slice('SVCMAIL__'.length).split('__').join(':');
    if (!(name in schema)) throw new ConfigError(`environment ${key}: unknown setting ${name}`);
    layers.put(new Map([[name as SettingName, parseText(name as SettingName, raw)]]), `environment ${key}`);
  }
}

/** Lays the --set a:b:c=value flags over the layers, in order. */
function putFlags(layers: Layers, flags: string[]): void {
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    if (eq < 1) throw new ConfigError(`--set ${flag}: expected a:b:c=value`);
    const name = flag.slice(0, eq);
    if (!(name in schema)) throw new ConfigError(`--set ${flag}: unknown setting ${name}`);
    layers.put(new Map([[name as SettingName, parseText(name as SettingName, flag.slice(eq + 1))]]), `--set ${name}`);
  }
}

/** Checks every setting against its schema (and that those required in production are set), keeping the parsed values. */
function validate(layers: Layers, isDev: boolean): void {
  const { values, origin } = layers;
  for (const [name, decl] of Object.entries(schema) as [SettingName, Decl][]) {
    const v = values.get(name);
    if (v === undefined) {
      if ('requiredInProduction' in decl && decl.requiredInProduction && !isDev) {
        throw new ConfigError(`${name}: required (set it in the config file, SVCMAIL__${name.split(':').join('__')} or --set ${name}=...)`);
      }
      continue;
    }
    const res = decl.schema.safeParse(v);
    if (!res.success) throw new ConfigError(`${name}: ${describeIssue(res.error)} (from ${origin.get(name) ?? 'default'})`);
    values.set(name, res.data);
  }
}

/** Loads the configuration: defaults, then the file, programmatic values, the environment and --set flags, each over the one before; then validates it. */
export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const nodeEnv = env.NODE_ENV ?? 'production';
  const file = opts.file ?? env.SVCMAIL_CONFIG;
  const layers = defaultLayers();
  const { values } = layers;
  if (file) layers.put(readConfigJson(file), `config file ${file}`);
  if (opts.values)
    layers.put(new Map(Object.entries(opts.values).filter(([, v]) => v !== undefined) as [SettingName, unknown][]), 'values');
  putEnvironment(layers, env);
  putFlags(layers, opts.set ?? []);

  // Not under NODE_ENV=test: a developer's ./data must not leak into the suite's configurations.
  if ((nodeEnv === 'development' || nodeEnv === 'dev') && values.get('auth:secret') === undefined) {
    const dev = readDevSecret(String(values.get('data_dir')));
    if (dev) layers.put(new Map([['auth:secret', dev]]), `development secret ${devSecretFile(String(values.get('data_dir')))}`);
  }
  validate(layers, DEV_ENVS.has(nodeEnv));
  return new Config(values, nodeEnv, file);
}
