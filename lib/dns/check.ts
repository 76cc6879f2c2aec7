import type { ChecklistItem } from './checklist.js';
import { lookup, type Nameserver } from './lookup.js';

export type RecordStatus = 'present' | 'missing' | 'wrong' | 'error';

export interface CheckedItem extends ChecklistItem {
  status: RecordStatus;
  /** What the DNS answered for this name and type. */
  found: string[];
  /** For missing and wrong: what to do, naming the exact record. */
  fix?: string;
}

const norm = (s: string) => s.trim().replace(/\s+/g, ' ').replace(/\.$/, '').toLowerCase();

/** Tags of a "k=v; k=v" record (DKIM, DMARC, the _svc record), names lower-cased. */
export function tags(value: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of value.split(';')) {
    const i = part.indexOf('=');
    if (i > 0)
      out.set(
        part.slice(0, i).trim().toLowerCase(),
        part
          .slice(i + 1)
          .trim()
          .replace(/\s+/g, ''),
      );
  }
  return out;
}

/** Of the answers for the name and type, those that play this item's role (other TXT records at the apex are not ours). */
function relevant(item: ChecklistItem, found: string[]): string[] {
  const prefix: Record<string, string> = { spf: 'v=spf1', dkim: 'v=dkim1', dmarc: 'v=dmarc1', svc: 'v=svcv1' };
  const p = prefix[item.purpose];
  return p ? found.filter((f) => f.trim().toLowerCase().startsWith(p)) : found;
}

function matches(item: ChecklistItem, value: string): boolean {
  switch (item.purpose) {
    case 'spf':
      return value
        .toLowerCase()
        .split(/\s+/)
        .some((t) => /^\+?mx$/.test(t));
    case 'dkim':
      return tags(value).get('p') === tags(item.value).get('p');
    case 'dmarc':
      return tags(value).has('p');
    case 'svc': {
      const want = tags(item.value);
      const got = tags(value);
      return got.get('v') === 'SVCv1' && got.get('id') === want.get('id') && norm(got.get('host') ?? '') === norm(want.get('host') ?? '');
    }
    // Any preference will do: what matters for receiving is that the exchange is this server.
    case 'mx':
      return norm(value).split(' ').pop() === norm(item.value).split(' ').pop();
    default:
      return norm(value) === norm(item.value);
  }
}

/** Live check of each item: present, missing (nothing of its kind published), or wrong (something else published). */
export async function checkItems(
  items: readonly ChecklistItem[],
  servers: readonly Nameserver[],
  timeoutMs = 2000,
): Promise<CheckedItem[]> {
  return Promise.all(
    items.map(async (item): Promise<CheckedItem> => {
      try {
        const answer = await lookup(servers, item.name, item.type, timeoutMs);
        const found = relevant(item, answer.values);
        if (found.length === 0) return { ...item, status: 'missing', found: answer.values, fix: `add: ${item.record}` };
        if (found.some((f) => matches(item, f))) return { ...item, status: 'present', found };
        return { ...item, status: 'wrong', found, fix: `replace ${found.map((f) => JSON.stringify(f)).join(', ')} with: ${item.record}` };
      } catch (e) {
        return { ...item, status: 'error', found: [], fix: `could not look up ${item.name} ${item.type}: ${(e as Error).message}` };
      }
    }),
  );
}
