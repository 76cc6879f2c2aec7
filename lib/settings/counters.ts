import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isApiError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { defineModel, type Store } from '../storage/index.js';

// Event counters shared by every process (Spec: GET /api/metrics — deliveries, sends, scan
// verdicts). The worker counts, the api daemon serves /api/metrics: a prom-client counter in the
// worker would never be scraped, so the counts live in the datastore, one record per name and label
// set, raised with an atomic increment and read at scrape time by every api copy alike.

export const COUNTERS = {
  svcmail_scan_verdicts_total: {
    help: 'Inbound scan verdicts per ingest entry (clean, spam, suspect, virus, failed: a scanner could not run)',
    labels: ['verdict'],
  },
  svcmail_deliveries_total: {
    help: 'Ingest entries finished by the scan job, by outcome (delivered, junk, quarantined, consumed, discarded, failed)',
    labels: ['outcome'],
  },
  svcmail_sends_total: { help: 'Outbound send jobs finished, by result (sent, failed, review)', labels: ['result'] },
} as const;
export type CounterName = keyof typeof COUNTERS;

export const counterFields = {
  name: z.string().min(1).max(200),
  /** The label set as JSON (labels of one counter, sorted by name). */
  labels: z.record(z.string(), z.string()).default({}),
  value: z.number().nonnegative().default(0),
};
export type CounterRecord = z.infer<z.ZodObject<typeof counterFields>>;
export const CounterModel = defineModel({
  name: 'metric_counter',
  table: 'metric_counters',
  fields: counterFields,
  indexes: [{ fields: ['name'] }],
});

const uidOf = (name: string, labels: Record<string, string>): string =>
  createHash('sha256')
    .update(
      `${name}\0${Object.keys(labels)
        .sort()
        .map((k) => `${k}=${labels[k]}`)
        .join('\0')}`,
    )
    .digest('hex')
    .slice(0, 32);

/**
 * Adds to a counter. Never throws: losing one count must not fail a delivery or a send; the
 * failure is logged instead. Not for use inside a transaction (it writes on its own).
 */
export async function countEvent(
  deps: { store: Store; log?: Logger },
  name: CounterName,
  labels: Record<string, string>,
  by = 1,
): Promise<void> {
  const uid = uidOf(name, labels);
  const repo = deps.store.repo<CounterRecord>(CounterModel);
  try {
    if (await repo.increment(uid, { value: by })) return;
    try {
      await repo.create({ uid, name, labels, value: by } as CounterRecord & { uid: string });
    } catch (e) {
      if (!(isApiError(e) && e.code === 'api-112')) throw e;
      await repo.increment(uid, { value: by }); // another process created it first
    }
  } catch (e) {
    deps.log?.warn({ err: (e as Error).message, counter: name }, 'metric counter not raised');
  }
}

/** Every stored value of one counter. */
export async function readCounter(store: Store, name: CounterName): Promise<Array<{ labels: Record<string, string>; value: number }>> {
  const rows = await store.repo<CounterRecord>(CounterModel).list({ filter: { name }, limit: 1000 });
  return rows.map((r) => ({ labels: r.labels, value: r.value }));
}
