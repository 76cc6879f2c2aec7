import type { BulkOp } from './bulk.js';
import type { Folder } from './types.js';

/** A "Move to…" picker of the mailbox's folders (the message's own folder left out). */
export function MovePicker({ folders, except, onMove }: { folders: Folder[]; except: string; onMove(folderUid: string): void }) {
  return (
    <select aria-label="Move to folder" value="" onChange={(e) => e.target.value && onMove(e.target.value)}>
      <option value="">Move to…</option>
      {folders
        .filter((f) => f.uid !== except)
        .map((f) => (
          <option key={f.uid} value={f.uid}>
            {f.name}
          </option>
        ))}
    </select>
  );
}

/** What can be done to the picked messages at once. */
export function BulkBar({
  count,
  folders,
  folderUid,
  onBulk,
  onClear,
}: {
  count: number;
  folders: Folder[];
  folderUid: string;
  onBulk(op: BulkOp): void;
  onClear(): void;
}) {
  const set = (field: 'seen' | 'flagged', value: boolean, label: string) => (
    <button type="button" className="secondary" onClick={() => onBulk({ kind: 'set', field, value })}>
      {label}
    </button>
  );
  return (
    <div className="toolbar bulk" role="toolbar" aria-label="Picked messages">
      <span>{count} picked</span>
      {set('seen', true, 'Mark read')}
      {set('seen', false, 'Mark unread')}
      {set('flagged', true, 'Flag')}
      {set('flagged', false, 'Unflag')}
      <MovePicker folders={folders} except={folderUid} onMove={(uid) => onBulk({ kind: 'move', folderUid: uid })} />
      <button type="button" className="secondary" onClick={() => onBulk({ kind: 'trash' })}>
        Delete
      </button>
      <button type="button" className="secondary" onClick={onClear}>
        Clear
      </button>
    </div>
  );
}
