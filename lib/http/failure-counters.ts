import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

// Fixed-window counters of failed attempts (Spec: App passwords — failed attempts are throttled per
// address and username pair, per address and per username). In memory for one process; through
// Redis when redis:url is set, so every copy of a daemon counts the same attempts together.

export interface FailureCounters {
  /** Milliseconds until the key may try again when it has reached max; 0 when it may try now. */
  blockedFor(key: string, max: number): Promise<number>;
  /** Counts one failure; the window starts with the first failure of the key. */
  add(key: string, windowMs: number): Promise<void>;
  clear(key: string): Promise<void>;
}

const COUNTERS_MAX = 100_000;

export class MemoryFailureCounters implements FailureCounters {
  readonly #counts = new Map<string, { count: number; resetAt: number }>();
  constructor(private readonly now: () => number = Date.now) {}

  async blockedFor(key: string, max: number): Promise<number> {
    const e = this.#counts.get(key);
    if (!e) return 0;
    const now = this.now();
    if (e.resetAt <= now) {
      this.#counts.delete(key);
      return 0;
    }
    return e.count >= max ? e.resetAt - now : 0;
  }

  async add(key: string, windowMs: number): Promise<void> {
    const now = this.now();
    const e = this.#counts.get(key);
    if (e && e.resetAt > now) {
      e.count += 1;
      return;
    }
    if (this.#counts.size >= COUNTERS_MAX) this.#prune(now);
    this.#counts.set(key, { count: 1, resetAt: now + windowMs });
  }

  async clear(key: string): Promise<void> {
    this.#counts.delete(key);
  }

  #prune(now: number): void {
    for (const [k, e] of this.#counts) if (e.resetAt <= now) this.#counts.delete(k);
    while (this.#counts.size >= COUNTERS_MAX) this.#counts.delete(this.#counts.keys().next().value!);
  }
}

// INCR and, for the first failure of a window (or a key that lost its expiry), PEXPIRE — atomically,
// so two copies counting at once never leave a counter without a window.
const ADD_SCRIPT = `local c = redis.call('INCR', KEYS[1])
if c == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return c`;

export class RedisFailureCounters implements FailureCounters {
  /** prefix: redis:prefix plus the counter family, e.g. `svcmail:fail:basic:`. */
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  // Keys carry caller-chosen usernames: hash them so a key is short and never holds raw input.
  #key(key: string): string {
    return `${this.prefix}${createHash('sha256').update(key).digest('hex')}`;
  }

  async blockedFor(key: string, max: number): Promise<number> {
    const k = this.#key(key);
    const replies = await this.redis.multi().get(k).pttl(k).exec();
    if (!replies) throw new Error('redis transaction aborted');
    for (const [err] of replies) if (err) throw err;
    const count = Number(replies[0][1] ?? 0);
    const ttl = Number(replies[1][1]);
    return count >= max && ttl > 0 ? ttl : 0;
  }

  async add(key: string, windowMs: number): Promise<void> {
    await this.redis.eval(ADD_SCRIPT, 1, this.#key(key), String(windowMs));
  }

  async clear(key: string): Promise<void> {
    await this.redis.del(this.#key(key));
  }
}
