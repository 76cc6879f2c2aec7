import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isApiError } from '../errors/index.js';
import {
  CalendarEventModel,
  ContactModel,
  contactFields,
  eventRecordOf,
  icsToEvents,
  NoteModel,
  noteFields,
  TaskListModel,
  taskListFields,
  TaskModel,
  taskFields,
  vcfToContacts,
  type ContactData,
  type EventData,
} from '../pim/index.js';
import type { Deps } from '../context/index.js';
import type { ModelDef, Row } from '../storage/index.js';
import type { PimFile } from './import-sources.js';
import type { PimCounts, PimKind } from './models.js';

const ENTITY: Record<PimKind, string> = {
  calendarEvents: 'calendarEvent',
  contacts: 'contact',
  notes: 'note',
  taskLists: 'taskList',
  tasks: 'task',
};
const contactSchema = z.object(contactFields);
const noteSchema = z.object(noteFields);
const taskListSchema = z.object(taskListFields);
const taskSchema = z.object(taskFields);
const same = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();
const emailSet = (c: Pick<ContactData, 'emails'>) =>
  c.emails
    .map((e) => e.value.toLowerCase())
    .sort()
    .join(',');

export interface PimReporter {
  counts: PimCounts;
  /** A skipped or failed item: its position in its file, where it came from and why. */
  note(index: number, entry: string, reason: string): void;
  progress(): Promise<void>;
}

/** One restore: the mailbox, the request whose uid derives each created record's uid, and the reporter. */
interface Restore {
  deps: Deps;
  mailboxUid: string;
  requestUid: string;
  r: PimReporter;
}

/** The uid of the record made from item n of a file: the same for a job restarted on the same request. */
const derived = (x: Restore, file: string, n: number) =>
  createHash('sha256').update(`import\0${x.requestUid}\0${file}\0${n}`).digest('hex');

/** Files item n of a file (or of a part of it, "tasks.json tasks"): already filed by this request → imported; a duplicate → skipped; else created. */
async function put<T extends Record<string, unknown>>(
  x: Restore,
  kind: PimKind,
  model: ModelDef,
  file: string,
  n: number,
  data: T,
  duplicate: () => Promise<string | null>,
): Promise<Row<T> | null> {
  const { deps, mailboxUid, r } = x;
  const c = r.counts[kind];
  const uid = derived(x, file, n);
  const repo = deps.store.repo<T>(model);
  const earlier = await repo.get(uid);
  if (earlier) {
    c.imported += 1;
    return earlier;
  }
  const dup = await duplicate();
  if (dup) {
    c.skipped += 1;
    r.note(n, `${file} #${n + 1}`, `duplicate: ${dup}`);
    return null;
  }
  try {
    const rec = await repo.create({ ...data, mailboxUid, uid } as T & { uid: string });
    deps.events.publish([rec.uid, mailboxUid], { type: ENTITY[kind], action: 'create', data: { ...rec } });
    c.imported += 1;
    await r.progress();
    return rec;
  } catch (e) {
    if (!isApiError(e)) throw e;
    c.failed += 1;
    r.note(n, `${file} #${n + 1}`, e.message);
    return null;
  }
}

/** Counts item n of a kind as failed and notes why. */
function fail(x: Restore, kind: PimKind, n: number, entry: string, reason: string): void {
  x.r.counts[kind].failed += 1;
  x.r.note(n, entry, reason);
}

/** Parses a whole file; a file that could not be read or parsed counts as one failed item. */
function whole(x: Restore, kind: PimKind, f: PimFile, parse: (text: string) => void): void {
  if (f.error !== undefined || f.text === undefined) return fail(x, kind, 0, f.name, f.error ?? 'empty');
  try {
    parse(f.text);
  } catch (e) {
    fail(x, kind, 0, f.name, isApiError(e) ? e.message : `not readable: ${(e as Error).message}`);
  }
}

