import type { ChildProcess } from 'node:child_process';

/** Stops a daemon the bench started: SIGTERM, SIGKILL after 15 s; resolves once it exited. */
export const stopChild = (c: ChildProcess): Promise<void> =>
  new Promise<void>((r) => {
    if (c.exitCode !== null || c.signalCode !== null) return r();
    const kill = setTimeout(() => c.kill('SIGKILL'), 15_000);
    c.once('exit', () => {
      clearTimeout(kill);
      r();
    });
    c.kill('SIGTERM');
  });
