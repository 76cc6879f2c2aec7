// docs/SECURITY.md, HTML mail, end to end: an HTML message handed in at /internal/mta/deliver,
// scanned and filed by a worker round, read by its owner at GET /api/mail/messages/:id/body. The
// answer carries the sanitized HTML (no data: link, no escaped @import or expression(), the
// newsletter's layout kept with its rules scoped and its classes renamed), while the stored source
// stays the sender's bytes (a download, never rendered).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainQueue } from '../../lib/jobs/index.js';
import { MessageModel, type Message } from '../../lib/mail/index.js';
import { sqlBackends } from '../helpers/databases.js';
import { ingestFixture, type IngestFixture } from '../integration/ingest/setup.js';
import { ISSUE_DATA_LINK, ISSUE_STYLE } from './fixtures/xss/vectors.js';
import { inspectSanitized } from './sanitizer-oracle.js';

const backends = await sqlBackends();

const HTML = [
  '<html><head><style>',
  '.card { background-color: #FFFFFF; border: 1px solid #DDDDDD; } .card td > a:hover { color: #0B57D0; }',
  '@media only screen and (max-width: 600px) { .card { width: 100% !important; } }',
  '</style></head><body>',
  '<table class="card" width="600" cellpadding="8" bgcolor="#ffffff"><tr><td style="color: #333333; position: fixed; font-size: 14px;">',
  `${ISSUE_DATA_LINK}`,
  `${ISSUE_STYLE}`,
  '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+" alt="svg"><img src="cid:logo@acme" alt="logo">',
  '<a href="https://acme.example/account" onclick="steal()">Account</a>',
  '</td></tr></table></body></html>',
].join('\r\n');

const RAW = [
  'From: "Acme Billing" <billing@remote.example>',
  'To: alice@example.test',
  'Subject: Your invoice',
  'Message-ID: <sanitizer-api-1@remote.example>',
  'Date: Tue, 24 Nov 2026 10:00:00 +0000',
  'MIME-Version: 1.0',
  'Content-Type: multipart/alternative; boundary="alt"',
  '',
  '--alt',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'Your invoice is ready.',
  '',
  '--alt',
  'Content-Type: text/html; charset=utf-8',
  '',
  HTML,
  '',
  '--alt--',
  '',
].join('\r\n');

describe.each(backends)('a delivered HTML message read through the API ($name)', (backend) => {
  let f: IngestFixture;
  beforeAll(async () => {
    f = await ingestFixture(backend);
  });
  afterAll(async () => f?.close());

  it("answers GET /api/mail/messages/:id/body with the sanitized HTML; the stored source is the sender's", async () => {
    const r = await f.deliver({ to: ['alice@example.test'], raw: RAW, tx: 'sanitizer-api-1' });
    expect(r.status).toBe(202);
    await drainQueue(f.worker({ scanners: 'clean' }), 'sanitizer-worker');

    const [stored] = await f.api.deps.store
      .repo<Message>(MessageModel)
      .list({ filter: { mailboxUid: f.users.aliceBox.uid, messageId: '<sanitizer-api-1@remote.example>' } });
    expect(stored).toMatchObject({ subject: 'Your invoice', smime: null });

    const res = await f.api.call('GET', `/api/mail/messages/${stored.uid}/body`, { token: f.users.alice });
    expect(res.status).toBe(200);
    const { encrypted, text, html } = res.body as { encrypted: boolean; text: string; html: string };
    expect(encrypted).toBe(false);
    expect(text.trim()).toBe('Your invoice is ready.');

    // Nothing outside the allowlist: elements, attributes, URLs, classes, selectors, declarations.
    expect(inspectSanitized(html)).toEqual([]);
    // The review's payloads are gone.
    expect(html).not.toMatch(/data:text|data:image\/svg|@import|@\\|\bimport\b|expr|evil\.example|onclick|steal|position/i);
    expect(html).toContain('<a rel="noopener noreferrer nofollow" target="_blank">open</a>');
    expect(html).toContain('<p class="m-promo">Hello</p>');
    // The layout stays: the table, its inline colours, the image by cid:, the link, and the <style>
    // rules rebuilt under the message's scope with the renamed class.
    const scope = /^<div class="(svcmail-[0-9a-f]{16})"><style>/.exec(html)?.[1];
    expect(scope).toBeDefined();
    expect(/<style>([\s\S]*?)<\/style>/.exec(html)?.[1].split('\n')).toEqual([
      `.${scope} .m-card{background-color:#ffffff;border:1px solid #dddddd}`,
      `.${scope} .m-card td > a:hover{color:#0b57d0}`,
      `@media only screen and (max-width:600px){.${scope} .m-card{width:100% !important}}`,
    ]);
    expect(html).toContain(
      '<table class="m-card" width="600" cellpadding="8" bgcolor="#ffffff"><tr><td style="color:#333333;font-size:14px">',
    );
    expect(html).toContain('<img alt="svg" /><img src="cid:logo@acme" alt="logo" />');
    expect(html).toContain('<a href="https://acme.example/account" rel="noopener noreferrer nofollow" target="_blank">Account</a>');

    // Sanitizing is how the body is shown, not a change to the message: the source is kept as sent.
    const raw = await fetch(`${f.api.url}/api/mail/messages/${stored.uid}/raw`, { headers: { authorization: `Bearer ${f.users.alice}` } });
    expect(raw.headers.get('content-disposition')).toMatch(/^attachment/);
    const source = await raw.text();
    expect(source).toContain('data:text/html;base64,');
    expect(source).toContain('x{width:expr\\ession(1)}');

    // Another user still gets nothing.
    expect((await f.api.call('GET', `/api/mail/messages/${stored.uid}/body`, { token: f.users.bob })).status).toBe(404);
  });
});