/** An .ics file's events; an event with the same UID and RECURRENCE-ID is a duplicate. */
async function restoreCalendar(x: Restore, f: PimFile): Promise<void> {
  const { mailboxUid } = x;
  let events: ReturnType<typeof icsToEvents>['events'] = [];
  whole(x, 'calendarEvents', f, (t) => {
    events = icsToEvents(t).events;
  });
  const repo = x.deps.store.repo<EventData & { mailboxUid: string }>(CalendarEventModel);
  for (const [n, ev] of events.entries()) {
    const data = eventRecordOf(mailboxUid, ev);
    if (!data) {
      fail(x, 'calendarEvents', n, `${f.name} #${n + 1}`, 'the event cannot be stored (no UID, or invalid fields)');
      continue;
    }
    const rid = data.recurrenceId ? new Date(data.recurrenceId).getTime() : null;
    await put(x, 'calendarEvents', CalendarEventModel, f.name, n, data, async () => {
      const hit = (await repo.list({ filter: { mailboxUid, icalUid: data.icalUid }, limit: 1000 })).some(
        (e) => (e.recurrenceId ? new Date(e.recurrenceId).getTime() : null) === rid,
      );
      return hit
        ? `the calendar already has the event ${data.icalUid}${rid === null ? '' : ` (occurrence ${new Date(rid).toISOString()})`}`
        : null;
    });
  }
}

