import type { Dispatch, RefObject, SetStateAction } from 'react';
import { api, ApiFailure } from '../shared/api.js';
import { applyFolderEvent } from './live.js';
import type { ListHandle } from './MessageList.js';
import type { MessageActions } from './Reader.js';
import { bulkMove, bulkSet, bulkTrash, membersOf, type BulkOp } from './bulk.js';
import type { Folder, Message } from './types.js';

interface ActionDeps {
  list: RefObject<ListHandle | null>;
  openUid: RefObject<string>;
  setOpen: Dispatch<SetStateAction<Message | null>>;
  setFolders: Dispatch<SetStateAction<Folder[]>>;
  setError: (e: unknown) => void;
  /** Tells the user what became of an action (the page's status line). */
  tell: (text: string) => void;
}

/**
 * Sets one property of a message. A flag or the labels are the user's latest word: when the message
 * changed since the page read it (409: marked read a moment ago, another device), it is read again
 * and set on that version.
 */
async function setProperty(m: Message, field: 'seen' | 'flagged' | 'labels', value: unknown): Promise<Message> {
  const path = `/api/mail/messages/${encodeURIComponent(m.uid)}`;
  const put = (version: number) => api<Message>(`${path}/${field}`, { method: 'PUT', body: { value, version } });
  try {
    return await put(m.version);
  } catch (e) {
    if (!(e instanceof ApiFailure) || e.code !== 'api-108') throw e;
    return put((await api<Message>(path)).version);
  }
}

interface RecallAnswer {
  recalled: string[];
  notRecalled: string[];
}

/** What the reader and the list do to messages through the API, with the list, the open message and the counts kept in step. */
export function messageActions({ list, openUid, setOpen, setFolders, setError, tell }: ActionDeps): {
  actions: MessageActions;
  bulk(rows: Message[], op: BulkOp): Promise<void>;
} {
  /** The folder's counts as they are now (push brings them too; this also works without it); the open list follows its count. */
  const refreshFolder = async (uid: string) => {
    const now = await api<Folder>(`/api/mail/folders/${encodeURIComponent(uid)}`);
    setFolders((all) => applyFolderEvent(all, { channel: now.uid, type: 'folder', action: 'update', data: { ...now } }));
    if (uid === openUid.current && now.totalCount !== list.current?.pager.total) list.current?.reload(now.totalCount);
  };
  const act = async (step: () => Promise<void>) => {
    try {
      await step();
    } catch (e) {
      setError(e);
    }
  };
  /** One change to several messages; the rows and counts follow, the outcome is told. */
  const bulk = (picked: Message[], op: BulkOp) =>
    act(async () => {
      const rows = await membersOf(picked);
      const from = new Set(rows.map((m) => m.folderUid));
      const failed =
        op.kind === 'set'
          ? await bulkSet(rows, op.field, op.value, (m) => list.current?.replace(m))
          : op.kind === 'move'
            ? await bulkMove(rows, op.folderUid)
            : await bulkTrash(rows);
      const gone = new Set(op.kind === 'set' ? [] : rows.map((m) => m.uid));
      setOpen((o) => (o && gone.has(o.uid) ? null : o));
      await Promise.all([...from, ...(op.kind === 'move' ? [op.folderUid] : [])].map(refreshFolder));
      // Conversation rows stand for more messages than they show: their counts are read again.
      if (rows.length !== picked.length && list.current) list.current.reload(list.current.pager.total);
      const done = rows.length - failed.length;
      tell(failed.length ? `${done} of ${rows.length} done; ${failed.length} changed elsewhere meanwhile — try again.` : `${done} done.`);
    });
  return {
    bulk,
    actions: {
      setFlag: (m, field, value) =>
        act(async () => {
          const updated = await setProperty(m, field, value);
          list.current?.replace(updated);
          setOpen((o) => (o?.uid === m.uid ? updated : o));
          if (field === 'seen') await refreshFolder(m.folderUid);
        }),
      setLabels: (m, labels) =>
        act(async () => {
          const updated = await setProperty(m, 'labels', labels);
          list.current?.replace(updated);
          setOpen((o) => (o?.uid === m.uid ? updated : o));
        }),
      move: (m, folderUid) =>
        act(async () => {
          await api(`/api/mail/messages/${encodeURIComponent(m.uid)}/move`, { method: 'POST', body: { folderUid } });
          setOpen((o) => (o?.uid === m.uid ? null : o));
          await Promise.all([refreshFolder(m.folderUid), refreshFolder(folderUid)]);
        }),
      recall: (m) =>
        act(async () => {
          if (!confirm(`Recall "${m.subject || '(no subject)'}"? Recipients here who have not read it lose their copy.`)) return;
          const r = await api<RecallAnswer>(`/api/mail/messages/${encodeURIComponent(m.uid)}/recall`, { method: 'POST' });
          const outside = r.notRecalled.length ? ` Cannot recall from ${r.notRecalled.join(', ')} (outside this server).` : '';
          tell(
            `${r.recalled.length ? `Recall sent to ${r.recalled.join(', ')}; a report follows.` : 'No recipient here to recall it from.'}${outside}`,
          );
        }),
      trash: (m) =>
        act(async () => {
          await api(`/api/mail/messages/${encodeURIComponent(m.uid)}/trash`, { method: 'POST' });
          setOpen((o) => (o?.uid === m.uid ? null : o));
          await refreshFolder(m.folderUid);
        }),
    },
  };
}
