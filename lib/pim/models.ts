import { z } from 'zod';
import { rruleProblem } from './ics.js';
import { defineModel } from '../storage/index.js';
import { mailboxUid, shortText } from './shared.js';

const email = z.string().trim().toLowerCase().max(320).pipe(z.email());
const isoDate = z.coerce.date();

// The same check as the import (lib/pim/ics.ts rruleProblem): a rule ical.js cannot expand would fail
// or hang every calendar view of the event.
const rrule = z
  .string()
  .trim()
  .max(500)
  .refine((s) => rruleProblem(s) === null, 'must be an RFC 5545 RRULE value such as FREQ=WEEKLY;BYDAY=MO');

const timeZone = z
  .string()
  .max(64)
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, 'must be an IANA time zone such as Europe/Berlin');

export const PARTSTATS = ['needs-action', 'accepted', 'declined', 'tentative', 'delegated'] as const;
export const attendee = z
  .object({
    email,
    name: shortText(200).optional(),
    role: z.enum(['chair', 'req-participant', 'opt-participant', 'non-participant']).default('req-participant'),
    partstat: z.enum(PARTSTATS).default('needs-action'),
  })
  .strict();

export const calendarEventFields = {
  mailboxUid,
  /** iCalendar UID: shared by every occurrence and exception of one event, stable across import/export. */
  icalUid: z.string().trim().min(1).max(255).optional(),
  summary: shortText(500).default(''),
  description: shortText(20_000).default(''),
  location: shortText(500).default(''),
  start: isoDate,
  end: isoDate,
  allDay: z.boolean().default(false),
  /** The zone the event was planned in (recurrences expand in it across DST changes). */
  timeZone: timeZone.default('UTC'),
  rrule: rrule.nullable().default(null),
  /** Excluded occurrence start times. */
  exdates: z.array(isoDate).max(1000).default([]),
  /** Set on an exception: the start of the occurrence it replaces. */
  recurrenceId: isoDate.nullable().default(null),
  status: z.enum(['tentative', 'confirmed', 'cancelled']).default('confirmed'),
  organizer: z
    .object({ email, name: shortText(200).optional() })
    .strict()
    .nullable()
    .default(null),
  attendees: z.array(attendee).max(500).default([]),
  reminders: z
    .array(z.object({ minutesBefore: z.number().int().min(0).max(40_320) }).strict())
    .max(20)
    .default([]),
  sequence: z.number().int().nonnegative().default(0),
};

export const CalendarEventModel = defineModel({
  name: 'calendar_event',
  table: 'calendar_events',
  fields: calendarEventFields,
  indexes: [{ fields: ['mailboxUid', 'start'] }, { fields: ['mailboxUid', 'icalUid'] }],
});

export const calendarShareLinkFields = {
  mailboxUid,
  name: shortText(200).default(''),
  /** The secret in the feed URL (256 random bits); only the mailbox's owners can read the record. */
  token: z.string().default(''),
  revoked: z.boolean().default(false),
};
export const CalendarShareLinkModel = defineModel({
  name: 'calendar_share_link',
  table: 'calendar_share_links',
  fields: calendarShareLinkFields,
  indexes: [{ fields: ['token'], unique: true }, { fields: ['mailboxUid'] }],
});

const typed = z.object({ type: shortText(40).default('other'), value: shortText(320) }).strict();
export const contactFields = {
  mailboxUid,
  fn: shortText(300).min(1),
  givenName: shortText(200).default(''),
  /** Additional names (vCard N's third part), as phones show them between the given and family names. */
  middleName: shortText(200).default(''),
  familyName: shortText(200).default(''),
  emails: z
    .array(z.object({ type: shortText(40).default('other'), value: email }).strict())
    .max(50)
    .default([]),
  phones: z.array(typed).max(50).default([]),
  org: shortText(300).default(''),
  title: shortText(300).default(''),
  addresses: z.array(typed).max(20).default([]),
  birthday: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$|^--\d{2}-\d{2}$/, 'YYYY-MM-DD or --MM-DD')
    .nullable()
    .default(null),
  note: shortText(10_000).default(''),
  categories: z.array(shortText(100)).max(50).default([]),
  /** The vCard UID, kept across import and export. */
  vcardUid: z.string().max(255).optional(),
};
export const ContactModel = defineModel({
  name: 'contact',
  table: 'contacts',
  fields: contactFields,
  indexes: [{ fields: ['mailboxUid', 'fn'] }],
});

export const contactListFields = {
  mailboxUid,
  name: shortText(200).min(1),
  /** Contact uids of the same mailbox, or plain addresses. */
  members: z
    .array(z.union([z.object({ contactUid: z.string().min(1) }).strict(), z.object({ email }).strict()]))
    .max(5000)
    .default([]),
};
export const ContactListModel = defineModel({
  name: 'contact_list',
  table: 'contact_lists',
  fields: contactListFields,
  indexes: [{ fields: ['mailboxUid'] }],
});

export const noteFields = {
  mailboxUid,
  title: shortText(300).default(''),
  body: shortText(100_000).default(''),
  color: z
    .string()
    .regex(/^#[0-9a-fA-F]{6}$/)
    .nullable()
    .default(null),
  pinned: z.boolean().default(false),
};
export const NoteModel = defineModel({ name: 'note', table: 'notes', fields: noteFields, indexes: [{ fields: ['mailboxUid', 'pinned'] }] });

export const taskListFields = { mailboxUid, name: shortText(200).min(1) };
export const TaskListModel = defineModel({
  name: 'task_list',
  table: 'task_lists',
  fields: taskListFields,
  indexes: [{ fields: ['mailboxUid'] }],
});

export const taskFields = {
  mailboxUid,
  taskListUid: z.string().min(1),
  title: shortText(500).min(1),
  notes: shortText(20_000).default(''),
  due: isoDate.nullable().default(null),
  completed: z.boolean().default(false),
  completedAt: isoDate.nullable().default(null),
  priority: z.enum(['low', 'normal', 'high']).default('normal'),
};
export const TaskModel = defineModel({
  name: 'task',
  table: 'tasks',
  fields: taskFields,
  indexes: [{ fields: ['taskListUid', 'completed'] }, { fields: ['mailboxUid', 'due'] }],
});
