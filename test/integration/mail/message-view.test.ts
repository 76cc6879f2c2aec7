// GET /api/mail/messages/:id/view over real HTTP: the body as a document for the web app's
// sandboxed frame — its own CSP (sandboxed, no script, nothing remote unless remote=allow, framed
// only by the service's pages), the text escaped, S/MIME ciphertext named, another user's message
// invisible (404), a bad parameter a clear 400.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { deliverRaw } from '../../helpers/messages.js';

const [sqlite] = await sqlBackends(); // one view of one record: the store adapter is not what is under test

const mail = (type: string, body: string) =>
  `From: Dora <dora@example.net>\nTo: alice@example.test\nSubject: view\nMessage-ID: <${Math.random()}@example.net>\nMIME-Version: 1.0\nContent-Type: ${type}\n\n${body}\n`;

describe('the framed view of a message', () => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  const view = async (uid: string, token: string, query = '') => {
    const r = await fetch(`${api.url}/api/mail/messages/${uid}/view${query}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: r.status, headers: r.headers, text: await r.text() };
  };
  beforeAll(async () => {
    api = await startTestApi(sqlite);
    p = await seedUsers(api);
  }, 60_000);
  afterAll(async () => api?.close());

  it('is the sanitized HTML under a sandboxing policy that loads nothing remote until allowed', async () => {
    const { uid } = await deliverRaw(
      api,
      p.aliceBox.uid,
      mail(
        'text/html',
        '<p style="background:url(https://t.example/bg.png)">Hi <img src="https://t.example/pixel.png"></p><script>alert(1)</script>',
      ),
    );
    const r = await view(uid, p.alice);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    expect(r.headers.get('x-frame-options')).toBeNull();
    const csp = r.headers.get('content-security-policy')!;
    for (const d of [
      "default-src 'none'",
      'img-src data:;',
      "frame-ancestors 'self'",
      'sandbox allow-popups allow-popups-to-escape-sandbox',
      "form-action 'none'",
    ])
      expect(csp).toContain(d);
    expect(csp).not.toMatch(/https?:/);
    expect(csp).not.toContain('allow-scripts');
    expect(csp).not.toContain('allow-same-origin');
    expect(r.text).toContain('<img src="https://t.example/pixel.png"');
    expect(r.text).not.toContain('<script');
    const allowed = await view(uid, p.alice, '?remote=allow');
    expect(allowed.headers.get('content-security-policy')).toContain('img-src data: https: http:');
    expect(allowed.headers.get('content-security-policy')).toContain('sandbox allow-popups');
  });

  it("loads a verified Safe Sender's remote images by itself; an unverified sender on the list, or a verified one off it, waits for remote=allow", async () => {
    const html = mail('text/html', '<p>News <img src="https://t.example/pixel.png"></p>');
    const box = (await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}`, { token: p.alice })).body;
    const put = await api.call('PUT', `/api/mail/mailboxes/${p.aliceBox.uid}`, {
      token: p.alice,
      body: { safeSenders: ['@example.net'], version: box.version },
    });
    expect(put.status).toBe(200);
    const verified = (await deliverRaw(api, p.aliceBox.uid, html, { senderVerified: true })).uid;
    const unverified = (await deliverRaw(api, p.aliceBox.uid, html)).uid;
    const other = (await deliverRaw(api, p.aliceBox.uid, html.replace('dora@example.net', 'eve@example.org'), { senderVerified: true }))
      .uid;
    const body = async (uid: string) => (await api.call('GET', `/api/mail/messages/${uid}/body`, { token: p.alice })).body;
    expect(await body(verified)).toMatchObject({ senderVerified: true, safeSender: true });
    expect(await body(unverified)).toMatchObject({ senderVerified: false, safeSender: false, receipt: null });
    expect(await body(other)).toMatchObject({ senderVerified: true, safeSender: false });
    expect((await view(verified, p.alice)).headers.get('content-security-policy')).toContain('img-src data: https: http:');
    for (const uid of [unverified, other])
      expect((await view(uid, p.alice)).headers.get('content-security-policy')).toContain('img-src data:;');
  });

  it('pictures the message carries (cid:) are written into the view as data: URLs (the sandboxed frame sends no cookie)', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const { uid } = await deliverRaw(
      api,
      p.aliceBox.uid,
      `From: Dora <dora@example.net>\nTo: alice@example.test\nSubject: logo\nMIME-Version: 1.0\nContent-Type: multipart/related; boundary=x\n\n--x\nContent-Type: text/html\n\n<p>Logo <img src="cid:logo@x"></p>\n--x\nContent-Type: image/png\nContent-ID: <logo@x>\nContent-Transfer-Encoding: base64\n\n${png}\n--x--\n`,
    );
    const r = await view(uid, p.alice);
    expect(r.text).toContain(`<img src="data:image/png;base64,${png}"`);
    expect(r.headers.get('content-security-policy')).toContain('img-src data:;');
  });

  it('shows a text body escaped, and says that ciphertext is encrypted without showing it', async () => {
    const { uid } = await deliverRaw(api, p.aliceBox.uid, mail('text/plain', 'a <b>bold</b> claim & <script>x</script>'));
    const r = await view(uid, p.alice);
    expect(r.text).toContain('<pre>a &lt;b&gt;bold&lt;/b&gt; claim &amp; &lt;script&gt;x&lt;/script&gt;');
    const enc = await deliverRaw(
      api,
      p.aliceBox.uid,
      mail('application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m', 'MIAGCSqGSIb3DQEHA6CAMIACAQAxggE='),
    );
    const e = await view(enc.uid, p.alice);
    expect(e.status).toBe(200);
    expect(e.text).toContain('encrypted end to end');
    expect(e.text).not.toContain('MIAGCSq');
  });

  it("answers 404 for another user's message, 401 without a session, 400 for an unknown remote value", async () => {
    const { uid } = await deliverRaw(api, p.aliceBox.uid, mail('text/plain', 'private'));
    const other = await view(uid, p.bob);
    expect(other.status).toBe(404);
    expect(JSON.parse(other.text)).toMatchObject({ code: 'api-107', status: 404 });
    expect((await fetch(`${api.url}/api/mail/messages/${uid}/view`)).status).toBe(401);
    const bad = await view(uid, p.alice, '?remote=maybe');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({ code: 'api-106', status: 400 });
  });
});
