import { useState } from 'react';
import { ListInput } from '../shared/ListInput.js';
import { ACTIONS, FIELDS, OPS, blankAction, blankCondition, type Action, type Condition, type RuleBody } from './rule-model.js';

export interface Named {
  uid: string;
  name: string;
}

const EMPTY: RuleBody = { name: '', enabled: true, match: 'all', conditions: [], actions: [], stop: false };

/** One condition row: field, operator, value (a header also names the header). */
function ConditionRow({ c, n, set, drop }: { c: Condition; n: number; set(c: Condition): void; drop(): void }) {
  const label = `Condition ${n + 1}`;
  return (
    <fieldset className="rule-row">
      <legend className="visually-hidden">{label}</legend>
      <select aria-label={`${label} field`} value={c.field} onChange={(e) => set(blankCondition(e.target.value as Condition['field']))}>
        {Object.entries(FIELDS).map(([k, f]) => (
          <option key={k} value={k}>
            {f.label}
          </option>
        ))}
      </select>
      {c.field === 'header' && (
        <input
          type="text"
          aria-label={`${label} header name`}
          placeholder="Header name"
          value={c.name}
          onChange={(e) => set({ ...c, name: e.target.value })}
        />
      )}
      {'op' in c && (
        <select aria-label={`${label} operator`} value={c.op} onChange={(e) => set({ ...c, op: e.target.value } as Condition)}>
          {FIELDS[c.field].ops.map((o) => (
            <option key={o} value={o}>
              {OPS[o]}
            </option>
          ))}
        </select>
      )}
      {c.field === 'hasAttachment' ? (
        <select aria-label={`${label} value`} value={String(c.value)} onChange={(e) => set({ ...c, value: e.target.value === 'true' })}>
          <option value="true">yes</option>
          <option value="false">no</option>
        </select>
      ) : c.field === 'size' ? (
        <input
          type="number"
          min={0}
          aria-label={`${label} value`}
          value={c.value}
          onChange={(e) => set({ ...c, value: Number(e.target.value) })}
        />
      ) : (
        !(c.field === 'header' && c.op === 'exists') && (
          <input
            type="text"
            aria-label={`${label} value`}
            value={c.value}
            onChange={(e) => set({ ...c, value: e.target.value } as Condition)}
          />
        )
      )}
      <button type="button" className="link" onClick={drop}>
        Remove
      </button>
    </fieldset>
  );
}

/** One action row: what to do, and to which folder, label or addresses. */
function ActionRow({
  a,
  n,
  folders,
  labels,
  set,
  drop,
}: {
  a: Action;
  n: number;
  folders: Named[];
  labels: Named[];
  set(a: Action): void;
  drop(): void;
}) {
  const label = `Action ${n + 1}`;
  const pick = (list: Named[], value: string, onPick: (uid: string) => void) => (
    <select aria-label={`${label} target`} value={value} onChange={(e) => onPick(e.target.value)}>
      {list.map((x) => (
        <option key={x.uid} value={x.uid}>
          {x.name}
        </option>
      ))}
    </select>
  );
  return (
    <fieldset className="rule-row">
      <legend className="visually-hidden">{label}</legend>
      <select
        aria-label={`${label} type`}
        value={a.type}
        onChange={(e) => set(blankAction(e.target.value as Action['type'], folders[0]?.uid ?? '', labels[0]?.uid ?? ''))}
      >
        {Object.entries(ACTIONS).map(([k, v]) => (
          <option key={k} value={k}>
            {v}
          </option>
        ))}
      </select>
      {'folderUid' in a && pick(folders, a.folderUid, (folderUid) => set({ ...a, folderUid }))}
      {'labelUid' in a && pick(labels, a.labelUid, (labelUid) => set({ ...a, labelUid }))}
      {'to' in a && (
        <ListInput
          label={`${label} addresses`}
          placeholder="addresses, comma-separated"
          values={a.to}
          onChange={(to) => set({ ...a, to })}
        />
      )}
      <button type="button" className="link" onClick={drop}>
        Remove
      </button>
    </fieldset>
  );
}

/** The form of a new rule (or one being changed): name, all/any, conditions, actions, stop. */
export function RuleForm({
  start,
  folders,
  labels,
  onSave,
  onCancel,
}: {
  start: RuleBody | null;
  folders: Named[];
  labels: Named[];
  onSave(r: RuleBody): void;
  onCancel(): void;
}) {
  const [r, setR] = useState<RuleBody>(
    start ?? { ...EMPTY, conditions: [blankCondition('from')], actions: [blankAction('move', folders[0]?.uid ?? '', '')] },
  );
  const at = <T,>(list: T[], i: number, v: T | null) =>
    v === null ? list.filter((_, j) => j !== i) : list.map((x, j) => (j === i ? v : x));
  return (
    <form
      className="stack rule-form"
      aria-label={start ? `Change rule ${start.name}` : 'New rule'}
      onSubmit={(e) => {
        e.preventDefault();
        onSave(r);
      }}
    >
      <label>
        Name <input type="text" value={r.name} onChange={(e) => setR({ ...r, name: e.target.value })} />
      </label>
      <label>
        Applies when{' '}
        <select value={r.match} onChange={(e) => setR({ ...r, match: e.target.value as 'all' | 'any' })}>
          <option value="all">all conditions hold</option>
          <option value="any">any condition holds</option>
        </select>
      </label>
      {r.conditions.map((c, i) => (
        <ConditionRow
          key={i}
          c={c}
          n={i}
          set={(v) => setR({ ...r, conditions: at(r.conditions, i, v) })}
          drop={() => setR({ ...r, conditions: at(r.conditions, i, null) })}
        />
      ))}
      <span>
        <button type="button" className="secondary" onClick={() => setR({ ...r, conditions: [...r.conditions, blankCondition('from')] })}>
          Add condition
        </button>
      </span>
      {r.actions.map((a, i) => (
        <ActionRow
          key={i}
          a={a}
          n={i}
          folders={folders}
          labels={labels}
          set={(v) => setR({ ...r, actions: at(r.actions, i, v) })}
          drop={() => setR({ ...r, actions: at(r.actions, i, null) })}
        />
      ))}
      <span>
        <button
          type="button"
          className="secondary"
          onClick={() => setR({ ...r, actions: [...r.actions, blankAction('markRead', '', '')] })}
        >
          Add action
        </button>
      </span>
      <label className="inline">
        <input type="checkbox" checked={r.stop} onChange={(e) => setR({ ...r, stop: e.target.checked })} /> Stop here: later rules do not
        run when this one applies
      </label>
      <span>
        <button type="submit">Save rule</button>{' '}
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
      </span>
    </form>
  );
}
