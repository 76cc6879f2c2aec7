// The compose view under the encryption policy and pinned keys (Spec: Encryption policy; Discovered
// keys), in Chromium against the appliance as it runs: automatic same-org encryption without asking,
// prohibited encryption refused in the page, a recipient without a key blocking a send that must be
// encrypted, and a federated contact on a second server (found through its _svc TXT record) whose key
// is pinned, changes, blocks sending until kept or accepted, and cannot be downgraded to plaintext.
// Which key a sent message was encrypted to is checked by opening it with openssl and each key.
//
// Two people write: alice to her colleagues (the same-org policy, changed between her tests) and
// erin to carol (the federated flows, which no same-org rule touches). Their tests pair up with
// it.concurrent (vitest runs consecutive concurrent tests together), so the 5-second Undo of one
// send waits beside another's: [alice automatic ∥ erin pins carol], [alice without a key],
// [alice prohibited ∥ erin accepts], [erin with carol's server silent].
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVault, pem, type VaultView } from '../../../lib/keys/client/index.js';
import { CA_CERT_FILE, CA_KEY_FILE, ensureLocalCa, fingerprintOf, localCaDir } from '../../../lib/pki/index.js';
import { startTestApi, type TestApi } from '../../helpers/api.js';
import { launchChromium, signedInContext, watchProblems } from '../../helpers/browser.js';
import { freshSqlite } from '../../helpers/databases.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startRunningAppliance, type RunningAppliance } from '../../helpers/running-appliance.js';
import { keyTestValues, startTxtDns, TEST_ARGON2, type TxtDns } from '../keys/helpers.js';
import { recorder, type Recorder } from '../send/helpers.js';

const ready = requirePrograms('chromium', 'openssl');
const ALICE_PW = 'alice policy password 1';
const ERIN_PW = 'erin policy password 333';
const CAROL = 'carol@other.test';

/** A port free on the given loopback address (carol's server listens there, where the A record points). */
async function freePortOn(host: string): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, host, r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A private key and its certificate, as openssl takes them. */
interface KeyPair {
  key: string;
  cert: string;
}

