import type { Folder } from './types.js';

/** The mailbox's folders as a listbox; the selected one is the folder shown. */
export function FolderTree({ folders, selected, onSelect }: { folders: Folder[]; selected: string; onSelect: (f: Folder) => void }) {
  const move = (e: React.KeyboardEvent, f: Folder) => {
    const i = folders.indexOf(f);
    const next =
      e.key === 'ArrowDown' ? folders[i + 1] : e.key === 'ArrowUp' ? folders[i - 1] : e.key === 'Enter' || e.key === ' ' ? f : null;
    if (!next) return;
    e.preventDefault();
    onSelect(next);
    (e.currentTarget.parentElement?.querySelector(`[data-folder="${next.uid}"]`) as HTMLElement | null)?.focus();
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
          onClick={() => onSelect(f)}
          onKeyDown={(e) => move(e, f)}
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
