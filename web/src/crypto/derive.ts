// The page's side of the Argon2id worker: derives a password key without blocking the page, and
// tells how long it has been running (Argon2id reports no progress of its own: the view shows the
// time against what the last derivation on this device took).
import type { Argon2Params } from '../../../lib/keys/client/format.js';
import { Problem } from '../shared/api.js';

const LAST_KEY = 'svcmail:argon2-ms';

/** How long the last derivation took here (milliseconds), to show progress against; null before the first. */
export function expectedMs(): number | null {
  const v = Number(localStorage.getItem(LAST_KEY));
  return v > 0 ? v : null;
}

/** Derives the password key in a Web Worker; `tick` gets the elapsed milliseconds about ten times a second. */
export function derivePasswordKey(password: string, kdf: Argon2Params, tick?: (elapsedMs: number) => void): Promise<Uint8Array> {
  const worker = new Worker(new URL('./argon2.worker.ts', import.meta.url), { type: 'module', name: 'argon2id' });
  const started = performance.now();
  const timer = tick ? setInterval(() => tick(performance.now() - started), 100) : null;
  return new Promise<Uint8Array>((resolve, reject) => {
    worker.onmessage = (e: MessageEvent<{ key?: Uint8Array; error?: string }>) => {
      if (e.data.key) {
        localStorage.setItem(LAST_KEY, String(Math.round(performance.now() - started)));
        resolve(e.data.key);
      } else reject(new Problem(`The key could not be derived from the password: ${e.data.error}`));
    };
    worker.onerror = (e) => reject(new Problem(`The key could not be derived from the password: ${e.message || 'the worker failed'}`));
    worker.postMessage({ password, kdf });
  }).finally(() => {
    if (timer) clearInterval(timer);
    worker.terminate();
  });
}
