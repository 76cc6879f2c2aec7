// Filter rules (Spec: Per-mailbox delivery rules 3): rules as a client posts them, checked with the
// resource's own create schema (api-106 when refused), then run by lib/mail evaluateRules on a
// message parsed and reduced exactly as delivery does (lib/ingest ruleInputOf).
// Input: <JSON array of rules> NUL <raw message>.
import { parseOrThrow } from '../../../lib/errors/index.js';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { ruleInputOf } from '../../../lib/ingest/mail-port.js';
import { evaluateRules, filterRulesResource, parseMail, type FilterRule } from '../../../lib/mail/index.js';
import { schemasOf } from '../../../lib/resources/index.js';
import { address, text, word } from '../grammar.js';
import { check, clientError, type FuzzTarget } from '../target.js';

const value = fc.oneof(text(30), word, address, fc.constantFrom('İ', 'ı', 'ß', 'SS', 'ǅ', 'K', '\u212a', 'a\u0301', 'á'));
const condition = fc.oneof(
  fc.record({ field: fc.constantFrom('from', 'to'), op: fc.constantFrom('contains', 'is', 'endsWith', 'startsWith'), value }),
  fc.record({ field: fc.constant('subject'), op: fc.constantFrom('contains', 'is', 'startsWith', 'endsWith'), value }),
  fc.record({
    field: fc.constant('header'),
    name: fc.oneof(fc.constantFrom('X-Spam-Flag', 'List-Id', 'Received', 'subject', 'X-Priority', '__proto__', 'constructor'), word),
    op: fc.constantFrom('contains', 'is', 'exists'),
    value,
  }),
  fc.record({ field: fc.constant('size'), op: fc.constantFrom('over', 'under'), value: fc.oneof(fc.nat(), fc.integer(), fc.double()) }),
  fc.record({ field: fc.constant('hasAttachment'), value: fc.oneof(fc.boolean(), fc.constant('true')) }),
  fc.dictionary(word, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
);
const action = fc.oneof(
  fc.record({ type: fc.constantFrom('move', 'copy'), folderUid: fc.constantFrom('inbox', 'archive', 'f1', '') }),
  fc.record({ type: fc.constantFrom('markRead', 'delete') }),
  fc.record({ type: fc.constant('forward'), to: fc.array(address, { maxLength: 11 }) }),
  fc.record({ type: fc.constant('label'), labelUid: fc.constantFrom('l1', 'l2', '') }),
);
const rule = fc.record(
  {
    mailboxUid: fc.constant('mbx'),
    name: fc.option(text(20), { nil: undefined }),
    position: fc.option(fc.oneof(fc.nat(), fc.integer()), { nil: undefined }),
    enabled: fc.option(fc.boolean(), { nil: undefined }),
    match: fc.option(fc.constantFrom('all', 'any', 'none'), { nil: undefined }),
    conditions: fc.array(condition, { maxLength: 5 }),
    actions: fc.array(action, { maxLength: 4 }),
    stop: fc.option(fc.boolean(), { nil: undefined }),
  },
  { requiredKeys: ['mailboxUid', 'conditions', 'actions'] },
);

const message = fc
  .tuple(
    address,
    fc.array(address, { maxLength: 3 }),
    text(40),
    fc.array(fc.tuple(fc.constantFrom('X-Spam-Flag', 'List-Id', 'X-Priority', 'Received'), text(20)), { maxLength: 4 }),
    text(200),
  )
  .map(
    ([from, to, subject, hs, body]) =>
      `From: ${from}\r\nTo: ${to.join(', ')}\r\nSubject: ${subject}\r\n${hs.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`,
  );

const create = schemasOf(filterRulesResource).create;

const target: FuzzTarget = {
  name: 'rules',
  expected: clientError('api-106'),
  generate: fc.tuple(fc.array(rule, { maxLength: 6 }), message).map(([rs, m]) => Buffer.from(`${JSON.stringify(rs)}\0${m}`, 'utf8')),
  dictionary: [
    '{"field":"header","name":"x","op":"exists"}',
    '"op":"is"',
    '"stop":true',
    '"enabled":false',
    '"match":"any"',
    '{"type":"move","folderUid":"x"}',
    '\r\nX-Spam-Flag: YES',
    '\0',
  ],
  async fuzz(data) {
    const nul = data.indexOf(0);
    let doc: unknown;
    try {
      doc = JSON.parse(data.subarray(0, nul < 0 ? data.length : nul).toString('utf8'));
    } catch {
      return; // not JSON: the body parser answers 400 before any rule code runs
    }
    if (!Array.isArray(doc)) return;
    const rules = doc.map((r, i) => parseOrThrow(create, r, `rules.${i}`) as unknown as FilterRule);
    const raw = nul < 0 ? Buffer.alloc(0) : data.subarray(nul + 1);
    const input = ruleInputOf(await parseMail(raw, { skipImageLinks: true, skipTextToHtml: true }), raw.length);
    const out = evaluateRules(rules, input);
    check(isDeepStrictEqual(out, evaluateRules(rules, input)), 'evaluation is deterministic');
    check(
      out.matched.every((m, k) => m >= 0 && m < rules.length && rules[m].enabled && (k === 0 || m > out.matched[k - 1])),
      'matched rules are enabled, in order',
    );
    const stopped = out.matched.findIndex((m) => rules[m].stop);
    check(stopped < 0 || stopped === out.matched.length - 1, 'nothing matches after a rule that stops');
    check(!out.copyTo.includes(out.folderUid ?? '\0'), 'no copy into the folder the message moves to');
    for (const list of [out.copyTo, out.forwardTo, out.labels])
      check(new Set(list).size === list.length, 'action lists have no duplicates');
  },
};
export default target;
