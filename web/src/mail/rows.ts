import type { ListHandle } from './MessageList.js';
import type { Message } from './types.js';

/** The loaded rows of the list with these uids (picked or dragged ones are loaded: they were on screen). */
export const rowsOf = (list: ListHandle | null, uids: string[]): Message[] =>
  list ? uids.map((uid) => list.pager.row(list.pager.indexOf((r) => r.uid === uid))).filter((m): m is Message => Boolean(m)) : [];
