import type { Config } from '../config/index.js';

/**
 * How many scans a worker keeps in flight, adapted to what the scanners give (hill climbing on
 * throughput, as .NET's thread pool sizes itself). Every window of completions (at least 20, and
 * the limit) it measures scans per second; while the limit was the bottleneck it moves the
 * limit by a quarter (by half until a step first gains nothing): on in the same direction when throughput rose (by at least 0.4× the step's
 * share), back when it fell by more than 5 %, and down when it stayed flat (more scans in flight
 * that give nothing more only queue inside the scanners). The window after a change is not judged
 * (it ran partly at the old limit); at a bound it cannot pass it stays, looking below every 16th
 * window. Time spent waiting — a resolver 30 ms away — makes every step up pay, so the
 * limit climbs to its maximum; busy scanner CPUs make steps up pay nothing, so it stays near their
 * capacity. A window in which fewer scans were wanted than allowed says nothing and changes nothing.
 */
export class AdaptiveLimit {
  #limit: number;
  #inFlight = 0;
  readonly #waiting: Array<() => void> = [];
  readonly #min: number;
  readonly #max: number;
  readonly #now: () => number;
  #windowStart: number;
  #windowCount = 0;
  /** Whether a scan had to wait for a slot during the window (the limit was the bottleneck). */
  #saturated = false;
  #previousRate = 0;
  #direction = 1;

  constructor(opts: { initial: number; min: number; max: number; now?: () => number }) {
    this.#min = Math.max(1, opts.min);
    this.#max = Math.max(this.#min, opts.max);
    this.#limit = Math.min(this.#max, Math.max(this.#min, opts.initial));
    this.#now = opts.now ?? (() => performance.now());
    this.#windowStart = this.#now();
  }

  /** The current limit (whole scans). */
  get limit(): number {
    return this.#limit;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Runs fn when a slot is free. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    // A waiter is handed its slot by the scan that frees it (counted before it is woken).
    if (this.#inFlight >= this.#limit) {
      this.#saturated = true;
      await new Promise<void>((r) => this.#waiting.push(r));
    } else this.#inFlight += 1;
    try {
      return await fn();
    } finally {
      this.#inFlight -= 1;
      this.#completed();
      while (this.#waiting.length && this.#inFlight < this.#limit) {
        this.#inFlight += 1;
        this.#waiting.shift()!();
      }
    }
  }

  /** Consecutive windows held at a limit it could not leave (the maximum or minimum) with throughput flat. */
  #held = 0;
  /** How much the last adjustment changed the limit, relative to the limit before it. */
  #lastStep = 1;
  /** A window right after a change still runs partly at the old limit: it is measured, not judged. */
  #settling = false;
  /** Climbing fast (half steps) until a step gains nothing. */
  #slowStart = true;

  #adjust(rate: number): void {
    if (this.#settling) {
      this.#settling = false;
      return;
    }
    const before = this.#limit;
    const moved = this.#lastStep !== 0;
    // A step that added a quarter more scans should add a tenth more throughput to count as a gain.
    const gain = Math.max(0.02, 0.4 * Math.abs(this.#lastStep));
    const fell = this.#previousRate > 0 && rate < this.#previousRate * 0.95;
    const flat = this.#previousRate > 0 && !fell && rate <= this.#previousRate * (1 + gain);
    // Away from a bound it sits at: down from the maximum, up from the minimum.
    const away = this.#limit <= this.#min ? 1 : -1;
    if (fell) this.#direction = this.#direction ? -this.#direction : away;
    else if (flat && moved) this.#direction = -1;
    else if (!flat && !this.#direction) this.#direction = 1; // rose while holding: more may pay now
    // Flat at a bound it could not move past: stay, but look away from it every 16th window (at the
    // maximum the scanners may have become the limit; at the minimum they may have room again).
    if (flat && !moved) {
      if (++this.#held % 16 !== 0) this.#direction = 0;
      else this.#direction = away;
    }
    if (this.#direction) {
      // Until the first step that gained nothing, steps are half the limit: a burst of mail meets the
      // right limit within a few hundred scans, not a thousand.
      const step = Math.max(1, Math.round(this.#limit / (this.#slowStart ? 2 : 4)));
      this.#limit = Math.min(this.#max, Math.max(this.#min, this.#limit + this.#direction * step));
    }
    if (!flat) this.#held = 0;
    if (flat || fell) this.#slowStart = false;
    this.#lastStep = (this.#limit - before) / before;
    this.#settling = this.#limit !== before;
    this.#previousRate = rate;
  }

  #completed(): void {
    this.#windowCount += 1;
    if (this.#windowCount < Math.max(20, this.#limit)) return;
    const now = this.#now();
    const rate = this.#windowCount / Math.max(now - this.#windowStart, 1e-3);
    if (this.#saturated) this.#adjust(rate);
    else this.#previousRate = 0;
    this.#windowStart = now;
    this.#windowCount = 0;
    this.#saturated = false;
  }
}

const limits = new WeakMap<Config, AdaptiveLimit>();

/**
 * The worker's one limit on scans in flight (every scan round shares it): it starts at
 * mail:jobs:scan:concurrency × rounds_in_flight and moves between concurrency and max_concurrency.
 */
export function scanLimitOf(config: Config): AdaptiveLimit {
  let l = limits.get(config);
  if (!l) {
    const min = config.get('mail:jobs:scan:concurrency');
    l = new AdaptiveLimit({
      min,
      initial: min * config.get('mail:jobs:scan:rounds_in_flight'),
      max: config.get('mail:jobs:scan:max_concurrency'),
    });
    limits.set(config, l);
  }
  return l;
}