describe.runIf(ready)('compose follows the encryption policy and pinned keys', { timeout: 120_000 }, () => {
  let app: RunningAppliance;
  let other: TestApi;
  let otherOpen = false;
  let browser: Browser;
  let dns: TxtDns;
  let rec: Recorder;
  let work = '';
  let admin = '';
  const token = { alice: '', bob: '', dave: '', erin: '' };
  const box = { alice: '', bob: '', dave: '', erin: '', carol: '' };
  let carolToken = '';
  let bobKeys: KeyPair;
  /** carol's keys by generation: 1 pinned first, 2 rejected (kept the old), 3 accepted. */
  const carolKeys: KeyPair[] = [];
  let n = 0;

  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: work, stdio: 'pipe' }).toString('latin1');
  const caCert = () => join(localCaDir(app.config), CA_CERT_FILE);
  /** A certificate from the appliance's CA for a CSR (an administrator completing a manual signing enrolment). */
  const issueFromCa = (csr: string, address: string): string => {
    writeFileSync(join(work, 'req.pem'), csr);
    writeFileSync(
      join(work, 'ext.cnf'),
      `subjectAltName=email:${address}\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=emailProtection\n`,
    );
    const key = join(localCaDir(app.config), CA_KEY_FILE);
    return openssl(['x509', '-req', '-in', 'req.pem', '-CA', caCert(), '-CAkey', key, '-days', '30', '-extfile', 'ext.cnf']);
  };
  /** Keys made here (what Settings does in the browser, with fast Argon2id) enrolled for a mailbox; answers the encryption pair. */
  const enrol = async (who: 'alice' | 'bob' | 'erin', password: string): Promise<{ pair: KeyPair; signingCsr: string }> => {
    const made = await createVault(box[who], `${who}@example.test`, password, { argon2: TEST_ARGON2 });
    const r = await app.call(token[who], 'POST', `/api/mail/mailboxes/${box[who]}/keyvault/enroll`, made.body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const vault = r.body as VaultView;
    return {
      pair: { key: pem('PRIVATE KEY', made.keys.encryptionPkcs8), cert: vault.encryptionCertificate! },
      signingCsr: made.keys.signingCsr,
    };
  };
  /** Asks for a signing certificate and has an administrator complete the request by hand. */
  const signingCertificate = async (who: 'alice' | 'erin', csr: string) => {
    const asked = await app.call(token[who], 'POST', `/api/mail/mailboxes/${box[who]}/keyvault/signing-enrollment`, {
      expectedMasterKeyGeneration: 1,
      csr,
    });
    expect(asked.status, JSON.stringify(asked.body)).toBe(201);
    const done = await app.call(admin, 'POST', `/api/admin/signing-enrollments/${asked.body.uid}/complete`, {
      certificate: issueFromCa(csr, `${who}@example.test`),
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
  };
  /** carol's keys on her server: enrolled (generation 1), then replaced (rekey). */
  const carolRekey = async () => {
    const current = carolKeys.length;
    const made = await createVault(box.carol, CAROL, `carol pw ${current}`, { current, argon2: TEST_ARGON2 });
    const r = await other.call('POST', `/api/mail/mailboxes/${box.carol}/keyvault/${current ? 'rekey' : 'enroll'}`, {
      token: carolToken,
      body: made.body,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(current ? 200 : 201);
    carolKeys.push({ key: pem('PRIVATE KEY', made.keys.encryptionPkcs8), cert: r.body.encryptionCertificate });
  };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'svcmail-smime-policy-'));
    rec = recorder();
    dns = await startTxtDns();
    const port = await freePortOn('127.0.0.2');
    // other.test publishes _svc naming mail.other.test, whose A record is 127.0.0.2 where carol's
    // server listens; the appliance may connect there (loopback is refused otherwise).
    dns.txt.set('_svc.other.test', 'v=SVCv1; id=serverB01; host=mail.other.test;');
    dns.hosts.set('mail.other.test', ['127.0.0.2']);
    [app, other, browser] = await Promise.all([
      startRunningAppliance({
        'mail:dns:nameservers': [dns.server],
        'mail:dns:timeout_ms': 1000,
        'mail:keys:federation:url_template': `http://{host}:${port}`,
        'mail:security:outbound:allowed_ranges': ['127.0.0.2/32'],
        'mail:keys:argon2:min_memory_kib': 8192,
        // Mail to other.test goes to the MTA: a sendmail-compatible recorder keeps what it was handed.
        'mail:transport:sendmail:path': rec.bin,
        'mail:transport:sendmail:log_path': rec.log,
      }),
      (async () =>
        startTestApi({ name: 'sqlite', open: async () => freshSqlite() }, await keyTestValues({ 'mail:dns:nameservers': [dns.server] }), {
          listen: { host: '127.0.0.2', port },
        }))(),
      launchChromium(),
    ]);
    otherOpen = true;
    await ensureLocalCa(localCaDir(app.config)); // what svcmail setup makes
    admin = await app.token('root', { roles: ['admin'], elevated: true });
    expect((await app.call(admin, 'POST', '/api/mail/domains', { name: 'example.test', verified: true })).status).toBe(201);
    for (const who of ['alice', 'bob', 'dave', 'erin'] as const) {
      const r = await app.call(admin, 'POST', '/api/mail/mailboxes', { address: `${who}@example.test`, owners: [who], name: who });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      box[who] = r.body.uid;
      token[who] = await app.token(who);
    }
    // alice, bob and erin have keys (dave has none); alice's and erin's signing certificates are issued by hand.
    const [a, b, e] = await Promise.all([enrol('alice', ALICE_PW), enrol('bob', 'bob policy password 22'), enrol('erin', ERIN_PW)]);
    bobKeys = b.pair;
    await signingCertificate('alice', a.signingCsr);
    await signingCertificate('erin', e.signingCsr);
    // carol is on the other server, with keys.
    const adminB = await other.token({ uid: 'root', roles: ['admin'], elevated: true });
    carolToken = await other.token({ uid: 'carol' });
    await other.call('POST', '/api/mail/domains', { token: adminB, body: { name: 'other.test', verified: true } });
    box.carol = (await other.call('POST', '/api/mail/mailboxes', { token: adminB, body: { address: CAROL, owners: ['carol'] } })).body.uid;
    await carolRekey();
  }, 200_000);
  afterAll(async () => {
    await browser?.close();
    app?.stop();
    if (otherOpen) await other.close();
    dns?.close();
    rmSync(work, { recursive: true, force: true });
  });

  const setPolicy = async (encryptSameOrg: 'automatic' | 'optional' | 'prohibited') => {
    const cur = await app.call(admin, 'GET', '/api/system/encryption-policy');
    const r = await app.call(admin, 'PUT', '/api/system/encryption-policy', {
      encryptSameOrg,
      encryptFederated: 'optional',
      encryptExternal: 'optional',
      version: cur.body.version,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };
  /** The messages of a folder role of a mailbox (as its owner). */
  const folder = async (who: keyof typeof token, role: string) => {
    const folders = (await app.call(token[who], 'GET', `/api/mail/folders?mailboxUid=${box[who]}`)).body as Array<{
      uid: string;
      role: string;
    }>;
    const list = await app.call(token[who], 'GET', `/api/mail/messages?folderUid=${folders.find((f) => f.role === role)!.uid}&limit=50`);
    return list.body as Array<{ uid: string; subject: string; smime: string | null }>;
  };
  /** The uids of bob's Inbox now, and the one message that arrives after. */
  const bobInbox = async () => new Set((await folder('bob', 'inbox')).map((m) => m.uid));
  const arrivesForBob = (before: Set<string>) =>
    app.until('bob receives it', async () => {
      const fresh = (await folder('bob', 'inbox')).filter((m) => !before.has(m.uid));
      if (fresh.length > 1) throw new Error(`more than one new message: ${JSON.stringify(fresh)}`);
      return fresh[0];
    });
  /** The source of a message of bob's. */
  const rawOf = async (uid: string) =>
    (await fetch(`${app.api}/api/mail/messages/${uid}/raw`, { headers: { authorization: `Bearer ${token.bob}` } })).text();
  /** What the recorder (the MTA) was handed for carol, oldest first; the one handed after `before` of them. */
  const toCarol = () => rec.runs().filter((r) => r.args.includes(CAROL));
  const handedToCarol = (before: number) =>
    app.until('the MTA is handed the message for carol', async () => {
      const all = toCarol();
      if (all.length > before + 1) throw new Error(`more than one new message for carol: ${all.length - before}`);
      return all[before];
    });
  /** erin's pin of carol's key. */
  const erinsPin = async () => (await app.call(token.erin, 'GET', `/api/mail/mailboxes/${box.erin}/keys/discovered`)).body;
  /**
   * The message opened by openssl with this key pair, its signature verified against the appliance's
   * CA: the signed inner message (its protected headers name the real subject); null when it is not
   * encrypted to the pair's certificate.
   */
  const openWith = (raw: string, pair: KeyPair): string | null => {
    const i = ++n;
    writeFileSync(join(work, `m${i}.eml`), raw);
    writeFileSync(join(work, `k${i}.key`), pair.key);
    writeFileSync(join(work, `k${i}.crt`), pair.cert);
    try {
      openssl(['cms', '-decrypt', '-in', `m${i}.eml`, '-inkey', `k${i}.key`, '-recip', `k${i}.crt`, '-out', `d${i}.eml`]);
    } catch {
      return null;
    }
    return openssl(['cms', '-verify', '-in', `d${i}.eml`, '-CAfile', caCert(), '-purpose', 'any']);
  };

  /** One tab per writer, kept from test to test: the keys unlocked in it stay unlocked (the page's keyring). */
  const tabs = new Map<'alice' | 'erin', { tab: Page; problems: string[] }>();
  /** A new message open in the writer's tab, the keys unlocked (asked for the first time only); what went wrong in the tab since. */
  const compose = async (who: 'alice' | 'erin'): Promise<{ tab: Page; form: Locator; problems: () => string[] }> => {
    let open = tabs.get(who);
    const first = !open;
    if (!open) {
      const tab = await (await signedInContext(browser, app.api, token[who])).newPage();
      open = { tab, problems: watchProblems(tab) };
      tabs.set(who, open);
      await tab.goto(`${app.api}/`);
    }
    const { tab, problems } = open;
    const seen = problems.length;
    await tab.getByRole('button', { name: 'New message' }).click();
    const form = tab.getByRole('form', { name: 'New message' });
    const unlock = form.getByRole('form', { name: `Unlock the encryption keys of ${who}@example.test` });
    if (first) {
      await unlock.getByLabel('Encryption password').fill(who === 'alice' ? ALICE_PW : ERIN_PW);
      await unlock.getByRole('button', { name: 'Unlock' }).click();
      await unlock.waitFor({ state: 'detached' });
    }
    await form.getByRole('combobox', { name: 'To' }).waitFor();
    expect(await unlock.count()).toBe(0);
    return { tab, form, problems: () => problems.slice(seen) };
  };
  const panelOf = (form: Locator) => form.getByRole('region', { name: 'Encryption' });
  const choiceOf = (form: Locator) => panelOf(form).getByRole('combobox');
  const statusOf = (form: Locator) => panelOf(form).getByRole('status');
  const linesOf = (form: Locator) => panelOf(form).getByRole('list', { name: 'Encryption per recipient' });
  /** Waits until the panel's line of `address` says `note` (the plan is asked a moment after the recipients change). */
  const expectLine = async (form: Locator, address: string, note: string) => {
    await linesOf(form)
      .getByRole('listitem')
      .filter({ hasText: `${address}: ${note}` })
      .waitFor()
      .catch(async (e) => {
        const shown = await panelOf(form)
          .innerText({ timeout: 1000 })
          .catch(() => '(no panel)');
        throw new Error(`${e}\nthe panel shows:\n${shown}`);
      });
  };
  const willEncrypt = (form: Locator) =>
    statusOf(form)
      .filter({ hasText: /^This message will be encrypted and signed\.$/ })
      .waitFor();
  const willNotEncrypt = (form: Locator) =>
    statusOf(form)
      .filter({ hasText: /^This message will not be encrypted\./ })
      .waitFor();
  const fill = async (form: Locator, to: string, subject: string, body: string) => {
    await form.getByRole('combobox', { name: 'To' }).fill(to);
    await form.getByLabel('Subject').fill(subject);
    await form.getByRole('textbox', { name: 'Message' }).fill(body);
  };
  const sendButton = (form: Locator) => form.getByRole('button', { name: 'Send', exact: true });
  /** Send: the page counts down the Undo, then says it went. */
  const sendAndWait = async (tab: Page, form: Locator) => {
    await sendButton(form).click();
    await tab
      .getByRole('status')
      .filter({ hasText: /^Sending/ })
      .waitFor();
    await tab
      .getByRole('status')
      .filter({ hasText: /^Sent to / })
      .waitFor({ timeout: 30_000 });
  };
  /**
   * Send is refused in the page: the reason shows in the form (its own alert, beside the panel's),
   * the compose view stays open, no send was started (the Undo countdown never shows) and the draft
   * is kept, sealed to the sender.
   */
  const expectSendRefused = async (who: 'alice' | 'erin', tab: Page, form: Locator, why: string | RegExp) => {
    await sendButton(form).click();
    await form.locator(':scope > [role="alert"]').filter({ hasText: why }).waitFor();
    await expect(form.isVisible()).resolves.toBe(true);
    expect(await tab.getByText(/^Sending “/).count()).toBe(0);
    await form
      .getByRole('status')
      .filter({ hasText: /^Draft saved$/ })
      .waitFor();
    expect(await folder(who, 'drafts')).toMatchObject([{ smime: 'encrypted' }]);
  };

  it.concurrent(
    'automatic for this organisation: alice writes to bob without touching the choice and it goes encrypted to bob',
    async () => {
      await setPolicy('automatic');
      const { tab, form, problems } = await compose('alice');
      await fill(form, 'bob@example.test', 'Automatic ocelot report', 'The ocelot count is 8812 this week.');
      await expectLine(form, 'bob@example.test', 'encrypted (key from this server; the policy requires it)');
      await willEncrypt(form);
      await expect(choiceOf(form).inputValue()).resolves.toBe('auto');
      expect(await panelOf(form).getByRole('alert').count()).toBe(0);
      await sendAndWait(tab, form);
      const got = await arrivesForBob(new Set());
      expect(got.smime).toBe('encrypted');
      const raw = await rawOf(got.uid);
      for (const word of ['ocelot', '8812']) expect(raw).not.toContain(word);
      // Encrypted to bob's certificate, and signed by alice inside.
      expect(openWith(raw, bobKeys)).toContain('Subject: Automatic ocelot report');
      expect(problems()).toEqual([]);
    },
  );

  it.concurrent(
    "a federated contact's key is pinned; a changed key blocks sending until the old one is kept; plaintext is refused while pinned",
    async () => {
      // First message to carol: her server's key, found through _svc.other.test, pinned.
      {
        const { tab, form, problems } = await compose('erin');
        await fill(form, CAROL, 'First wombat letter', 'Wombat letter number 6120.');
        await expectLine(form, CAROL, 'encrypted (key from their server, pinned when you send)');
        expect(await erinsPin()).toEqual([]); // looking is not using: pinned on first use, at the send
        await willEncrypt(form);
        await sendAndWait(tab, form);
        const sent = await handedToCarol(0);
        expect(sent.eml).not.toContain('ombat');
        expect(openWith(sent.eml, carolKeys[0]!)).toContain('Subject: First wombat letter');
        expect(await erinsPin()).toMatchObject([{ address: CAROL, state: 'pinned', fingerprint: fingerprintOf(carolKeys[0]!.cert) }]);
        expect(problems()).toEqual([]);
      }
      // carol replaces her keys: the next compose shows the conflict and Send waits for a decision.
      await carolRekey();
      const { tab, form, problems } = await compose('erin');
      await fill(form, CAROL, 'Second wombat letter', 'Wombat letter number 6121.');
      await expectLine(form, CAROL, 'their key changed: accept or reject the new key before sending');
      const conflict = `The key of ${CAROL} changed: accept or reject the new key first.`;
      await panelOf(form).getByRole('alert').filter({ hasText: conflict }).waitFor();
      await willNotEncrypt(form);
      await expectSendRefused('erin', tab, form, conflict);
      // Keep the old key: the conflict is gone and the pin stays on the first key.
      await form.getByRole('button', { name: `Keep the old key of ${CAROL}` }).click();
      await expectLine(form, CAROL, 'encrypted (key from their server, pinned)');
      expect(await erinsPin()).toMatchObject([
        { state: 'pinned', fingerprint: fingerprintOf(carolKeys[0]!.cert), pendingFingerprint: null },
      ]);
      // Downgrade: with carol's key pinned, "Do not encrypt" is refused in the page.
      await choiceOf(form).selectOption({ label: 'Do not encrypt' });
      const pinned = `You chose not to encrypt, but the key of ${CAROL} is pinned`;
      await panelOf(form).getByRole('alert').filter({ hasText: pinned }).waitFor();
      await willNotEncrypt(form);
      await expectSendRefused('erin', tab, form, pinned);
      expect(toCarol()).toHaveLength(1);
      // Letting the keys decide: it goes encrypted to the key first pinned, not to the new one.
      await choiceOf(form).selectOption({ label: 'Encrypt when every recipient has a key' });
      await willEncrypt(form);
      await sendAndWait(tab, form);
      const sent = await handedToCarol(1);
      expect(openWith(sent.eml, carolKeys[0]!)).toContain('Subject: Second wombat letter');
      expect(openWith(sent.eml, carolKeys[1]!)).toBeNull();
      expect(problems()).toEqual([]);
    },
  );

  it('automatic: a recipient without keys blocks the send, naming them; without them it goes encrypted', async () => {
    await setPolicy('automatic');
    const before = await bobInbox();
    const { tab, form, problems } = await compose('alice');
    await fill(form, 'bob@example.test, dave@example.test', 'Keyless quokka plan', 'The quokka plan needs 3307 signatures.');
    await expectLine(form, 'dave@example.test', 'not encrypted: no key was found');
    await expectLine(form, 'bob@example.test', 'encrypted (key from this server; the policy requires it)');
    const blocked = 'This message must be encrypted, but it cannot be encrypted to dave@example.test';
    await panelOf(form).getByRole('alert').filter({ hasText: blocked }).waitFor();
    await willNotEncrypt(form);
    await expectSendRefused('alice', tab, form, blocked);
    expect(await bobInbox()).toEqual(before);
    // Without dave it can be encrypted, and goes.
    await form.getByRole('combobox', { name: 'To' }).fill('bob@example.test');
    await linesOf(form).getByRole('listitem').filter({ hasText: 'dave@example.test' }).waitFor({ state: 'detached' });
    await willEncrypt(form);
    await sendAndWait(tab, form);
    const got = await arrivesForBob(before);
    expect(got.smime).toBe('encrypted');
    expect(openWith(await rawOf(got.uid), bobKeys)).toContain('Subject: Keyless quokka plan');
    expect(await folder('dave', 'inbox')).toEqual([]);
    expect(await folder('alice', 'drafts')).toEqual([]);
    expect(problems()).toEqual([]);
  });

  it.concurrent(
    'prohibited for this organisation: the page says it will not be encrypted, refuses "Encrypt", and sends it plain',
    async () => {
      await setPolicy('prohibited');
      const before = await bobInbox();
      const { tab, form, problems } = await compose('alice');
      await fill(form, 'bob@example.test', 'Prohibited pangolin memo', 'The pangolin memo is plain 5519.');
      await expectLine(form, 'bob@example.test', 'not encrypted: the policy prohibits encryption to this organisation');
      await willNotEncrypt(form);
      // Asking for encryption anyway: blocked, said in the panel, and Send does not send.
      await choiceOf(form).selectOption({ label: 'Encrypt' });
      const blocked = 'You asked for encryption, but it cannot be encrypted to bob@example.test';
      await panelOf(form).getByRole('alert').filter({ hasText: blocked }).waitFor();
      await willNotEncrypt(form);
      await expectSendRefused('alice', tab, form, blocked);
      expect(await bobInbox()).toEqual(before);
      // Letting the policy decide: it goes, in the clear.
      await choiceOf(form).selectOption({ label: 'Encrypt when every recipient has a key' });
      await expect(panelOf(form).getByRole('alert').count()).resolves.toBe(0);
      await sendAndWait(tab, form);
      const got = await arrivesForBob(before);
      expect(got.smime).toBeNull();
      expect(got.subject).toBe('Prohibited pangolin memo');
      expect(await rawOf(got.uid)).toContain('pangolin memo is plain 5519');
      expect(await folder('alice', 'drafts')).toEqual([]);
      expect(problems()).toEqual([]);
    },
  );

  it.concurrent("a newer key of carol's, accepted in compose, is the one the message is encrypted to", async () => {
    await carolRekey();
    const before = toCarol().length;
    const { tab, form, problems } = await compose('erin');
    await fill(form, CAROL, 'Third wombat letter', 'Wombat letter number 6122.');
    await expectLine(form, CAROL, 'their key changed: accept or reject the new key before sending');
    await form.getByRole('button', { name: `Accept the new key of ${CAROL}` }).click();
    await expectLine(form, CAROL, 'encrypted (key from their server, pinned)');
    await willEncrypt(form);
    expect(await erinsPin()).toMatchObject([{ state: 'pinned', fingerprint: fingerprintOf(carolKeys[2]!.cert), pendingFingerprint: null }]);
    await sendAndWait(tab, form);
    const sent = await handedToCarol(before);
    expect(openWith(sent.eml, carolKeys[2]!)).toContain('Subject: Third wombat letter');
    expect(openWith(sent.eml, carolKeys[0]!)).toBeNull();
    expect(problems()).toEqual([]);
  });

  it("with carol's server silent her pinned key stays in use: no downgrade to plaintext", async () => {
    await other.close();
    otherOpen = false;
    const before = toCarol().length;
    const { tab, form, problems } = await compose('erin');
    await fill(form, CAROL, 'Fourth wombat letter', 'Wombat letter number 6123.');
    await expectLine(form, CAROL, 'encrypted to the key pinned for them (their server did not answer for it now)');
    await choiceOf(form).selectOption({ label: 'Do not encrypt' });
    const pinned = `You chose not to encrypt, but the key of ${CAROL} is pinned`;
    await panelOf(form).getByRole('alert').filter({ hasText: pinned }).waitFor();
    await expectSendRefused('erin', tab, form, pinned);
    await choiceOf(form).selectOption({ label: 'Encrypt when every recipient has a key' });
    await willEncrypt(form);
    await sendAndWait(tab, form);
    const sent = await handedToCarol(before);
    expect(openWith(sent.eml, carolKeys[2]!)).toContain('Subject: Fourth wombat letter');
    expect(problems()).toEqual([]);
  });
});
