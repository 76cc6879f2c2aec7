import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config/index.js';
import { checkIngestSecret, controlKindOf, isAutomated, readHeaders, senderListVerdict, verifySender } from '../../../lib/ingest/index.js';
import { prependHeaders } from '../../../lib/ingest/headers.js';
import { sanitizeMailHtml } from '../../../lib/scan/index.js';

const cfg = (id: string) => loadConfig({ env: { NODE_ENV: 'test' }, values: { 'mail:security:trusted_authserv_id': id } });
const h = (lines: string[]) => readHeaders(Buffer.from(`${lines.join('\r\n')}\r\n\r\nbody\r\n`));

describe('sender verification (Spec: Trusting sender verification)', () => {
  const from = 'From: Ann <ann@corp.example>';
  it.each([
    [
      'trusted id, DKIM pass for the From domain',
      'mx.ours.test',
      ['Authentication-Results: mx.ours.test; dkim=pass header.d=corp.example; spf=pass'],
      true,
    ],
    [
      'trusted id, DKIM pass for a parent domain',
      'mx.ours.test',
      ['Authentication-Results: mx.ours.test; dkim=pass header.d=example'],
      true,
    ],
    [
      'trusted id, DMARC pass',
      'mx.ours.test',
      ['Authentication-Results: mx.ours.test (comment); dmarc=pass header.from=corp.example'],
      true,
    ],
    [
      'trusted id, DKIM pass for another domain',
      'mx.ours.test',
      ['Authentication-Results: mx.ours.test; dkim=pass header.d=evil.example'],
      false,
    ],
    ['trusted id, DKIM fail', 'mx.ours.test', ['Authentication-Results: mx.ours.test; dkim=fail header.d=corp.example'], false],
    [
      'a forged header with another authserv-id',
      'mx.ours.test',
      ['Authentication-Results: mx.evil.test; dkim=pass header.d=corp.example'],
      false,
    ],
    ['empty setting: nobody is verified', '', ['Authentication-Results: mx.ours.test; dkim=pass header.d=corp.example'], false],
  ])('%s', (_n, id, extra, verified) => {
    expect(verifySender(cfg(id), h([from, ...extra])).verified).toBe(verified);
  });
});

describe('delivery decisions', () => {
  it.each([
    [['Auto-Submitted: auto-replied'], 'a@b.example', true],
    [['Auto-Submitted: no'], 'a@b.example', false],
    [['Precedence: bulk'], 'a@b.example', true],
    [['List-Id: <x.lists.example>'], 'a@b.example', true],
    [[], '', true],
    [[], 'MAILER-DAEMON@b.example', true],
    [[], 'noreply@b.example', true],
    [[], 'carol@b.example', false],
  ])('automated %j from %s → %s', (lines, envFrom, want) => {
    expect(isAutomated(h(['Subject: x', ...lines]), envFrom)).toBe(want);
  });

  it('blocked senders force junk; safe senders rescue only verified senders', () => {
    const box = { blockedSenders: ['spam.example'], safeSenders: ['friend@ok.example'] };
    expect(senderListVerdict(box, 'x@spam.example', true, false)).toBe(true);
    expect(senderListVerdict(box, 'friend@ok.example', true, true)).toBe(false);
    expect(senderListVerdict(box, 'friend@ok.example', false, true)).toBe(true);
    expect(senderListVerdict(box, 'other@ok.example', true, false)).toBe(false);
  });

  it('control messages are recognised only from verified senders', () => {
    const ours = new Set(['example.test']);
    expect(controlKindOf(h(['Subject: ACME: abc123']), true, ours)).toEqual({
      kind: 'acme-challenge',
      data: { token1: 'abc123', messageId: null },
    });
    expect(controlKindOf(h(['Subject: ACME: abc123', 'Message-ID: <c1@ca.test>']), true, ours)?.data).toEqual({
      token1: 'abc123',
      messageId: '<c1@ca.test>',
    });
    expect(controlKindOf(h(['Subject: ACME: abc123']), false, ours)).toBeNull();
    expect(
      controlKindOf(
        h(['Content-Type: multipart/report; report-type=disposition-notification; boundary=x', 'In-Reply-To: <m1@example.test>']),
        true,
        ours,
      )?.kind,
    ).toBe('read-receipt');
    expect(
      controlKindOf(
        h(['Content-Type: multipart/report; report-type=disposition-notification; boundary=x', 'In-Reply-To: <m1@elsewhere.example>']),
        true,
        ours,
      ),
    ).toBeNull();
    expect(controlKindOf(h(['X-Svcmail-Recall: <m2@example.test>']), true, ours)?.kind).toBe('recall');
  });

  it('headers: folded values, prepended fields', () => {
    const raw = prependHeaders(Buffer.from('Subject: a\r\n long\r\nFrom: x@y.example\r\n\r\nhi\r\n'), [['X-Rule', 'one']]);
    const hb = readHeaders(raw);
    expect(hb.fields).toEqual([
      ['x-rule', 'one'],
      ['subject', 'a long'],
      ['from', 'x@y.example'],
    ]);
    expect(raw.toString()).toMatch(/\r\n\r\nhi\r\n$/);
  });
});

describe('HTML sanitizing', () => {
  it.each([
    ['<p onclick="x()">hi<script>alert(1)</script></p>', '<p>hi</p>'],
    ['<a href="javascript:alert(1)">x</a>', '<a rel="noopener noreferrer nofollow" target="_blank">x</a>'],
    ['<img src="cid:logo" onerror="x()">', '<img src="cid:logo" />'],
    ['<iframe src="https://evil.example"></iframe><form><input></form>ok', 'ok'],
    ['<div style="color:red;position:fixed">x</div>', '<div style="color:red">x</div>'],
  ])('%s', (input, want) => {
    expect(sanitizeMailHtml(input)).toBe(want);
  });
});

describe('ingest secret at start (Spec: Internal hand-off)', () => {
  const prod = (secret?: string) =>
    loadConfig({
      env: { NODE_ENV: 'production' },
      values: { 'auth:secret': 'x'.repeat(32), ...(secret ? { 'mail:transport:ingest:secret': secret } : {}) },
    });
  it('outside development the default or a short secret refuses to start; development accepts the default', () => {
    expect(() => checkIngestSecret(prod())).toThrow(/still the default/);
    expect(() => checkIngestSecret(prod('short-secret'))).toThrow(/at least 16/);
    expect(() => checkIngestSecret(prod('a-long-enough-secret-123'))).not.toThrow();
    expect(() => checkIngestSecret(loadConfig({ env: { NODE_ENV: 'development' } }))).not.toThrow();
  });
});