/** A .vcf file's contacts; one with the same vCard UID, or the same name and addresses, is a duplicate. */
async function restoreContacts(x: Restore, f: PimFile): Promise<void> {
  const { mailboxUid } = x;
  let cards: ReturnType<typeof vcfToContacts> = [];
  whole(x, 'contacts', f, (t) => {
    cards = vcfToContacts(t);
  });
  const repo = x.deps.store.repo<ContactData & { mailboxUid: string }>(ContactModel);
  for (const [n, card] of cards.entries()) {
    if (!card.ok) {
      fail(x, 'contacts', n, `${f.name} #${n + 1}`, card.error);
      continue;
    }
    const { vcardUid, ...rest } = card.contact;
    const parsed = contactSchema.safeParse({ ...rest, ...(vcardUid ? { vcardUid } : {}), mailboxUid });
    if (!parsed.success) {
      fail(
        x,
        'contacts',
        n,
        `${f.name} #${n + 1}`,
        `invalid contact: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
      continue;
    }
    const data = parsed.data;
    await put(x, 'contacts', ContactModel, f.name, n, data, async () => {
      if (data.vcardUid && (await repo.findOne({ mailboxUid, vcardUid: data.vcardUid })))
        return `a contact with vCard UID ${data.vcardUid} is already in the mailbox`;
      const named = await repo.list({ filter: { mailboxUid, fn: data.fn }, limit: 1000 });
      return named.some((c) => same(c.fn, data.fn) && emailSet(c) === emailSet(data))
        ? `the contact ${data.fn} is already in the mailbox`
        : null;
    });
  }
}

/** An export's notes.json; a note with the same title and text is a duplicate. */
async function restoreNotes(x: Restore, f: PimFile): Promise<void> {
  const { mailboxUid } = x;
  let rows: unknown[] = [];
  whole(x, 'notes', f, (t) => {
    rows = z.array(z.unknown()).parse(JSON.parse(t));
  });
  const repo = x.deps.store.repo<z.infer<typeof noteSchema>>(NoteModel);
  for (const [n, row] of rows.entries()) {
    const parsed = noteSchema.safeParse({ ...(row as object), mailboxUid });
    if (!parsed.success) {
      fail(x, 'notes', n, `${f.name} #${n + 1}`, 'invalid note');
      continue;
    }
    const { title, body, color, pinned } = parsed.data;
    await put(x, 'notes', NoteModel, f.name, n, { title, body, color, pinned }, async () => {
      const hit = (await repo.list({ filter: { mailboxUid, title }, limit: 1000 })).some((y) => y.body === body);
      return hit ? `the note "${title || body.slice(0, 40)}" is already in the mailbox` : null;
    });
  }
}

/** The task lists of an export's tasks.json; a list with the same name is a duplicate its tasks join. Returns the archive's list uid → this mailbox's. */
async function restoreTaskLists(x: Restore, f: PimFile, taskLists: unknown[]): Promise<Map<string, string>> {
  const { mailboxUid } = x;
  const lists = x.deps.store.repo<z.infer<typeof taskListSchema>>(TaskListModel);
  const listUid = new Map<string, string>();
  for (const [n, row] of taskLists.entries()) {
    const old = (row as { uid?: unknown }).uid;
    const parsed = taskListSchema.safeParse({ ...(row as object), mailboxUid });
    if (!parsed.success || typeof old !== 'string') {
      fail(x, 'taskLists', n, `${f.name} taskLists #${n + 1}`, 'invalid task list');
      continue;
    }
    const name = parsed.data.name;
    let existing: Row<z.infer<typeof taskListSchema>> | undefined;
    const rec = await put(x, 'taskLists', TaskListModel, `${f.name} taskLists`, n, { name }, async () => {
      existing = (await lists.list({ filter: { mailboxUid }, limit: 10_000 })).find((l) => same(l.name, name));
      return existing ? `the task list ${name} is already in the mailbox; its tasks join it` : null;
    });
    const target = rec ?? existing;
    if (target) listUid.set(old, target.uid);
  }
  return listUid;
}

/** The tasks of an export's tasks.json, each into its restored list; a task with the same list, title and due date is a duplicate. */
async function restoreTaskItems(x: Restore, f: PimFile, rows: unknown[], listUid: Map<string, string>): Promise<void> {
  const tasks = x.deps.store.repo<z.infer<typeof taskSchema>>(TaskModel);
  for (const [n, row] of rows.entries()) {
    const entry = `${f.name} tasks #${n + 1}`;
    const parsed = taskSchema.safeParse({ ...(row as object), mailboxUid: x.mailboxUid });
    if (!parsed.success) {
      fail(x, 'tasks', n, entry, 'invalid task');
      continue;
    }
    const taskListUid = listUid.get(parsed.data.taskListUid);
    if (!taskListUid) {
      fail(x, 'tasks', n, entry, 'its task list is not in the archive');
      continue;
    }
    const { title, notes, due, completed, completedAt, priority } = parsed.data;
    const dueAt = due ? due.getTime() : null;
    await put(
      x,
      'tasks',
      TaskModel,
      `${f.name} tasks`,
      n,
      { taskListUid, title, notes, due, completed, completedAt: completed ? completedAt : null, priority },
      async () => {
        const hit = (await tasks.list({ filter: { taskListUid, title }, limit: 1000 })).some(
          (t) => (t.due ? new Date(t.due).getTime() : null) === dueAt,
        );
        return hit ? `the task ${title} is already in its list` : null;
      },
    );
  }
}

/** An export's tasks.json: its task lists first, then their tasks. */
async function restoreTasks(x: Restore, f: PimFile): Promise<void> {
  let doc: { taskLists: unknown[]; tasks: unknown[] } = { taskLists: [], tasks: [] };
  whole(x, 'tasks', f, (t) => {
    doc = z.object({ taskLists: z.array(z.unknown()), tasks: z.array(z.unknown()) }).parse(JSON.parse(t));
  });
  const listUid = await restoreTaskLists(x, f, doc.taskLists);
  await restoreTaskItems(x, f, doc.tasks, listUid);
}

const BY_KIND: Record<PimFile['kind'], (x: Restore, f: PimFile) => Promise<void>> = {
  ics: restoreCalendar,
  vcf: restoreContacts,
  notes: restoreNotes,
  tasks: restoreTasks,
};

/**
 * Restores the calendar, contacts, notes and tasks of an import's zip into the mailbox, each item
 * on its own. What the mailbox already holds is skipped: an event with the same UID and
 * RECURRENCE-ID, a contact with the same vCard UID or the same name and addresses, a note with
 * the same title and text, a task list with the same name (its tasks join it), a task with the same
 * list, title and due date. Each created record's uid is derived from the request and the item's
 * place in the archive, so a job restarted after a worker died counts what it filed before as
 * imported and files nothing twice.
 */
export async function restorePim(
  deps: Deps,
  mailboxUid: string,
  requestUid: string,
  files: AsyncIterable<PimFile>,
  r: PimReporter,
): Promise<void> {
  const x: Restore = { deps, mailboxUid, requestUid, r };
  for await (const f of files) await BY_KIND[f.kind](x, f);
}
