// The pure filter-rule evaluator (lib/mail/rules.ts): conditions, match modes, order, stop, merging.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluateRules, ruleAction, ruleCondition, type FilterRule, type RuleInput } from '../../../lib/mail/index.js';

const msg = (o: Partial<RuleInput> = {}): RuleInput => ({
  from: 'boss@corp.example',
  to: ['alice@example.test', 'team@corp.example'],
  subject: 'Quarterly Report',
  headers: new Map([
    ['list-id', ['<dev.lists.example>']],
    ['x-priority', ['1']],
  ]),
  size: 50_000,
  hasAttachment: true,
  ...o,
});
const rule = (o: Partial<FilterRule>): FilterRule => ({
  enabled: true,
  match: 'all',
  conditions: [],
  actions: [{ type: 'markRead' }],
  stop: false,
  ...o,
});
const matches = (r: Partial<FilterRule>, m = msg()) => evaluateRules([rule(r)], m).matched.length === 1;

describe('evaluateRules conditions', () => {
  it('from: contains, is, endsWith — case-insensitive', () => {
    expect(matches({ conditions: [{ field: 'from', op: 'contains', value: 'BOSS' }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'from', op: 'is', value: 'boss@corp.example' }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'from', op: 'is', value: 'boss@corp' }] })).toBe(false);
    expect(matches({ conditions: [{ field: 'from', op: 'endsWith', value: '@CORP.example' }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'from', op: 'endsWith', value: '@other.example' }] })).toBe(false);
  });

  it('to/cc: any recipient', () => {
    expect(matches({ conditions: [{ field: 'to', op: 'is', value: 'team@corp.example' }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'to', op: 'contains', value: 'nobody' }] })).toBe(false);
    expect(matches({ conditions: [{ field: 'to', op: 'is', value: 'x@y.z' }] }, msg({ to: [] }))).toBe(false);
  });

  it('subject: contains, is, startsWith', () => {
    expect(matches({ conditions: [{ field: 'subject', op: 'startsWith', value: 'quarterly' }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'subject', op: 'startsWith', value: 'report' }] })).toBe(false);
    expect(matches({ conditions: [{ field: 'subject', op: 'is', value: 'quarterly report' }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'subject', op: 'contains', value: 'port' }] })).toBe(true);
  });

  it('header: exists, contains, is; names are case-insensitive', () => {
    expect(matches({ conditions: [{ field: 'header', name: 'List-Id', op: 'exists', value: '' }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'header', name: 'X-Spam', op: 'exists', value: '' }] })).toBe(false);
    expect(matches({ conditions: [{ field: 'header', name: 'list-id', op: 'contains', value: 'dev.lists' }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'header', name: 'X-Priority', op: 'is', value: '1' }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'header', name: 'X-Priority', op: 'is', value: '3' }] })).toBe(false);
  });

  it('size: over and under are strict', () => {
    expect(matches({ conditions: [{ field: 'size', op: 'over', value: 49_999 }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'size', op: 'over', value: 50_000 }] })).toBe(false);
    expect(matches({ conditions: [{ field: 'size', op: 'under', value: 50_001 }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'size', op: 'under', value: 50_000 }] })).toBe(false);
  });

  it('has-attachment both ways', () => {
    expect(matches({ conditions: [{ field: 'hasAttachment', value: true }] })).toBe(true);
    expect(matches({ conditions: [{ field: 'hasAttachment', value: false }] })).toBe(false);
    expect(matches({ conditions: [{ field: 'hasAttachment', value: false }] }, msg({ hasAttachment: false }))).toBe(true);
  });

  it('match all needs every condition, any needs one; no conditions matches everything', () => {
    const conditions = [
      { field: 'from', op: 'contains', value: 'boss' },
      { field: 'subject', op: 'contains', value: 'lunch' },
    ] as FilterRule['conditions'];
    expect(matches({ match: 'all', conditions })).toBe(false);
    expect(matches({ match: 'any', conditions })).toBe(true);
    expect(matches({ conditions: [] })).toBe(true);
  });
});

