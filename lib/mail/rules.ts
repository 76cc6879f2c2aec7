import { z } from 'zod';

// Spec: Per-mailbox delivery rules 3 — the user's filter rules run in order on mail that is not
// junk. Actions: move, copy, mark read, delete, forward, label. The evaluator is a pure function.

const text = z.string().trim().min(1).max(500);
export const ruleCondition = z.discriminatedUnion('field', [
  z.object({ field: z.literal('from'), op: z.enum(['contains', 'is', 'endsWith']), value: text }).strict(),
  z.object({ field: z.literal('to'), op: z.enum(['contains', 'is', 'endsWith']), value: text }).strict(),
  z.object({ field: z.literal('subject'), op: z.enum(['contains', 'is', 'startsWith']), value: text }).strict(),
  z
    .object({
      field: z.literal('header'),
      name: z.string().trim().min(1).max(100),
      op: z.enum(['contains', 'is', 'exists']),
      value: z.string().max(500).default(''),
    })
    .strict(),
  z.object({ field: z.literal('size'), op: z.enum(['over', 'under']), value: z.number().int().nonnegative() }).strict(),
  z.object({ field: z.literal('hasAttachment'), value: z.boolean() }).strict(),
]);
export type RuleCondition = z.infer<typeof ruleCondition>;

export const ruleAction = z.discriminatedUnion('type', [
  z.object({ type: z.literal('move'), folderUid: z.string().min(1) }).strict(),
  z.object({ type: z.literal('copy'), folderUid: z.string().min(1) }).strict(),
  z.object({ type: z.literal('markRead') }).strict(),
  z.object({ type: z.literal('delete') }).strict(),
  z.object({ type: z.literal('forward'), to: z.array(z.string().trim().toLowerCase().pipe(z.email())).min(1).max(10) }).strict(),
  z.object({ type: z.literal('label'), labelUid: z.string().min(1) }).strict(),
]);
export type RuleAction = z.infer<typeof ruleAction>;

export interface FilterRule {
  enabled: boolean;
  /** all: every condition must hold; any: one is enough. */
  match: 'all' | 'any';
  conditions: RuleCondition[];
  actions: RuleAction[];
  /** Stop evaluating later rules once this one matched. */
  stop: boolean;
}

/** What the evaluator looks at: already-parsed facts, so it never parses anything itself. */
export interface RuleInput {
  from: string;
  /** To and Cc addresses. */
  to: string[];
  subject: string;
  /** Lower-case header name → values. */
  headers: Map<string, string[]>;
  size: number;
  hasAttachment: boolean;
}

export interface RuleActions {
  /** The last move wins; undefined: the folder delivery chose. */
  folderUid?: string;
  copyTo: string[];
  seen: boolean;
  delete: boolean;
  forwardTo: string[];
  labels: string[];
  /** Indexes of the rules that matched, in order (for the audit trail and tests). */
  matched: number[];
}

const lc = (s: string) => s.toLowerCase();

function textTest(op: string, have: string, want: string): boolean {
  const h = lc(have);
  const w = lc(want);
  if (op === 'is') return h === w;
  if (op === 'endsWith') return h.endsWith(w);
  if (op === 'startsWith') return h.startsWith(w);
  return h.includes(w);
}

function holds(c: RuleCondition, m: RuleInput): boolean {
  switch (c.field) {
    case 'from':
      return textTest(c.op, m.from, c.value);
    case 'to':
      return m.to.some((a) => textTest(c.op, a, c.value));
    case 'subject':
      return textTest(c.op, m.subject, c.value);
    case 'header': {
      const values = m.headers.get(lc(c.name)) ?? [];
      return c.op === 'exists' ? values.length > 0 : values.some((v) => textTest(c.op, v, c.value));
    }
    case 'size':
      return c.op === 'over' ? m.size > c.value : m.size < c.value;
    case 'hasAttachment':
      return m.hasAttachment === c.value;
  }
}

/** Runs the rules in order; a rule with no conditions matches everything. Pure: no I/O, no clock. */
export function evaluateRules(rules: readonly FilterRule[], m: RuleInput): RuleActions {
  const out: RuleActions = { copyTo: [], seen: false, delete: false, forwardTo: [], labels: [], matched: [] };
  for (const [i, rule] of rules.entries()) {
    if (!rule.enabled) continue;
    const results = rule.conditions.map((c) => holds(c, m));
    const match = !results.length || (rule.match === 'all' ? results.every(Boolean) : results.some(Boolean));
    if (!match) continue;
    out.matched.push(i);
    for (const a of rule.actions) {
      if (a.type === 'move') out.folderUid = a.folderUid;
      else if (a.type === 'copy') out.copyTo.push(a.folderUid);
      else if (a.type === 'markRead') out.seen = true;
      else if (a.type === 'delete') out.delete = true;
      else if (a.type === 'forward') out.forwardTo.push(...a.to);
      else out.labels.push(a.labelUid);
    }
    if (rule.stop) break;
  }
  out.copyTo = [...new Set(out.copyTo)].filter((f) => f !== out.folderUid);
  out.forwardTo = [...new Set(out.forwardTo)];
  out.labels = [...new Set(out.labels)];
  return out;
}
