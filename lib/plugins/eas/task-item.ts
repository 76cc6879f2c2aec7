import type { Row } from '../api.js';
import { textOf } from './protocol.js';
import { bodyText, parseDate, textBody } from './sync-pim.js';
import type { ItemContext } from './sync-source.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// A task as a device holds it (MS-ASTASK) and back: Subject, Body (the notes, plain text),
// Importance (low/normal/high ⇄ 0/1/2), the due date (UtcDueDate and DueDate both the stored UTC
// time: the server keeps no task zone), Complete and DateCompleted (the server's completion time:
// a device's DateCompleted is not stored). Start dates, reminders, recurrence and categories have
// no field on the server: sent back without them.

const tk = ns('Tasks');

const IMPORTANCE: Record<string, number> = { low: 0, normal: 1, high: 2 };
const PRIORITY = ['low', 'normal', 'high'] as const;

/** Tasks dates: ISO 8601 in UTC with milliseconds. */
const iso = (d: unknown) => new Date(d as Date).toISOString();

/** The ApplicationData of a task. */
export function taskData(row: Row, x: ItemContext): WbxmlElement[] {
  const done = row.completed === true;
  return [
    textBody(String(row.notes ?? ''), x.prefs),
    tk('Subject', String(row.title ?? '')),
    tk('Importance', IMPORTANCE[String(row.priority)] ?? 1),
    ...(row.due ? [tk('UtcDueDate', iso(row.due)), tk('DueDate', iso(row.due))] : []),
    tk('Complete', done ? '1' : '0'),
    ...(done ? [tk('DateCompleted', iso(row.completedAt ?? row.updatedAt))] : []),
    tk('Sensitivity', '0'),
    tk('ReminderSet', '0'),
  ];
}

/** The task fields a device's Add or Change sets. */
export function taskFields(data: WbxmlElement | undefined, _x: ItemContext, current: Row | null): Record<string, unknown> {
  const subject = (textOf(data, 'Subject') ?? '').trim();
  const importance = Number(textOf(data, 'Importance') ?? 1);
  const due = parseDate(textOf(data, 'UtcDueDate')) ?? parseDate(textOf(data, 'DueDate')) ?? null;
  const notes = bodyText(data);
  return {
    title: (subject || String(current?.title ?? '') || 'Untitled').slice(0, 500),
    priority: PRIORITY[importance] ?? 'normal',
    due,
    completed: textOf(data, 'Complete') === '1',
    ...(notes !== undefined ? { notes } : current ? {} : { notes: '' }),
  };
}

/** Tasks' FilterType 8 (incomplete tasks only); any other value: every task. */
export const taskInWindow = (row: Row, filterType: number) => filterType !== 8 || row.completed !== true;