describe('evaluateRules actions and order', () => {
  it('runs rules in order: the last move wins, copies, labels and forwards merge without duplicates', () => {
    const out = evaluateRules(
      [
        rule({
          actions: [
            { type: 'move', folderUid: 'f1' },
            { type: 'label', labelUid: 'l1' },
            { type: 'copy', folderUid: 'c1' },
          ],
        }),
        rule({ enabled: false, actions: [{ type: 'delete' }] }),
        rule({ conditions: [{ field: 'subject', op: 'contains', value: 'nope' }], actions: [{ type: 'delete' }] }),
        rule({
          actions: [
            { type: 'move', folderUid: 'f2' },
            { type: 'label', labelUid: 'l1' },
            { type: 'forward', to: ['x@example.org'] },
            { type: 'copy', folderUid: 'f2' },
          ],
        }),
        rule({ actions: [{ type: 'forward', to: ['x@example.org', 'y@example.org'] }, { type: 'markRead' }] }),
      ],
      msg(),
    );
    expect(out).toEqual({
      folderUid: 'f2',
      copyTo: ['c1'],
      seen: true,
      delete: false,
      forwardTo: ['x@example.org', 'y@example.org'],
      labels: ['l1'],
      matched: [0, 3, 4],
    });
  });

  it('stop ends evaluation after a matching rule only', () => {
    const out = evaluateRules(
      [
        rule({ conditions: [{ field: 'subject', op: 'contains', value: 'nothing' }], stop: true, actions: [{ type: 'delete' }] }),
        rule({ stop: true, actions: [{ type: 'label', labelUid: 'first' }] }),
        rule({ actions: [{ type: 'delete' }] }),
      ],
      msg(),
    );
    expect(out).toMatchObject({ delete: false, labels: ['first'], matched: [1] });
  });

  it('no rules: nothing changes', () => {
    expect(evaluateRules([], msg())).toEqual({ copyTo: [], seen: false, delete: false, forwardTo: [], labels: [], matched: [] });
  });

  it('is pure: the same input gives the same answer and the inputs are not changed', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.nat(), fc.boolean(), (subject, from, size, hasAttachment) => {
        const rules = [
          rule({
            match: 'any',
            conditions: [
              { field: 'subject', op: 'contains', value: 'a' },
              { field: 'size', op: 'over', value: 100 },
            ],
            actions: [{ type: 'label', labelUid: 'l' }],
          }),
        ];
        const frozen = JSON.stringify(rules);
        const m = msg({ subject, from, size, hasAttachment });
        const a = evaluateRules(rules, m);
        expect(evaluateRules(rules, m)).toEqual(a);
        expect(JSON.stringify(rules)).toBe(frozen);
        expect(a.matched.length === 1).toBe(subject.toLowerCase().includes('a') || size > 100);
      }),
    );
  });
});

describe('rule validation schemas', () => {
  it('refuse unknown fields, ops, action types and bad forward addresses', () => {
    expect(ruleCondition.safeParse({ field: 'from', op: 'matches', value: 'x' }).success).toBe(false);
    expect(ruleCondition.safeParse({ field: 'body', op: 'contains', value: 'x' }).success).toBe(false);
    expect(ruleCondition.safeParse({ field: 'size', op: 'over', value: -1 }).success).toBe(false);
    expect(ruleAction.safeParse({ type: 'forward', to: ['not an address'] }).success).toBe(false);
    expect(ruleAction.safeParse({ type: 'forward', to: [] }).success).toBe(false);
    expect(ruleAction.safeParse({ type: 'run-script' }).success).toBe(false);
    expect(ruleAction.safeParse({ type: 'move', folderUid: 'f', extra: 1 }).success).toBe(false);
    expect(ruleAction.parse({ type: 'forward', to: ['X@Example.ORG'] })).toEqual({ type: 'forward', to: ['x@example.org'] });
  });
});
