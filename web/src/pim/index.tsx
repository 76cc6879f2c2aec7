// The personal-information views of the web app, loaded when first opened (their own chunk): the
// calendar, contacts and contact lists, tasks and task lists, notes.
import '../styles/pim.css';
import type { Mailbox } from '../mail/types.js';
import { Calendar } from './Calendar.js';
import { Contacts } from './Contacts.js';
import { Notes } from './Notes.js';
import { Tasks } from './Tasks.js';

export type PimViewName = 'calendar' | 'contacts' | 'tasks' | 'notes';

export default function PimView({ view, box }: { view: PimViewName; box: Mailbox }) {
  if (view === 'calendar') return <Calendar mailboxUid={box.uid} own={[box.address, ...box.aliases]} />;
  if (view === 'contacts') return <Contacts mailboxUid={box.uid} />;
  if (view === 'tasks') return <Tasks mailboxUid={box.uid} />;
  return <Notes mailboxUid={box.uid} />;
}
