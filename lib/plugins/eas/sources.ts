import { isApiError, type CallerApi, type Row } from '../api.js';
import { dropOccurrence, eventData, eventFields, eventInWindow } from './calendar-item.js';
import { arrangeOverrides, eventKey, overridesOf, writeOverrides } from './calendar-overrides.js';
import type { EasRequest } from './command.js';
import { contactData, contactFields } from './contact-item.js';
import { recordSource } from './sync-pim.js';
import { mailSource } from './sync-mail.js';
import type { Source } from './sync-source.js';
import { taskData, taskFields, taskInWindow } from './task-item.js';

// Collection ids → sources. Mail folders keep their uids; the mailbox's contacts are `c-<mailbox
// uid>`, its calendar `k-<mailbox uid>`, its default task list (the oldest) `t-<mailbox uid>` and
// every other task list `t-<task list uid>`: stable for as long as each lives, at most 64
// characters. The default Tasks folder is listed even when the mailbox has no task list yet; the
// first task a device adds there makes one ("Tasks"), through the records API like any other.

export const CONTACTS = 'c-';
export const CALENDAR = 'k-';
export const TASKS = 't-';

export interface PimFolder {
  id: string;
  name: string;
  type: number;
}

/** MS-ASCMD 2.2.3.186.3 folder types of the personal-information folders. */
export const PIM_TYPES = { tasks: 7, calendar: 8, contacts: 9, userTasks: 15 } as const;

const created = (r: Row) => new Date(r.createdAt as Date).getTime() || 0;
const byAge = (a: Row, b: Row) => created(a) - created(b) || String(a.uid).localeCompare(String(b.uid));

async function taskLists(caller: CallerApi, mailboxUid: string): Promise<Row[]> {
  return (await caller.records('task-lists').list({ mailboxUid })).sort(byAge);
}

/** The mailbox's Contacts, Calendar and task-list folders as FolderSync lists them. */
export async function pimFolders(caller: CallerApi, mailboxUid: string): Promise<PimFolder[]> {
  const [first, ...others] = await taskLists(caller, mailboxUid);
  return [
    { id: CONTACTS + mailboxUid, name: 'Contacts', type: PIM_TYPES.contacts },
    { id: CALENDAR + mailboxUid, name: 'Calendar', type: PIM_TYPES.calendar },
    { id: TASKS + mailboxUid, name: first ? String(first.name) : 'Tasks', type: PIM_TYPES.tasks },
    ...others.map((l) => ({ id: TASKS + String(l.uid), name: String(l.name), type: PIM_TYPES.userTasks })),
  ];
}

async function taskSource(r: EasRequest, id: string): Promise<Source | null> {
  const { caller, mailboxUid } = r;
  const uid = id.slice(TASKS.length);
  let list: Row | null;
  if (uid === mailboxUid) list = (await taskLists(caller, mailboxUid))[0] ?? null;
  else {
    list = await caller
      .records('task-lists')
      .get(uid)
      .catch((e: unknown) => {
        if (isApiError(e)) return null;
        throw e;
      });
    if (!list || list.mailboxUid !== mailboxUid) return null;
  }
  // No list yet: an empty collection until the first Add makes one (and names it here).
  const filter = { taskListUid: list ? String(list.uid) : '' };
  return recordSource({
    id,
    className: 'Tasks',
    records: caller.records('tasks'),
    filter,
    push: null,
    inWindow: taskInWindow,
    toData: taskData,
    fromData: taskFields,
    async placement() {
      filter.taskListUid ||= String((await caller.records('task-lists').create({ mailboxUid, name: 'Tasks' })).uid);
      return { mailboxUid, taskListUid: filter.taskListUid };
    },
  });
}

/** Where a collection's changes are announced (Ping), without reading anything: null when nowhere (Ping polls). */
export function pushOf(r: EasRequest, id: string): Source['push'] {
  if (id === CONTACTS + r.mailboxUid) return { channel: r.mailboxUid, types: ['contact'] };
  if (id === CALENDAR + r.mailboxUid) return { channel: r.mailboxUid, types: ['calendarEvent'] };
  // A task list announces its tasks on its own channel; the default Tasks folder (t-<mailbox>) stands
  // for whichever list is oldest, which a channel name cannot follow: Ping compares it instead.
  if (id.startsWith(TASKS) && id !== TASKS + r.mailboxUid) return { channel: id.slice(TASKS.length), types: ['task'] };
  if (id.startsWith(TASKS) || id.startsWith(CONTACTS) || id.startsWith(CALENDAR)) return null;
  return { channel: id };
}

/**
 * The source of a collection the device's mailbox holds; null when there is none of that id
 * (Status 8). `synced`: the device already synced it (a mail folder is then not looked up again:
 * reading its items checks access all the same).
 */
export async function resolveSource(r: EasRequest, id: string, synced = false): Promise<Source | null> {
  const { caller, mailboxUid } = r;
  const own = (prefix: string) => id === prefix + mailboxUid;
  if (own(CONTACTS))
    return recordSource({
      id,
      className: 'Contacts',
      records: caller.records('contacts'),
      filter: { mailboxUid },
      push: pushOf(r, id),
      toData: contactData,
      fromData: contactFields,
      placement: () => Promise.resolve({ mailboxUid }),
    });
  if (own(CALENDAR)) {
    const address = String((await caller.mailbox()).address ?? '').toLowerCase();
    const events = caller.records('calendar-events');
    return recordSource({
      id,
      className: 'Calendar',
      records: events,
      filter: { mailboxUid },
      push: pushOf(r, id),
      inWindow: eventInWindow,
      arrange: arrangeOverrides,
      keyOf: eventKey,
      afterWrite: (written, data, before) => writeOverrides(events, written, data, overridesOf(before)),
      toData: (row, x) => eventData(row, x, address),
      fromData: eventFields,
      placement: () => Promise.resolve({ mailboxUid }),
      dropInstance: dropOccurrence,
    });
  }
  if (id.startsWith(TASKS)) return taskSource(r, id);
  if (id.startsWith(CONTACTS) || id.startsWith(CALENDAR) || !id) return null;
  if (synced) return mailSource(caller, id);
  const folder = await caller.folder(id).catch((e: unknown) => {
    if (isApiError(e)) return null;
    throw e;
  });
  return folder && folder.mailboxUid === mailboxUid ? mailSource(caller, id) : null;
}
