import { useState } from 'react';
import { api } from '../shared/api.js';
import type { Folder } from './types.js';

type Editing = { kind: 'new' | 'rename'; name: string } | null;

/** New folder; rename or delete the selected folder when it is the user's own; empty Deleted Items and Junk. */
export function FolderActions({
  mailboxUid,
  folder,
  changed,
  setError,
}: {
  mailboxUid: string;
  folder: Folder | null;
  /** The folders changed: read them again (`open`: the folder to show). */
  changed(open?: string): Promise<unknown>;
  setError(e: unknown): void;
}) {
  const [editing, setEditing] = useState<Editing>(null);
  const run = (step: () => Promise<unknown>) => () => void step().then(() => setEditing(null), setError);
  const path = folder && `/api/mail/folders/${encodeURIComponent(folder.uid)}`;
  const save = run(async () => {
    const name = editing!.name.trim();
    if (!name) return;
    if (editing!.kind === 'new') {
      const made = await api<Folder>('/api/mail/folders', { method: 'POST', body: { mailboxUid, name, parentUid: null } });
      await changed(made.uid);
    } else {
      await api(`${path}/name`, { method: 'PUT', body: { value: name, version: folder!.version } });
      await changed();
    }
  });
  const remove = run(async () => {
    if (!confirm(`Delete the folder "${folder!.name}" and the messages in it?`)) return;
    await api(path!, { method: 'DELETE', body: { version: folder!.version } });
    await changed('');
  });
  const empty = run(async () => {
    if (!confirm(`Delete every message in ${folder!.name} for good?`)) return;
    await api(`${path}/empty`, { method: 'POST' });
    await changed();
  });
  if (editing)
    return (
      <form
        className="folder-form"
        onSubmit={(e) => {
          e.preventDefault();
          save();
        }}
      >
        <label>
          {editing.kind === 'new' ? 'New folder name' : 'New name'}{' '}
          <input type="text" autoFocus value={editing.name} onChange={(e) => setEditing({ ...editing, name: e.target.value })} />
        </label>{' '}
        <button type="submit">{editing.kind === 'new' ? 'Create' : 'Rename'}</button>{' '}
        <button type="button" className="secondary" onClick={() => setEditing(null)}>
          Cancel
        </button>
      </form>
    );
  const own = folder && folder.role === null;
  return (
    <div className="toolbar folder-actions" role="toolbar" aria-label="Folder actions">
      <button type="button" className="secondary" onClick={() => setEditing({ kind: 'new', name: '' })}>
        New folder
      </button>
      {own && (
        <button type="button" className="secondary" onClick={() => setEditing({ kind: 'rename', name: folder.name })}>
          Rename
        </button>
      )}
      {own && (
        <button type="button" className="secondary" onClick={remove}>
          Delete folder
        </button>
      )}
      {folder && (folder.role === 'trash' || folder.role === 'junk') && (
        <button type="button" className="secondary" onClick={empty}>
          Empty {folder.name}
        </button>
      )}
    </div>
  );
}
