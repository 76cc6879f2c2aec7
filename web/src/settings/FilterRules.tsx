import { useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { RuleForm, type Named } from './RuleForm.js';
import { Section } from '../shared/Section.js';
import { create, remove, update, useRecords, type Rec } from '../shared/records.js';
import { describeRule, ruleBodyOf, type RuleBody } from './rule-model.js';

type Rule = Rec & RuleBody & { position: number };

/** Filter rules: run in order on delivered mail; each can be turned off, moved up or down, changed or deleted. */
export function FilterRules({ mailboxUid }: { mailboxUid: string }) {
  const box = encodeURIComponent(mailboxUid);
  const { rows, error, run } = useRecords<Rule>(`/api/mail/mail-filter-rules?mailboxUid=${box}&sort=position&limit=1000`);
  const [folders, setFolders] = useState<Named[]>([]);
  const [labels, setLabels] = useState<Named[]>([]);
  const [editing, setEditing] = useState<Rule | 'new' | null>(null);
  useEffect(() => {
    void api<Named[]>(`/api/mail/folders?mailboxUid=${box}&limit=1000`).then(setFolders, () => undefined);
    void api<Named[]>(`/api/mail/labels?mailboxUid=${box}&limit=1000`).then(setLabels, () => undefined);
  }, [box]);
  const names = (uid: string) => [...folders, ...labels].find((x) => x.uid === uid)?.name ?? uid;
  const save = async (r: RuleBody) => {
    const next = (rows ?? []).reduce((m, x) => Math.max(m, x.position + 1), 0);
    const done = await run(() =>
      editing && editing !== 'new'
        ? update('mail-filter-rules', editing, ruleBodyOf(r))
        : create('mail-filter-rules', { ...ruleBodyOf(r), mailboxUid, position: next }),
    );
    if (done) setEditing(null);
  };
  /** Swaps a rule with its neighbour: the list renumbered 0…n-1 in the new order (rules made elsewhere may share a position). */
  const swap = (i: number, j: number) =>
    run(async () => {
      const order = [...rows!];
      [order[i], order[j]] = [order[j], order[i]];
      for (const [position, r] of order.entries()) if (r.position !== position) await update('mail-filter-rules', r, { position });
    });
  return (
    <Section id="rules" title="Filter rules" intro="Rules run from the top on each delivered message that is not junk." error={error}>
      <ol className="rules">
        {rows?.map((r, i) => (
          <li key={r.uid}>
            <label className="inline">
              <input
                type="checkbox"
                checked={r.enabled}
                aria-label={`Rule ${r.name || i + 1} on`}
                onChange={(e) => {
                  const enabled = e.target.checked;
                  void run(
                    () => update('mail-filter-rules', r, { enabled }),
                    (all) => all.map((x) => (x.uid === r.uid ? { ...x, enabled } : x)),
                  );
                }}
              />
              <strong>{r.name || `Rule ${i + 1}`}</strong>
            </label>{' '}
            <span className="muted">{describeRule(r, names)}</span>{' '}
            <button type="button" className="link" disabled={i === 0} onClick={() => void swap(i, i - 1)}>
              Up
            </button>{' '}
            <button type="button" className="link" disabled={i === rows.length - 1} onClick={() => void swap(i, i + 1)}>
              Down
            </button>{' '}
            <button type="button" className="link" onClick={() => setEditing(r)}>
              Change
            </button>{' '}
            <button type="button" className="link" onClick={() => void run(() => remove('mail-filter-rules', r))}>
              Delete
            </button>
          </li>
        ))}
      </ol>
      {editing ? (
        <RuleForm
          key={editing === 'new' ? 'new' : editing.uid}
          start={editing === 'new' ? null : editing}
          folders={folders}
          labels={labels}
          onSave={(r) => void save(r)}
          onCancel={() => setEditing(null)}
        />
      ) : (
        <button type="button" onClick={() => setEditing('new')}>
          New rule
        </button>
      )}
    </Section>
  );
}
