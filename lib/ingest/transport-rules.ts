import type { Deps } from '../context/index.js';
import { bareAddress, domainOf, headerValue, headerValues, type HeaderBlock } from './headers.js';
import { TransportRuleModel, type TransportRule } from './models.js';

export interface TransportDecision {
  reject: { rule: string; notice: string | null } | null;
  addHeaders: Array<[string, string]>;
  addRecipients: string[];
  quarantine: string | null;
}

export interface TransportInput {
  headers: HeaderBlock;
  envelopeFrom: string;
  recipients: string[];
}

const has = (hay: string, needle: string) => hay.toLowerCase().includes(needle.toLowerCase());

function matches(rule: TransportRule, input: TransportInput): boolean {
  const m = rule.match ?? {};
  const from = `${headerValue(input.headers, 'from')} ${input.envelopeFrom}`;
  if (m.fromContains && !has(from, m.fromContains)) return false;
  if (m.senderDomain) {
    const d = m.senderDomain.toLowerCase();
    const domains = [domainOf(bareAddress(headerValue(input.headers, 'from'))), domainOf(input.envelopeFrom)];
    if (!domains.some((x) => x === d || x.endsWith(`.${d}`))) return false;
  }
  if (m.recipientContains && !input.recipients.some((r) => has(r, m.recipientContains!))) return false;
  if (m.subjectContains && !has(headerValue(input.headers, 'subject'), m.subjectContains)) return false;
  if (m.header) {
    const re = new RegExp(m.header.pattern, 'i'); // a bad pattern throws: the caller lets delivery continue
    if (!headerValues(input.headers, m.header.name).some((v) => re.test(v))) return false;
  }
  return true;
}

/**
 * Spec: transport rules run once per message before recipients are resolved. They can reject, add
 * a header, add a recipient, or mark for quarantine. Rules run by priority (lowest first); the first
 * reject ends evaluation. Throws when evaluation fails; the caller then delivers without them.
 */
export async function evaluateTransportRules(deps: Pick<Deps, 'store'>, input: TransportInput): Promise<TransportDecision> {
  return (await explainTransportRules(deps, input)).decision;
}

/** How each enabled rule, in the order delivery runs them, treats a message; `matched` false also after a reject ended the run. */
export interface RuleTrace {
  uid: string;
  name: string;
  priority: number;
  action: TransportRule['action'];
  matched: boolean;
  /** Not reached: an earlier rule rejected the message. */
  skipped: boolean;
}

/**
 * What the rules do to a message, and why: the decision delivery would take and each rule's part in
 * it (the admin console's preview, POST /api/mail/transport-rules/test; nothing is delivered).
 */
export async function explainTransportRules(
  deps: Pick<Deps, 'store'>,
  input: TransportInput,
): Promise<{ decision: TransportDecision; rules: RuleTrace[] }> {
  const rules = await deps.store.repo<TransportRule & { uid: string }>(TransportRuleModel).list({
    filter: { enabled: true },
    sort: [
      { field: 'priority', dir: 'asc' },
      { field: 'createdAt', dir: 'asc' },
    ],
    limit: 1000,
  });
  const out: TransportDecision = { reject: null, addHeaders: [], addRecipients: [], quarantine: null };
  const trace: RuleTrace[] = rules.map((r) => ({
    uid: r.uid,
    name: r.name,
    priority: r.priority,
    action: r.action,
    matched: false,
    skipped: true,
  }));
  for (const [i, rule] of rules.entries()) {
    trace[i].skipped = false;
    if (!matches(rule, input)) continue;
    trace[i].matched = true;
    if (rule.action === 'reject') {
      out.reject = { rule: rule.name, notice: rule.rejectNotice };
      break;
    }
    if (rule.action === 'addHeader' && rule.headerName) out.addHeaders.push([rule.headerName, rule.headerValue ?? '']);
    if (rule.action === 'addRecipient' && rule.recipient && !out.addRecipients.includes(rule.recipient))
      out.addRecipients.push(rule.recipient);
    if (rule.action === 'quarantine') out.quarantine ??= rule.name;
  }
  return { decision: out, rules: trace };
}
