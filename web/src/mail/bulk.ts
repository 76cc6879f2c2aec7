// Changes to several picked messages: flags in one bulk PUT (each item succeeds or fails on its own,
// version-checked), moves and deletes one request each. Each answers the messages it could not change.
import { api } from '../shared/api.js';
import type { Message } from './types.js';

export type BulkOp = { kind: 'set'; field: 'seen' | 'flagged'; value: boolean } | { kind: 'move'; folderUid: string } | { kind: 'trash' };

interface BulkResult {
  uid: string;
  status: number;
  version?: number;
}

const enc = encodeURIComponent;

/** The messages rows stand for: a conversation's row is each of the conversation's messages in its folder. */
export async function membersOf(rows: Message[]): Promise<Message[]> {
  const out: Message[] = [];
  for (const m of rows)
    if (!m.thread || m.thread.count < 2) out.push(m);
    else out.push(...(await api<Message[]>(`/api/mail/messages?folderUid=${enc(m.folderUid)}&threadId=${enc(m.threadId)}&limit=1000`)));
  return out;
}

/** Sets a flag on each message (PUT /api/mail/messages); `changed` hears each updated message. */
export async function bulkSet(
  rows: Message[],
  field: 'seen' | 'flagged',
  value: boolean,
  changed: (m: Message) => void,
): Promise<Message[]> {
  const { results } = await api<{ results: BulkResult[] }>('/api/mail/messages', {
    method: 'PUT',
    body: rows.map((m) => ({ uid: m.uid, version: m.version, [field]: value })),
  });
  const byUid = new Map(rows.map((m) => [m.uid, m]));
  const ok = new Set<string>();
  for (const r of results) {
    const m = byUid.get(r.uid);
    if (r.status >= 300 || !m || r.version === undefined) continue;
    ok.add(r.uid);
    changed({ ...m, [field]: value, version: r.version });
  }
  return rows.filter((m) => !ok.has(m.uid));
}

/** Runs `step` for each message, a few at a time; answers those it failed for. */
async function each(rows: Message[], step: (m: Message) => Promise<unknown>): Promise<Message[]> {
  const failed: Message[] = [];
  for (let i = 0; i < rows.length; i += 4) await Promise.all(rows.slice(i, i + 4).map((m) => step(m).catch(() => failed.push(m))));
  return failed;
}

export const bulkMove = (rows: Message[], folderUid: string) =>
  each(rows, (m) => api(`/api/mail/messages/${encodeURIComponent(m.uid)}/move`, { method: 'POST', body: { folderUid } }));

export const bulkTrash = (rows: Message[]) =>
  each(rows, (m) => api(`/api/mail/messages/${encodeURIComponent(m.uid)}/trash`, { method: 'POST' }));
