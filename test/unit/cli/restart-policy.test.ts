// svcmail start --foreground: what happens after a daemon dies unasked (cli/foreground.ts afterDeath)
// — restarted with a doubling delay up to 30 s, the delay back to 1 s after a minute of running,
// everything stopped after five quick deaths in a row or when it cannot start with the configuration.
import { describe, expect, it } from 'vitest';
import { afterDeath } from '../../../cli/foreground.js';

describe('the restart policy of svcmail start --foreground', () => {
  it('restarts after 1, 2, 4, 8, 16 s, then stops after the fifth quick death in a row', () => {
    const r = { quickDeaths: 0, delayMs: 1000 };
    const steps = Array.from({ length: 6 }, () => afterDeath(r, 1, 2000));
    expect(steps).toEqual([
      { restartInMs: 1000 },
      { restartInMs: 2000 },
      { restartInMs: 4000 },
      { restartInMs: 8000 },
      { restartInMs: 16000 },
      { stop: 'it died 5 times in a row within a minute of starting' },
    ]);
  });

  it('a daemon that ran a minute before it died starts the count and the delay again', () => {
    const r = { quickDeaths: 0, delayMs: 1000 };
    for (let i = 0; i < 4; i++) afterDeath(r, null, 500);
    expect(afterDeath(r, null, 60_000)).toEqual({ restartInMs: 1000 });
    expect(r.quickDeaths).toBe(1);
  });

  it('the delay never exceeds 30 s', () => {
    const r = { quickDeaths: 0, delayMs: 16_000 };
    expect(afterDeath(r, 1, 100)).toEqual({ restartInMs: 16_000 });
    expect(r.delayMs).toBe(30_000);
    afterDeath(r, 1, 100);
    expect(r.delayMs).toBe(30_000);
  });

  it('exit 78 (cannot start with this configuration) stops everything at once', () => {
    expect(afterDeath({ quickDeaths: 0, delayMs: 1000 }, 78, 100)).toEqual({ stop: 'it cannot start with this configuration' });
  });
});
