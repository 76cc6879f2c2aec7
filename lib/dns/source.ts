import { existsSync, readFileSync } from 'node:fs';
import { DomainModel } from '../settings/index.js';
import { dkimKeyFiles, publicHost, type Config } from '../config/index.js';
import type { Store } from '../storage/index.js';
import { checklistFor, type ChecklistItem, type DomainDnsInput } from './checklist.js';

interface DomainRow {
  name: string;
  enabled: boolean;
  dkimSelector: string;
  dkimPublicKey?: string | null;
}

/** What the checklist of each served domain needs: the domain records, the host, the server id, the stored DKIM key. */
export async function dnsInputs(config: Config, store: Store, only?: string): Promise<DomainDnsInput[]> {
  const filter: Record<string, string> = only ? { name: only.toLowerCase() } : {};
  const rows = await store.repo<DomainRow>(DomainModel).list({ filter, limit: 10_000, sort: [{ field: 'name', dir: 'asc' }] });
  const host = publicHost(config);
  return rows.map((d) => {
    let key = d.dkimPublicKey ?? null;
    if (!key) {
      const { pub } = dkimKeyFiles(config, d.name, d.dkimSelector);
      if (existsSync(pub)) key = readFileSync(pub, 'utf8');
    }
    return {
      domain: d.name,
      host: host || `mail.${d.name}`,
      serverId: config.get('mail:server_id') || '<run svcmail setup>',
      dkimSelector: d.dkimSelector,
      dkimPublicKey: key,
    };
  });
}

export async function dnsChecklist(config: Config, store: Store, only?: string): Promise<ChecklistItem[]> {
  return (await dnsInputs(config, store, only)).flatMap(checklistFor);
}
