// Test-only fault injection (TESTING.md, Reliability): a decorator around the real Store that makes
// its calls throw or hang, and the checks every faulted answer must pass. The injected errors carry
// internals (a connection string with a password, a host name, a file path) that must never reach a
// client.
import type { ModelDef, Repo, Store, TransactionOptions } from '../../lib/storage/index.js';
import { catalogue } from '../../lib/errors/index.js';

/** Strings only the injected faults carry: finding one in an answer is a leak. */
export const INJECTED = {
  marker: 'FAULT-INJECTED-3b9e',
  password: 'pw-SECRET-91c2',
  host: 'db-internal-7a1f.example',
  path: '/var/lib/svcmail/FAULT-PATH-6d1e',
} as const;
export const INJECTED_STRINGS: readonly string[] = Object.values(INJECTED);

export function injectedError(what: string): Error {
  return new Error(
    `${INJECTED.marker} ${what}: could not reach postgres://svcmail:${INJECTED.password}@${INJECTED.host}:5432/svcmail (lock file ${INJECTED.path}/svcmail.sqlite-wal)`,
  );
}

/** throw: fail at once; hang: fail after hangMs (or at release); slow: succeed, but only after slowMs. */
export type FaultMode = 'off' | 'throw' | 'hang' | 'slow';
export interface StoreCall {
  method: string;
  model: string | null;
}

/** What the decorated store does now; shared by every repo and transaction it hands out. */
export class StoreFaults {
  mode: FaultMode = 'off';
  /** A hanging call rejects after this long (or at release()), so nothing waits forever. */
  hangMs = 5000;
  slowMs = 3000;
  /** Only calls this accepts are faulted (all when null). */
  only: ((call: StoreCall) => boolean) | null = null;
  /** Calls faulted since the last reset. */
  hits = 0;
  readonly #hanging = new Set<() => void>();

  set(mode: FaultMode, opts: { only?: (call: StoreCall) => boolean; hangMs?: number; slowMs?: number } = {}): void {
    this.mode = mode;
    this.only = opts.only ?? null;
    if (opts.hangMs) this.hangMs = opts.hangMs;
    if (opts.slowMs) this.slowMs = opts.slowMs;
  }

  /** Back to normal; hanging calls fail now. */
  clear(): void {
    this.mode = 'off';
    this.only = null;
    this.release();
  }

  release(): void {
    for (const fail of [...this.#hanging]) fail();
  }

  get hanging(): number {
    return this.#hanging.size;
  }

  async run<T>(call: StoreCall, real: () => Promise<T>): Promise<T> {
    if (this.mode === 'off' || (this.only && !this.only(call))) return real();
    this.hits += 1;
    const what = `${call.model ?? 'store'}.${call.method}`;
    if (this.mode === 'throw') throw injectedError(what);
    if (this.mode === 'slow') {
      await new Promise((r) => setTimeout(r, this.slowMs));
      return real();
    }
    return new Promise<T>((_resolve, reject) => {
      const fail = () => {
        clearTimeout(timer);
        this.#hanging.delete(fail);
        reject(injectedError(`${what} (timed out)`));
      };
      const timer = setTimeout(fail, this.hangMs);
      this.#hanging.add(fail);
    });
  }
}

function faultyRepo<T extends object>(inner: Repo<T>, model: string, f: StoreFaults): Repo<T> {
  return new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      // Every repo method is asynchronous (lib/storage/port.ts): each one can fail or hang.
      return (...args: unknown[]) =>
        f.run({ method: String(prop), model }, () => (v as (...a: unknown[]) => Promise<unknown>).apply(target, args));
    },
  });
}

/** The real store behind a decorator that obeys `f`; transactions hand out decorated stores too. */
export function faultyStore(inner: Store, f: StoreFaults): Store {
  return new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (prop === 'repo') return (model: ModelDef) => faultyRepo(target.repo(model), model.name, f);
      if (prop === 'transaction')
        return <R>(fn: (tx: Store) => Promise<R>, opts?: TransactionOptions) =>
          f.run({ method: 'transaction', model: null }, () => target.transaction((tx) => fn(faultyStore(tx, f)), opts));
      // A request's view of the store (synchronous): as faulty as the store.
      if (prop === 'session') return target.session ? () => faultyStore(target.session!(), f) : undefined;
      if (typeof v !== 'function') return v;
      if (prop === 'close' || prop === 'models') return v.bind(target); // not a datastore call (models() answers synchronously)
      return (...args: unknown[]) =>
        f.run({ method: String(prop), model: null }, () => (v as (...a: unknown[]) => Promise<unknown>).apply(target, args));
    },
  });
}

/** Stack frames, source paths and module folders: never in an answer. */
const STACK = [/\n\s+at\s/, /\bat\s+\S+\s+\([^)]*:\d+:\d+\)/, /node_modules/, /\.ts:\d+/, /\/work\/main\b/, /file:\/\//];

export interface Answer {
  status: number;
  text: string;
  headers: Headers;
}

/**
 * Problems with one answer given while a fault was active: an injected string or a stack anywhere,
 * an error that is not the spec's body {code,status,message} from the catalogue, a 5xx that is not
 * the generic 500 (api-199) or 503 (api-113, api-122 for the protocols forward) unless allowed5xx
 * says otherwise. expectError: the fault was hit while answering, so the answer must be a 5xx.
 */
export function problemsOf(a: Answer, opts: { expectError: boolean; extra?: readonly string[]; allowed5xx?: readonly string[] }): string[] {
  const out: string[] = [];
  const seen = `${a.text}\n${[...a.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}`;
  for (const s of [...INJECTED_STRINGS, ...(opts.extra ?? [])]) if (seen.includes(s)) out.push(`leak: ${s}`);
  for (const re of STACK) if (re.test(a.text)) out.push(`stack or source path: ${re}`);
  // A failure of a backing service is a 5xx: a 2xx built on a failed read, or a 404 that tells the
  // client the record does not exist, would both be lies.
  if (opts.expectError && a.status < 500) out.push(`answered ${a.status} although a backing service failed`);
  if (a.status < 400) return out;
  if (!a.text) return out; // HEAD: no body by definition
  let body: { code?: unknown; status?: unknown; message?: unknown } | null = null;
  try {
    body = JSON.parse(a.text);
  } catch {
    return [...out, `error answer is not JSON: ${a.text.slice(0, 80)}`];
  }
  const def = typeof body?.code === 'string' ? (catalogue as Record<string, { status: number }>)[body.code] : undefined;
  if (!def || body?.status !== a.status || def.status !== a.status || typeof body?.message !== 'string')
    out.push(`not a catalogue error body: ${a.status} ${a.text.slice(0, 120)}`);
  if (a.status >= 500 && !(opts.allowed5xx ?? ['api-199', 'api-113', 'api-122']).includes(String(body?.code)))
    out.push(`unexpected 5xx code ${String(body?.code)}`);
  return out;
}
