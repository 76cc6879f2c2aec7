import type { RefObject } from 'react';
import { useShortcuts, type Shortcut } from '../shared/shortcuts.js';
import type { ListHandle } from './MessageList.js';
import type { ComposeStart } from './compose/open.js';
import { SEARCH_INPUT_ID } from './search/Search.js';
import type { MessageActions } from './Reader.js';
import type { Folder, Message } from './types.js';

interface Deps {
  list: RefObject<ListHandle | null>;
  open: Message | null;
  folders: Folder[];
  openMessage(m: Message): void;
  actions: MessageActions;
  toggleHelp(): void;
  compose(start: ComposeStart): void;
  /** The mail view is showing (its keys are not the other views'). */
  active: boolean;
}

/**
 * The mail page's shortcuts (j/k to walk the list, r/a/f to reply, reply all and forward, c to write, / to search,
 * e to archive, # to delete, ? for the sheet); answers them for the help sheet.
 */
export function useMailShortcuts({ list, open, folders, openMessage, actions, toggleHelp, compose, active }: Deps): Shortcut[] {
  const step = (by: number) => {
    const shown = list.current;
    if (!shown || !shown.pager.total) return;
    const at = open ? shown.pager.indexOf((r) => r.uid === open.uid) : -1;
    const next = Math.min(shown.pager.total - 1, Math.max(0, at < 0 ? 0 : at + by));
    shown.reveal(next);
    void shown.pager.ensure(next, next + 1).then(() => {
      const m = shown.pager.row(next);
      if (m) openMessage(m);
    });
  };
  const archive = folders.find((f) => f.role === 'archive');
  const shortcuts: Shortcut[] = [
    { key: 'j', does: 'Next message', run: () => step(1) },
    { key: 'k', does: 'Previous message', run: () => step(-1) },
    { key: 'r', does: 'Reply', run: () => open && compose({ kind: 'reply', of: open }) },
    { key: 'a', does: 'Reply all', run: () => open && compose({ kind: 'replyAll', of: open }) },
    { key: 'f', does: 'Forward', run: () => open && compose({ kind: 'forward', of: open }) },
    { key: 'c', does: 'Write a new message', run: () => compose({ kind: 'new' }) },
    { key: '/', does: 'Search', run: () => document.getElementById(SEARCH_INPUT_ID)?.focus() },
    { key: 'e', does: 'Archive the open message', run: () => open && archive && void actions.move(open, archive.uid) },
    { key: '#', does: 'Delete the open message', run: () => open && void actions.trash(open) },
    { key: '?', does: 'Show or hide these shortcuts', run: toggleHelp },
  ];
  useShortcuts(shortcuts, active);
  return shortcuts;
}
