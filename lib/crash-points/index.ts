// Named crash points for the reliability tests (TESTING.md, Reliability): SVCMAIL_CRASH_AT=<name>:<n>
// kills the process with SIGKILL the n-th time it passes <name>. Only under NODE_ENV=test.
const spec = process.env.NODE_ENV === 'test' ? (process.env.SVCMAIL_CRASH_AT ?? '') : '';
const [crashName, crashAfter] = spec.split(':');
let passes = 0;

export function crashPoint(name: string): void {
  if (!spec || name !== crashName) return;
  if (++passes >= Number(crashAfter || 1)) process.kill(process.pid, 'SIGKILL');
}
