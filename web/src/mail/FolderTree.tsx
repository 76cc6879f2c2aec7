import { useState, type DragEvent, type KeyboardEvent } from 'react';
import { DRAG_TYPE } from './MessageList.js';
import type { Folder } from './types.js';

/** How deep a folder sits (its parents up to the mailbox), for the indent. */
function depthOf(f: Folder, byUid: Map<string, Folder>): number {
  let depth = 0;
  for (let p = f.parentUid && byUid.get(f.parentUid); p && depth < 20; p = p.parentUid ? byUid.get(p.parentUid) : undefined) depth++;
  return depth;
}

/** The mailbox's folders as a listbox; the selected one is the folder shown; messages dragged from the list drop onto a folder. */
export function FolderTree({
  folders,
  selected,
  onSelect,
  onDrop,
}: {
  folders: Folder[];
  selected: string;
  onSelect(f: Folder): void;
  onDrop(f: Folder, uids: string[]): void;
}) {
  const [over, setOver] = useState('');
  const byUid = new Map(folders.map((f) => [f.uid, f]));
  const move = (e: KeyboardEvent, f: Folder) => {
    const i = folders.indexOf(f);
    const next =
      e.key === 'ArrowDown' ? folders[i + 1] : e.key === 'ArrowUp' ? folders[i - 1] : e.key === 'Enter' || e.key === ' ' ? f : null;
    if (!next) return;
    e.preventDefault();
    onSelect(next);
    (e.currentTarget.parentElement?.querySelector(`[data-folder="${next.uid}"]`) as HTMLElement | null)?.focus();
  };
  const dragOver = (e: DragEvent, f: Folder) => {
    if (!e.dataTransfer.types.includes(DRAG_TYPE) || f.uid === selected) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'move';
    setOver(f.uid);
  };
  const drop = (e: DragEvent, f: Folder) => {
    setOver('');
    const data = e.dataTransfer.getData(DRAG_TYPE);
    if (!data) return;
    e.preventDefault();
    onDrop(f, JSON.parse(data) as string[]);
  };
  return (
    <ul className="list" role="listbox" aria-label="Folders">
      {folders.map((f) => (
        <li
          key={f.uid}
          role="option"
          data-folder={f.uid}
          aria-selected={f.uid === selected}
          tabIndex={f.uid === selected ? 0 : -1}
          className={over === f.uid ? 'drop-target' : undefined}
          style={{ paddingLeft: `${0.6 + depthOf(f, byUid)}rem` }}
          onClick={() => onSelect(f)}
          onKeyDown={(e) => move(e, f)}
          onDragOver={(e) => dragOver(e, f)}
          onDragLeave={() => setOver('')}
          onDrop={(e) => drop(e, f)}
        >
          {f.name}
          {f.unreadCount > 0 && (
            <span className="badge" aria-label={`${f.unreadCount} unread`}>
              {f.unreadCount}
            </span>
          )}
        </li>
      ))}
    </ul>
  );
}
