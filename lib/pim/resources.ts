import { randomBytes, randomUUID } from 'node:crypto';
import { ApiError, invalid } from '../errors/index.js';
import type { Ctx } from '../context/index.js';
import {
  CalendarEventModel,
  CalendarShareLinkModel,
  ContactListModel,
  ContactModel,
  NoteModel,
  TaskListModel,
  TaskModel,
} from './models.js';
import { pimResource } from './shared.js';

const SCHEDULING_FIELDS = ['start', 'end', 'rrule', 'location', 'exdates', 'allDay', 'timeZone'];

function checkTimes(start: unknown, end: unknown): void {
  if (new Date(start as Date).getTime() > new Date(end as Date).getTime())
    throw invalid('end must not be before start', [{ path: 'end', message: 'before start' }]);
}

export const calendarEventsResource = pimResource({
  name: 'calendar-events',
  entity: 'calendarEvent',
  summary: 'Calendar events (iCalendar semantics: recurrence rules and exceptions, time zones, attendees, reminders)',
  model: CalendarEventModel,
  serverFields: ['sequence'],
  hooks: {
    beforeCreate(_ctx, data) {
      checkTimes(data.start, data.end);
      return { ...data, icalUid: data.icalUid ?? `${randomUUID()}@svcmail` };
    },
    beforeUpdate(_ctx, rec, patch) {
      checkTimes(patch.start ?? rec.start, patch.end ?? rec.end);
      // RFC 5545 SEQUENCE: a change to when or where bumps it, so attendees' clients take the update.
      const rescheduled = SCHEDULING_FIELDS.some((f) => f in patch && JSON.stringify(patch[f]) !== JSON.stringify(rec[f]));
      return rescheduled ? { ...patch, sequence: (rec.sequence as number) + 1 } : patch;
    },
  },
});

export const calendarShareLinksResource = pimResource({
  name: 'calendar-share-links',
  entity: 'calendarShareLink',
  summary: 'Secret URLs serving a read-only ICS feed of the mailbox calendar; revoke or delete to end them',
  model: CalendarShareLinkModel,
  serverFields: ['token'],
  view: (rec) => ({ ...rec, path: `/api/mail/calendar-share-links/feed/${String(rec.token)}` }),
  hooks: {
    beforeCreate: (_ctx, data) => ({ ...data, token: randomBytes(32).toString('base64url') }),
  },
});

export const contactsResource = pimResource({
  name: 'contacts',
  entity: 'contact',
  summary: 'Contacts (vCard-compatible fields; import and export vCard)',
  model: ContactModel,
});

async function checkMembers(ctx: Ctx, mailboxUid: string, members: unknown): Promise<void> {
  const uids = (members as Array<{ contactUid?: string }> | undefined)?.flatMap((m) => (m.contactUid ? [m.contactUid] : [])) ?? [];
  if (!uids.length) return;
  const found = await ctx.store
    .repo<{ mailboxUid: string }>(ContactModel)
    .list({ filter: { uid: { $in: uids }, mailboxUid }, limit: uids.length });
  if (found.length !== new Set(uids).size)
    throw invalid('members name contacts that are not in this mailbox', [{ path: 'members', message: 'unknown contact' }]);
}

export const contactListsResource = pimResource({
  name: 'contact-lists',
  entity: 'contactList',
  summary: 'Named lists of contacts or addresses',
  model: ContactListModel,
  hooks: {
    async beforeCreate(ctx, data) {
      await checkMembers(ctx, data.mailboxUid as string, data.members);
      return data;
    },
    async beforeUpdate(ctx, rec, patch) {
      if (patch.members) await checkMembers(ctx, rec.mailboxUid as string, patch.members);
      return patch;
    },
  },
});

export const notesResource = pimResource({ name: 'notes', entity: 'note', summary: 'Notes', model: NoteModel });

export const taskListsResource = pimResource({
  name: 'task-lists',
  entity: 'taskList',
  summary: 'Task lists; tasks belong to one',
  model: TaskListModel,
  hooks: {
    async beforeDelete(ctx, rec) {
      if (await ctx.store.repo(TaskModel).count({ taskListUid: rec.uid }))
        throw new ApiError('api-120', 'delete or move the tasks of this list first');
    },
  },
});

export const tasksResource = pimResource({
  name: 'tasks',
  entity: 'task',
  summary: 'Tasks with due dates, priority and completion',
  model: TaskModel,
  parent: { resource: 'task-lists', field: 'taskListUid' },
  serverFields: ['completedAt'],
  hooks: {
    beforeCreate: (_ctx, data) => ({ ...data, completedAt: data.completed ? new Date() : null }),
    beforeUpdate(_ctx, rec, patch) {
      if (patch.completed === undefined || patch.completed === rec.completed) return patch;
      return { ...patch, completedAt: patch.completed ? new Date() : null };
    },
  },
});

export const pimResources = [
  calendarEventsResource,
  calendarShareLinksResource,
  contactsResource,
  contactListsResource,
  notesResource,
  taskListsResource,
  tasksResource,
];
