// Filter rules as the API defines them (lib/mail/rules.ts): the operators each condition field
// takes, blank rows, and a rule as words for the list.

export type Condition =
  | { field: 'from' | 'to'; op: 'contains' | 'is' | 'endsWith'; value: string }
  | { field: 'subject'; op: 'contains' | 'is' | 'startsWith'; value: string }
  | { field: 'header'; name: string; op: 'contains' | 'is' | 'exists'; value: string }
  | { field: 'size'; op: 'over' | 'under'; value: number }
  | { field: 'hasAttachment'; value: boolean };

export type Action =
  | { type: 'move' | 'copy'; folderUid: string }
  | { type: 'markRead' | 'delete' }
  | { type: 'forward'; to: string[] }
  | { type: 'label'; labelUid: string };

export interface RuleBody {
  name: string;
  enabled: boolean;
  match: 'all' | 'any';
  conditions: Condition[];
  actions: Action[];
  stop: boolean;
}

export const FIELDS: Record<Condition['field'], { label: string; ops: string[] }> = {
  from: { label: 'From', ops: ['contains', 'is', 'endsWith'] },
  to: { label: 'To or Cc', ops: ['contains', 'is', 'endsWith'] },
  subject: { label: 'Subject', ops: ['contains', 'is', 'startsWith'] },
  header: { label: 'Header', ops: ['contains', 'is', 'exists'] },
  size: { label: 'Size (bytes)', ops: ['over', 'under'] },
  hasAttachment: { label: 'Has attachment', ops: [] },
};

export const OPS: Record<string, string> = {
  contains: 'contains',
  is: 'is',
  endsWith: 'ends with',
  startsWith: 'starts with',
  exists: 'exists',
  over: 'over',
  under: 'under',
};

export const ACTIONS: Record<Action['type'], string> = {
  move: 'Move to folder',
  copy: 'Copy to folder',
  markRead: 'Mark as read',
  delete: 'Delete',
  forward: 'Forward to',
  label: 'Label',
};

/** A new condition row of a field, with its first operator and an empty value. */
export function blankCondition(field: Condition['field']): Condition {
  if (field === 'size') return { field, op: 'over', value: 1_000_000 };
  if (field === 'hasAttachment') return { field, value: true };
  if (field === 'header') return { field, name: '', op: 'contains', value: '' };
  if (field === 'subject') return { field, op: 'contains', value: '' };
  return { field, op: 'contains', value: '' };
}

/** A new action row of a type, its target the first one there is. */
export function blankAction(type: Action['type'], firstFolder: string, firstLabel: string): Action {
  if (type === 'move' || type === 'copy') return { type, folderUid: firstFolder };
  if (type === 'forward') return { type, to: [] };
  if (type === 'label') return { type, labelUid: firstLabel };
  return { type };
}

/** A rule in words: "From contains boss → Move to folder Work". */
export function describeRule(r: RuleBody, names: (uid: string) => string): string {
  const cond = r.conditions.map((c) =>
    c.field === 'hasAttachment'
      ? c.value
        ? 'has an attachment'
        : 'has no attachment'
      : `${c.field === 'header' ? `header ${c.name}` : FIELDS[c.field].label} ${OPS[c.op]}${c.field === 'header' && c.op === 'exists' ? '' : ` ${c.value}`}`,
  );
  const act = r.actions.map((a) =>
    'folderUid' in a
      ? `${ACTIONS[a.type]} ${names(a.folderUid)}`
      : 'labelUid' in a
        ? `Label ${names(a.labelUid)}`
        : 'to' in a
          ? `Forward to ${a.to.join(', ')}`
          : ACTIONS[a.type],
  );
  return `${cond.length ? cond.join(r.match === 'all' ? ' and ' : ' or ') : 'Every message'} → ${act.join(', ')}${r.stop ? ' (then stop)' : ''}`;
}

/** The rule's own fields (a stored rule also has uid, version, position…, which a change does not send). */
export const ruleBodyOf = ({ name, enabled, match, conditions, actions, stop }: RuleBody): RuleBody => ({
  name,
  enabled,
  match,
  conditions,
  actions,
  stop,
});
