import type { CallerApi, Row } from '../api.js';
import { clientMailChange, mailChange, mailData, pageBodies } from './mail-item.js';
import type { WbxmlElement } from './wbxml/index.js';
import { sinceOf, type Source } from './sync-source.js';

// A mail folder as a Sync collection: messages by uid, their change key bumped by every write. A
// device changes read and flag only (the server's wins when both changed), deletes as a move to
// Deleted Items unless it says otherwise, and never adds mail through Sync (drafts go through SendMail).

export function mailSource(caller: CallerApi, folderUid: string): Source {
  return {
    id: folderUid,
    className: 'Email',
    push: { channel: folderUid },
    keys: (filterType) => caller.folderKeys(folderUid, sinceOf(filterType)),
    async rows(uids) {
      const out = new Map<string, Row>();
      for (let i = 0; i < uids.length; i += 500)
        for (const row of await caller.folderItems(folderUid, { uids: uids.slice(i, i + 500), limit: 500 })) out.set(String(row.uid), row);
      return out;
    },
    fillPage: (before, filterType, limit) =>
      caller.folderItems(folderUid, { before, newestFirst: true, since: sinceOf(filterType), limit }),
    toData: (row, x) => mailData(caller, row, x.prefs, x.mimeSupport),
    async toDataMany(rows, x) {
      const bodies = await pageBodies(caller, folderUid, rows, x.prefs, x.mimeSupport);
      const out: WbxmlElement[][] = [];
      for (const row of rows) out.push(await mailData(caller, row, x.prefs, x.mimeSupport, bodies.get(String(row.uid))));
      return out;
    },
    changeData: (row) => Promise.resolve(mailChange(row)),
    add: () => Promise.resolve(null),
    async change(id, data, held, policy) {
      // Server wins (the default): a message changed on the server since the device got it keeps
      // the server's read and flag, which the round sends back as a Change.
      if (policy === 'server' && held !== undefined) {
        const [now] = await caller.folderItems(folderUid, { uids: [id], limit: 1 });
        if (now && String(now.version) !== held) return 'conflict';
      }
      const row = await caller.setFlags(id, clientMailChange(data));
      return String(row.version);
    },
    async remove(id, { deletesAsMoves }) {
      if (deletesAsMoves) await caller.trashMessage(id);
      else await caller.deleteMessage(id);
      return null;
    },
  };
}
