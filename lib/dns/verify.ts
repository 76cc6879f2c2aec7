import { DomainModel } from '../settings/index.js';
import { writeAudit, type AuditWho } from '../audit/index.js';
import type { Store } from '../storage/index.js';
import type { CheckedItem } from './check.js';
import { verdicts, type DomainVerdict } from './verdicts.js';

interface DomainRow {
  uid: string;
  version: number;
  name: string;
  verified: boolean;
}

/** Marks verified every checked domain whose MX is present (audited as `who`); answers the verdicts. */
export async function verifyCheckedDomains(store: Store, who: AuditWho, checked: readonly CheckedItem[]): Promise<DomainVerdict[]> {
  const repo = store.repo<DomainRow>(DomainModel);
  const rows = await repo.list({ filter: { name: { $in: [...new Set(checked.map((i) => i.domain))] } }, limit: 10_000 });
  const out = verdicts(checked, new Map(rows.map((r) => [r.name, r.verified])));
  for (const v of out.filter((x) => x.changed)) {
    const row = rows.find((r) => r.name === v.domain)!;
    await repo.update(row.uid, { verified: true }, { expectedVersion: row.version });
    await writeAudit(store, who, {
      action: 'domains.verify',
      resource: 'domains',
      resourceUid: row.uid,
      before: { verified: false },
      after: { verified: true },
      details: { by: 'dns-check', mx: 'present' },
    });
  }
  return out;
}
