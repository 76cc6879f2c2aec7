// The counters the dashboard charts, read from GET /api/metrics (Prometheus text exposition format).

export interface Counters {
  deliveries: Record<string, number>;
  verdicts: Record<string, number>;
  sends: Record<string, number>;
}

const SERIES = /^(svcmail_\w+)\{(\w+)="([^"]*)"[^}]*\}\s+([0-9.eE+-]+)$/;

/** The delivery, verdict and send counters by their one label; samples of one label value add up. */
export function countersOf(text: string): Counters {
  const out: Counters = { deliveries: {}, verdicts: {}, sends: {} };
  const into: Record<string, Record<string, number>> = {
    svcmail_deliveries_total: out.deliveries,
    svcmail_scan_verdicts_total: out.verdicts,
    svcmail_sends_total: out.sends,
  };
  for (const line of text.split('\n')) {
    const m = SERIES.exec(line.trim());
    const target = m && into[m[1]];
    if (!target) continue;
    target[m[3]] = (target[m[3]] ?? 0) + Number(m[4]);
  }
  return out;
}
