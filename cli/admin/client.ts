import { signToken, type Principal } from '../../lib/auth/index.js';
import type { Config } from '../../lib/config/index.js';
import { CliError, EXIT } from '../output.js';

/** The uid the API and the audit log see for `svcmail admin`. */
export const CLI_UID = 'svcmail-cli';

/** Who the audit log names for what the CLI writes to the datastore itself (svcmail dns --check). */
export function cliPrincipal(): Principal {
  return { uid: CLI_UID, roles: [], elevatedAt: null, expiresAt: Date.now() + 60_000, via: 'cli' };
}

/** API answers → exit codes (sysexits), so scripts can tell failures apart. */
export function exitFor(status: number): number {
  if (status === 400 || status === 413 || status === 422) return EXIT.dataerr;
  if (status === 401 || status === 403) return EXIT.noperm;
  if (status === 404) return EXIT.noinput;
  if (status === 409) return EXIT.cantcreat; // exists, or a stale version
  if (status >= 500) return EXIT.unavailable;
  return EXIT.failure;
}

export interface ApiClient {
  base: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are rendered generically
  call(method: string, path: string, body?: unknown): Promise<any>;
}

export function apiBase(config: Config, url?: string): string {
  if (url) return url.replace(/\/$/, '');
  const listen = config.get('listen:api');
  if (listen.startsWith('/')) throw new CliError('listen:api is a unix socket: give the API address with --url http://…', EXIT.usage);
  const i = listen.lastIndexOf(':');
  const host = listen.slice(0, i);
  return `http://${host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host}:${listen.slice(i + 1)}`;
}

/** A client with a short-lived elevated token minted here with auth:secret (audited as svcmail-cli). */
export async function adminClient(config: Config, url?: string): Promise<ApiClient> {
  if (!config.has('auth:secret'))
    throw new CliError(
      'auth:secret is not set: run svcmail setup (or, in development, start the appliance once with NODE_ENV=development npm start: it keeps a secret in data_dir)',
      EXIT.config,
    );
  const token = await signToken(config, {
    uid: CLI_UID,
    roles: [config.get('trusted_roles')[0] ?? 'admin'],
    elevated: true,
    ttlSeconds: 300,
  });
  const base = apiBase(config, url);
  return {
    base,
    async call(method, path, body) {
      let res: Response;
      try {
        res = await fetch(base + path, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(30_000),
        });
      } catch (e) {
        const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
        throw new CliError(`cannot reach the API at ${base} (${cause}): is the api daemon running? (svcmail status)`, EXIT.unavailable);
      }
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        /* plain text */
      }
      if (!res.ok) {
        const err = parsed as { code?: string; message?: string; details?: Array<{ path: string; message: string }> } | null;
        const details = err?.details?.map((d) => `${d.path}: ${d.message}`).join('; ');
        throw new CliError(
          `${method} ${path}: ${res.status} ${err?.code ?? ''} ${err?.message ?? text}${details ? ` (${details})` : ''}`.replace(
            /\s+/g,
            ' ',
          ),
          exitFor(res.status),
        );
      }
      return parsed;
    },
  };
}

/** "name=value" → [name, value], the value taken as JSON when it parses (numbers, booleans, arrays). */
export function fieldPair(text: string): [string, unknown] {
  const i = text.indexOf('=');
  if (i < 1) throw new CliError(`--field ${text}: expected name=value`, EXIT.usage);
  const raw = text.slice(i + 1);
  try {
    return [text.slice(0, i), JSON.parse(raw)];
  } catch {
    return [text.slice(0, i), raw];
  }
}

/** 10G, 512M, 1T or plain bytes. */
export function parseBytes(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i.exec(text.trim());
  if (!m) throw new CliError(`${text}: a size such as 10G, 512M or 1073741824`, EXIT.usage);
  const mult = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 }[m[2].toLowerCase() as '' | 'k' | 'm' | 'g' | 't'];
  return Math.round(Number(m[1]) * mult);
}
