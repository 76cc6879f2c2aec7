import { useEffect, useRef, useState } from 'react';
import { Section } from '../shared/Section.js';
import { create, remove, update, useRecords, type Rec } from '../shared/records.js';
import { DeleteLink } from '../shared/DeleteLink.js';

interface TaskList extends Rec {
  name: string;
}
interface Task extends Rec {
  title: string;
  due: string | null;
  completed: boolean;
  priority: 'low' | 'normal' | 'high';
}

/** One task list's tasks: done or not, due dates, priority; added and deleted. */
function TaskItems({ mailboxUid, list }: { mailboxUid: string; list: TaskList }) {
  const tasks = useRecords<Task>(`/api/mail/tasks?taskListUid=${encodeURIComponent(list.uid)}&sort=completed,due&limit=1000`);
  const [title, setTitle] = useState('');
  const [due, setDue] = useState('');
  const [priority, setPriority] = useState<Task['priority']>('normal');
  return (
    <Section id="tasks" title={list.name} error={tasks.error}>
      <ul className="plain" aria-label={`Tasks of ${list.name}`}>
        {tasks.rows?.map((t) => (
          <li key={t.uid} className={t.completed ? 'done' : undefined}>
            <label className="inline">
              <input
                type="checkbox"
                checked={t.completed}
                onChange={(e) => {
                  // completedAt is the server's to set
                  const completed = e.target.checked;
                  void tasks.run(
                    () => update('tasks', t, { completed }),
                    (rows) => rows.map((x) => (x.uid === t.uid ? { ...x, completed } : x)),
                  );
                }}
              />{' '}
              {t.title}
            </label>{' '}
            {t.due && <span className="muted">due {new Date(t.due).toLocaleDateString()}</span>}{' '}
            {t.priority === 'high' && <strong>high priority</strong>}{' '}
            <DeleteLink what={`${t.title}`} onClick={() => void tasks.run(() => remove('tasks', t))} />
          </li>
        ))}
      </ul>
      <form
        className="inline-form"
        aria-label="New task"
        onSubmit={(e) => {
          e.preventDefault();
          const body = { mailboxUid, taskListUid: list.uid, title, priority, due: due ? new Date(`${due}T12:00:00`).toISOString() : null };
          void tasks.run(() => create('tasks', body)).then((ok) => ok && (setTitle(''), setDue('')));
        }}
      >
        <label>
          Task <input type="text" required value={title} onChange={(e) => setTitle(e.target.value)} />
        </label>{' '}
        <label>
          Due <input type="date" value={due} onChange={(e) => setDue(e.target.value)} />
        </label>{' '}
        <select aria-label="Priority" value={priority} onChange={(e) => setPriority(e.target.value as Task['priority'])}>
          <option value="low">low</option>
          <option value="normal">normal</option>
          <option value="high">high</option>
        </select>{' '}
        <button type="submit">Add task</button>
      </form>
    </Section>
  );
}

/** Task lists (one made for a mailbox that has none) and the chosen list's tasks. */
export function Tasks({ mailboxUid }: { mailboxUid: string }) {
  const lists = useRecords<TaskList>(`/api/mail/task-lists?mailboxUid=${encodeURIComponent(mailboxUid)}&sort=name&limit=1000`);
  const [chosen, setChosen] = useState('');
  const [name, setName] = useState('');
  const rows = lists.rows;
  // A mailbox without a task list gets one, once (a refusal — read-only access — is shown, not retried).
  const madeDefault = useRef(false);
  useEffect(() => {
    if (rows && !rows.length && !madeDefault.current) {
      madeDefault.current = true;
      void lists.run(() => create('task-lists', { mailboxUid, name: 'Tasks' }));
    } else if (rows?.length && !rows.some((l) => l.uid === chosen)) setChosen(rows[0].uid);
  }, [rows, chosen, mailboxUid, lists]);
  const list = rows?.find((l) => l.uid === chosen);
  return (
    <div className="pim-columns">
      <nav aria-label="Task lists">
        <ul className="plain">
          {rows?.map((l) => (
            <li key={l.uid}>
              <button type="button" className="link" aria-current={l.uid === chosen ? 'true' : undefined} onClick={() => setChosen(l.uid)}>
                {l.name}
              </button>
            </li>
          ))}
        </ul>
        <form
          className="inline-form"
          aria-label="New task list"
          onSubmit={(e) => {
            e.preventDefault();
            void lists.run(() => create('task-lists', { mailboxUid, name })).then((ok) => ok && setName(''));
          }}
        >
          <label>
            New list <input type="text" required value={name} onChange={(e) => setName(e.target.value)} />
          </label>{' '}
          <button type="submit">Add list</button>
        </form>
      </nav>
      {list && <TaskItems key={list.uid} mailboxUid={mailboxUid} list={list} />}
    </div>
  );
}
