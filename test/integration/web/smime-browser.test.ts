// End-to-end encryption in the web app (Chromium) against the appliance as it runs: key vaults set up
// in Settings, a message encrypted and signed in one browser and opened in another, interop with
// openssl cms, unlock with a recovery code and a passkey (virtual authenticator with PRF), the
// encryption policy and pinned keys in compose, the local search index, and the requests the pages
// made never carrying plaintext or key material.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page, Request } from 'playwright-core';
import { masterKeyFromPassword, pem, toB64, unlockWithMasterKey, type VaultView } from '../../../lib/keys/client/index.js';
import { CA_CERT_FILE, CA_KEY_FILE } from '../../../lib/pki/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureLocalCa, localCaDir } from '../../../lib/pki/index.js';
import { axeFindings, launchChromium, signedInContext, watchProblems } from '../../helpers/browser.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startRunningAppliance, type RunningAppliance } from '../../helpers/running-appliance.js';

const ready = requirePrograms('chromium', 'openssl');
const ALICE_PW = 'alice encryption password 1';
const BOB_PW = 'bob encryption password 22';
const NEW_ALICE_PW = 'alice new encryption password 333';
/** Words that exist only in the plaintext of the encrypted message. */
const SECRET_SUBJECT = 'Quarterly zanzibar figures';
const SECRET_BODY = 'The vault code is periwinkle-4471 and the meeting moves to Thursday.';
const SECRET_FILE = 'Attached plan: tangerine lighthouse at dawn.\n';

describe.runIf(ready)('S/MIME in the web app', { timeout: 300_000 }, () => {
  let app: RunningAppliance;
  let browser: Browser;
  let admin = '';
  let alice = '';
  let bob = '';
  let aliceBox = '';
  let bobBox = '';
  let work = '';
  /** The recovery codes each user was shown. */
  const codes: Record<string, string[]> = {};
  /** Key material (base64 of private keys and master keys) no request may carry. */
  const keyMaterial: string[] = [];
  const remember = (k: { raw: { encryptionPkcs8: Uint8Array; signingPkcs8: Uint8Array; masterKey: Uint8Array } }) =>
    keyMaterial.push(toB64(k.raw.encryptionPkcs8), toB64(k.raw.signingPkcs8), toB64(k.raw.masterKey));
  /** Every request the pages made: URL and body, checked for plaintext and key material at the end. */
  const sent: string[] = [];
  const record = (r: Request) => void sent.push(`${r.method()} ${r.url()}\n${r.postDataBuffer()?.toString('latin1') ?? ''}`);

  beforeAll(async () => {
    [app, browser] = await Promise.all([
      startRunningAppliance({ 'mail:security:trusted_authserv_id': 'mx.example.test' }),
      launchChromium(),
    ]);
    await ensureLocalCa(localCaDir(app.config)); // what svcmail setup makes
    admin = await app.token('root', { roles: ['admin'], elevated: true });
    expect((await app.call(admin, 'POST', '/api/mail/domains', { name: 'example.test', verified: true })).status).toBe(201);
    const box = await app.call(admin, 'POST', '/api/mail/mailboxes', { address: 'alice@example.test', owners: ['alice'], name: 'Alice' });
    aliceBox = box.body.uid;
    const bobRec = await app.call(admin, 'POST', '/api/mail/mailboxes', { address: 'bob@example.test', owners: ['bob'], name: 'Bob' });
    bobBox = bobRec.body.uid;
    [alice, bob] = await Promise.all([app.token('alice'), app.token('bob')]);
    work = mkdtempSync(join(tmpdir(), 'svcmail-smime-'));
  }, 200_000);
  afterAll(async () => {
    await browser?.close();
    app?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const tabOf = async (token: string, opts: { bypassCSP?: boolean } = {}): Promise<Page> => {
    const tab = await (await signedInContext(browser, app.api, token, opts)).newPage();
    tab.on('request', record);
    return tab;
  };
  /** Sets up the keys of the signed-in user on /settings; answers the recovery codes shown. */
  const setUp = async (tab: Page, password: string): Promise<string[]> => {
    await tab.goto(`${app.api}/settings#encryption`);
    const form = tab.getByRole('form', { name: 'Set up encryption' });
    await form.getByLabel('Encryption password', { exact: true }).fill(password);
    await form.getByLabel('The same password again').fill(password);
    await form.getByRole('button', { name: 'Create my keys' }).click();
    const codes = tab.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem');
    await codes.first().waitFor({ timeout: 60_000 });
    return codes.allInnerTexts();
  };
  /** The user's private keys as the vault holds them, opened here with the password (what the browser does). */
  const privateKeys = async (token: string, box: string, password: string) => {
    const vault = (await app.call(token, 'GET', `/api/mail/mailboxes/${box}/keyvault`)).body as VaultView;
    const keys = await unlockWithMasterKey(vault, await masterKeyFromPassword(vault, password));
    return { vault, encryption: pem('PRIVATE KEY', keys.encryptionPkcs8), signing: pem('PRIVATE KEY', keys.signingPkcs8), raw: keys };
  };
  const openssl = (args: string[], input?: string) => execFileSync('openssl', args, { input, cwd: work }).toString('latin1');
  /** A certificate from the service's CA for a CSR (what an administrator completes a manual enrolment with). */
  const issueFromCa = (csr: string, address: string): string => {
    writeFileSync(join(work, 'req.pem'), csr);
    writeFileSync(
      join(work, 'ext.cnf'),
      `subjectAltName=email:${address}\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=emailProtection\n`,
    );
    const ca = localCaDir(app.config);
    return openssl([
      'x509',
      '-req',
      '-in',
      'req.pem',
      '-CA',
      join(ca, CA_CERT_FILE),
      '-CAkey',
      join(ca, CA_KEY_FILE),
      '-days',
      '30',
      '-extfile',
      'ext.cnf',
    ]);
  };
  /** The newest message of a folder role of a mailbox (as its owner). */
  const newest = async (token: string, box: string, role: string) => {
    const folders = (await app.call(token, 'GET', `/api/mail/folders?mailboxUid=${box}`)).body as Array<{ uid: string; role: string }>;
    const list = await app.call(
      token,
      'GET',
      `/api/mail/messages?folderUid=${folders.find((f) => f.role === role)!.uid}&sort=-date&limit=5`,
    );
    return list.body[0] as { uid: string; subject: string; smime: string | null } | undefined;
  };
  const rawOf = async (token: string, uid: string) =>
    (await fetch(`${app.api}/api/mail/messages/${uid}/raw`, { headers: { authorization: `Bearer ${token}` } })).text();
  /** Opens the newest message of the list until `shown` appears (a click while the list is still being read can miss). */
  const openFirst = async (tab: Page, shown: Locator) => {
    const row = tab.getByRole('listbox', { name: 'Messages' }).getByRole('option').first();
    for (let i = 0; i < 3; i++) {
      await row.click();
      if (
        await shown.waitFor({ timeout: 5000 }).then(
          () => true,
          () => false,
        )
      )
        return;
    }
    await shown.waitFor();
  };
  /** Fills an unlock form on the page with a password. */
  const unlockWith = async (tab: Page | Locator, address: string, password: string) => {
    const form = tab.getByRole('form', { name: `Unlock the encryption keys of ${address}` });
    await form.getByLabel('Encryption password').fill(password);
    await form.getByRole('button', { name: 'Unlock' }).click();
  };

  /** Bob's mail page with alice's message open, decrypted after he unlocked his keys with the password. */
  const bobReading = async (opts: { bypassCSP?: boolean } = {}) => {
    const tab = await tabOf(bob, opts);
    const problems = watchProblems(tab);
    await tab.goto(`${app.api}/`);
    await openFirst(tab, tab.getByRole('form', { name: 'Unlock the encryption keys of bob@example.test' }));
    await unlockWith(tab, 'bob@example.test', BOB_PW);
    const reader = tab.getByRole('article', { name: 'Message' });
    await reader.getByRole('heading', { name: SECRET_SUBJECT }).waitFor({ timeout: 60_000 });
    return { tab, problems, reader };
  };

  it('alice and bob set up their keys in Settings and are shown their recovery codes once', async () => {
    const [aTab, bTab] = await Promise.all([tabOf(alice), tabOf(bob)]);
    const problems = [...watchProblems(aTab), ...watchProblems(bTab)];
    const [aCodes, bCodes] = await Promise.all([setUp(aTab, ALICE_PW), setUp(bTab, BOB_PW)]);
    [codes.alice, codes.bob] = [aCodes, bCodes];
    expect(aCodes).toHaveLength(8);
    expect(new Set([...aCodes, ...bCodes]).size).toBe(16);
    for (const c of aCodes) expect(c).toMatch(/^[A-Z2-7]{4}(-[A-Z2-7]{4}){7}$/);
    // The codes stay until the user says they are kept.
    await aTab.getByRole('button', { name: 'Done' }).isDisabled();
    await aTab.getByLabel('I have stored these codes somewhere safe').check();
    await aTab.getByRole('button', { name: 'Done' }).click();
    await aTab.getByRole('list', { name: 'Recovery codes' }).waitFor({ state: 'detached' });
    for (const [token, box] of [
      [alice, aliceBox],
      [bob, bobBox],
    ]) {
      const vault = (await app.call(token, 'GET', `/api/mail/mailboxes/${box}/keyvault`)).body as VaultView;
      expect(vault.enrolled).toBe(true);
      expect(vault.wraps.map((w) => w.method).sort()).toEqual(['password', 'recovery codes']);
    }
    expect(problems).toEqual([]);
  });

  it("alice's signing request is completed by an administrator with a certificate of the service's CA", async () => {
    const list = await app.call(admin, 'GET', '/api/admin/signing-enrollments?state=requested');
    const req = list.body.find((r: { mailboxUid: string }) => r.mailboxUid === aliceBox);
    expect(req).toBeTruthy();
    const done = await app.call(admin, 'POST', `/api/admin/signing-enrollments/${req.uid}/complete`, {
      certificate: issueFromCa(req.csr, 'alice@example.test'),
    });
    expect(done.status).toBe(200);
    expect((await app.call(alice, 'GET', `/api/mail/mailboxes/${aliceBox}/keyvault`)).body.signingCertificate).toMatch(/BEGIN CERTIFICATE/);
    // Settings say where each stands: alice signs; bob's request waits for an administrator.
    const [aTab, bTab] = await Promise.all([tabOf(alice), tabOf(bob)]);
    await Promise.all([aTab.goto(`${app.api}/settings#encryption`), bTab.goto(`${app.api}/settings#encryption`)]);
    await aTab.getByText('Your messages are signed').waitFor();
    expect(await aTab.getByRole('status').filter({ hasText: 'Latest request' }).innerText()).toContain('Installed.');
    await bTab.getByText('No signing certificate yet: your messages are encrypted but not signed.').waitFor();
    expect(await bTab.getByRole('status').filter({ hasText: 'Latest request' }).innerText()).toContain(
      'issued by hand): Asked for: an administrator issues the certificate by hand.',
    );
    await Promise.all([aTab.context().close(), bTab.context().close()]);
  });

  it('alice sends bob an encrypted, signed message; the server holds CMS enveloped data that openssl opens with his key', async () => {
    const tab = await tabOf(alice);
    const problems = watchProblems(tab);
    await tab.goto(`${app.api}/`);
    await tab.getByRole('button', { name: 'New message' }).click();
    const compose = tab.getByRole('form', { name: 'New message' });
    await unlockWith(compose, 'alice@example.test', ALICE_PW);
    await compose
      .getByRole('form', { name: /^Unlock the encryption keys/ })
      .waitFor({ state: 'detached' })
      .catch(async (e) => {
        throw new Error(`${e}\n${problems.join('\n')}\n${await tab.locator('main').innerText()}`);
      });
    await compose.getByRole('combobox', { name: 'To' }).fill('bob@example.test');
    await compose.getByLabel('Subject').fill(SECRET_SUBJECT);
    await compose.getByRole('textbox', { name: 'Message' }).fill(SECRET_BODY);
    await compose.locator('input[type=file]').setInputFiles({ name: 'plan.txt', mimeType: 'text/plain', buffer: Buffer.from(SECRET_FILE) });
    await compose.getByRole('list', { name: 'Attachments' }).getByText('plan.txt').waitFor();
    await compose.getByText('This message will be encrypted and signed.').waitFor();
    expect(await compose.getByRole('list', { name: 'Encryption per recipient' }).innerText()).toContain(
      'bob@example.test: encrypted (key from this server)',
    );
    await compose.getByRole('button', { name: 'Send', exact: true }).click();
    await tab.getByRole('status').filter({ hasText: /^Sent/ }).waitFor({ timeout: 30_000 });
    const got = await app.until('bob receives it', async () => newest(bob, bobBox, 'inbox'));
    expect(got.smime).toBe('encrypted');
    expect(got.subject).toBe('[...]');
    const raw = await rawOf(bob, got.uid);
    for (const word of ['zanzibar', 'periwinkle', 'Thursday', 'tangerine', 'plan.txt']) expect(raw).not.toContain(word);
    expect(raw).toMatch(/Content-Type: application\/pkcs7-mime; smime-type=enveloped-data/);
    // Interop: openssl cms opens it with bob's key (exported from his vault here) and verifies alice's signature.
    const keys = await privateKeys(bob, bobBox, BOB_PW);
    remember(keys);
    remember(await privateKeys(alice, aliceBox, ALICE_PW));
    writeFileSync(join(work, 'bob.key'), keys.encryption);
    writeFileSync(join(work, 'bob.crt'), keys.vault.encryptionCertificate!);
    writeFileSync(join(work, 'msg.eml'), raw);
    const inner = openssl(['cms', '-decrypt', '-in', 'msg.eml', '-inkey', 'bob.key', '-recip', 'bob.crt']);
    writeFileSync(join(work, 'ca.crt'), keys.vault.caCertificates!.join('\n'));
    writeFileSync(join(work, 'inner.eml'), inner);
    const verified = openssl(['cms', '-verify', '-in', 'inner.eml', '-CAfile', 'ca.crt', '-purpose', 'any']);
    expect(verified).toContain(`Subject: ${SECRET_SUBJECT}`);
    expect(
      Buffer.from(/\r?\n\r?\n([A-Za-z0-9+/=\r\n]+)/.exec(verified.slice(verified.indexOf('text/plain')))![1]!, 'base64').toString(),
    ).toContain('periwinkle-4471');
    // Alice's Sent copy is encrypted to her too.
    expect((await newest(alice, aliceBox, 'sent'))?.smime).toBe('encrypted');
    expect(problems).toEqual([]);
  });

  it('bob decrypts it in his browser and sees a valid signature from alice', async () => {
    const { tab, problems, reader } = await bobReading();
    const signed = await reader.getByRole('status').filter({ hasText: 'Signed by' }).innerText();
    expect(signed).toContain('alice@example.test');
    expect(signed).toContain('the signature is valid');
    await tab.frameLocator('iframe[title="Message"]').getByText('periwinkle-4471').waitFor();
    // The attachment was decrypted with the rest: downloaded from the page's memory, byte for byte.
    const [download] = await Promise.all([tab.waitForEvent('download'), reader.getByRole('link', { name: 'plan.txt' }).click()]);
    expect(download.suggestedFilename()).toBe('plan.txt');
    expect(readFileSync((await download.path())!, 'utf8')).toBe(SECRET_FILE);
    expect(problems).toEqual([]);
  });

  it('bob replies to and forwards it: the page quotes the decrypted text, both go out sealed, alice reads the quote; axe finds nothing serious', async () => {
    const { tab, problems, reader } = await bobReading({ bypassCSP: true });
    expect(await axeFindings(tab)).toEqual([]); // the decrypted pane and its signature line
    const answer = async (label: string) => {
      await reader.getByRole('toolbar', { name: 'Message actions' }).getByRole('button', { name: label, exact: true }).click();
      const form = tab.getByRole('form', { name: label });
      await expect.poll(() => form.getByLabel('Subject').inputValue(), { timeout: 30_000 }).toMatch(/^(Re|Fwd): /);
      return form;
    };
    const reply = await answer('Reply');
    expect(await reply.getByLabel('Subject').inputValue()).toBe(`Re: ${SECRET_SUBJECT}`);
    expect(await reply.getByRole('combobox', { name: 'To' }).inputValue()).toContain('alice@example.test');
    const text = reply.getByRole('textbox', { name: 'Message' });
    await expect.poll(() => text.textContent()).toContain('periwinkle-4471');
    expect(await text.textContent()).toContain('alice@example.test> wrote:');
    await reply.getByText('alice@example.test: encrypted (key from this server)').waitFor();
    expect(await axeFindings(tab)).toEqual([]); // the compose view's encryption line
    await text.press('Control+Home');
    await text.pressSequentially('Thursday suits me: marigold-77.');
    await reply.getByRole('button', { name: 'Send', exact: true }).click();
    await tab.getByRole('status').filter({ hasText: /^Sent/ }).waitFor({ timeout: 30_000 });
    const original = (await app.call(bob, 'GET', `/api/mail/messages/${(await newest(bob, bobBox, 'inbox'))!.uid}`)).body;
    const got = await app.until('alice receives the reply', async () => {
      const m = await newest(alice, aliceBox, 'inbox');
      return m?.smime === 'encrypted' ? m : undefined;
    });
    const stored = (await app.call(alice, 'GET', `/api/mail/messages/${got.uid}`)).body;
    expect(stored).toMatchObject({ subject: '[...]', inReplyTo: original.messageId, threadId: original.threadId });
    const raw = await rawOf(alice, got.uid);
    for (const word of ['marigold', 'periwinkle', 'zanzibar']) expect(raw).not.toContain(word);

    // Alice reads bob's reply in her browser: his words and her own quoted text, decrypted there.
    const aTab = await tabOf(alice);
    const aProblems = watchProblems(aTab);
    await aTab.goto(`${app.api}/`);
    await openFirst(aTab, aTab.getByRole('form', { name: 'Unlock the encryption keys of alice@example.test' }));
    await unlockWith(aTab, 'alice@example.test', ALICE_PW);
    const aReader = aTab.getByRole('article', { name: 'Message' });
    await aReader.getByRole('heading', { name: `Re: ${SECRET_SUBJECT}` }).waitFor({ timeout: 60_000 });
    const frame = aTab.frameLocator('iframe[title="Message"]');
    await frame.getByText('marigold-77').waitFor();
    await frame.getByText('periwinkle-4471').waitFor();

    // Forward: the text and the decrypted file go along, sealed; openssl opens it with alice's key.
    const forward = await answer('Forward');
    expect(await forward.getByLabel('Subject').inputValue()).toBe(`Fwd: ${SECRET_SUBJECT}`);
    await forward.getByRole('list', { name: 'Attachments' }).getByText('plan.txt').waitFor();
    await forward.getByRole('combobox', { name: 'To' }).fill('alice@example.test');
    await forward.getByText('alice@example.test: encrypted (key from this server)').waitFor();
    await forward.getByRole('button', { name: 'Send', exact: true }).click();
    await forward.waitFor({ state: 'detached', timeout: 30_000 }).catch(async (e) => {
      throw new Error(`${e}\n${problems.join('\n')}\n${await forward.innerText()}`);
    });
    const fwd = await app.until('alice receives the forward', async () => {
      const m = await newest(alice, aliceBox, 'inbox');
      return m && m.uid !== got.uid ? m : undefined;
    });
    const fwdRaw = await rawOf(alice, fwd.uid);
    for (const word of ['periwinkle', 'tangerine', 'plan.txt']) expect(fwdRaw).not.toContain(word);
    const aliceKeys = await privateKeys(alice, aliceBox, ALICE_PW);
    writeFileSync(join(work, 'alice.key'), aliceKeys.encryption);
    writeFileSync(join(work, 'alice.crt'), aliceKeys.vault.encryptionCertificate!);
    writeFileSync(join(work, 'fwd.eml'), fwdRaw);
    // bob has no signing certificate: his mail is encrypted, not signed.
    const inner = openssl(['cms', '-decrypt', '-in', 'fwd.eml', '-inkey', 'alice.key', '-recip', 'alice.crt']);
    expect(inner).toContain(`Subject: Fwd: ${SECRET_SUBJECT}`);
    expect(inner).toContain('plan.txt');
    expect(inner).toContain(Buffer.from(SECRET_FILE).toString('base64').slice(0, 40));

    // Forward as attachment: the decrypted message whole, as a file of the new (sealed) message.
    const whole = await answer('Forward as attachment');
    await whole.getByRole('list', { name: 'Attachments' }).getByText(`${SECRET_SUBJECT}.eml`).waitFor();
    await whole.getByRole('button', { name: 'Discard' }).click();

    expect(problems).toEqual([]);
    expect(aProblems).toEqual([]);
  });

  it('bob unlocks with one of his recovery codes (a wrong one is refused) once for the session: a reload and Settings keep the keys, Lock now locks every page, closing the last page locks them', async () => {
    const tab = await tabOf(bob);
    const problems = watchProblems(tab);
    await tab.goto(`${app.api}/`);
    const form = tab.getByRole('form', { name: 'Unlock the encryption keys of bob@example.test' });
    await openFirst(tab, form);
    await form
      .getByRole('radio', { name: 'Recovery code' })
      .check()
      .catch(async (e) => {
        throw new Error(`${e}\n${problems.join('\n')}\n${await tab.locator('main').innerText()}`);
      });
    await form.getByLabel('The recovery code').fill('AAAA-BBBB-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH');
    await form.getByRole('button', { name: 'Unlock' }).click();
    await form
      .getByRole('alert')
      .filter({ hasText: 'That recovery code does not match.' })
      .waitFor()
      .catch(async (e) => {
        throw new Error(`${e}\n${problems.join('\n')}\n${await tab.getByRole('article').innerText()}`);
      });
    await form.getByLabel('The recovery code').fill(codes.bob![5]!.toLowerCase().replace(/-/g, ' '));
    await form.getByRole('button', { name: 'Unlock' }).click();
    await tab.getByRole('heading', { name: SECRET_SUBJECT }).waitFor();
    // Once per browser session: a reload and Settings find the keys unlocked (the keyring worker holds them).
    await tab.reload();
    await openFirst(tab, tab.getByRole('heading', { name: SECRET_SUBJECT }));
    const context = tab.context();
    const settings = await context.newPage();
    await settings.goto(`${app.api}/settings#encryption`);
    await settings.getByRole('status').filter({ hasText: 'Unlocked in this browser session' }).waitFor();
    // "Lock now" in one page locks the others.
    await settings.getByRole('button', { name: 'Lock now' }).click();
    await form.waitFor();
    expect(await tab.getByRole('heading', { name: SECRET_SUBJECT }).count()).toBe(0);
    await unlockWith(tab, 'bob@example.test', BOB_PW);
    await settings.getByRole('status').filter({ hasText: 'Unlocked in this browser session' }).waitFor();
    // Closing the last page locks them, once the few seconds' grace for the next page of a navigation are over.
    await Promise.all([tab.close(), settings.close()]);
    await new Promise((r) => setTimeout(r, 7000));
    const again = await context.newPage();
    await again.goto(`${app.api}/`);
    await openFirst(again, again.getByRole('form', { name: 'Unlock the encryption keys of bob@example.test' }));
    expect(problems).toEqual([]);
  });

  it('a message signed by openssl cms with a certificate of the local CA verifies; a tampered one and one from an unknown signer are flagged', async () => {
    const ca = localCaDir(app.config);
    openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'dan.key']);
    openssl(['req', '-new', '-key', 'dan.key', '-subj', '/CN=Dan Signer', '-out', 'dan.csr']);
    writeFileSync(
      join(work, 'dan.ext'),
      'subjectAltName=email:dan@example.net\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=emailProtection\n',
    );
    openssl([
      'x509',
      '-req',
      '-in',
      'dan.csr',
      '-CA',
      join(ca, CA_CERT_FILE),
      '-CAkey',
      join(ca, CA_KEY_FILE),
      '-days',
      '30',
      '-extfile',
      'dan.ext',
      '-out',
      'dan.crt',
    ]);
    writeFileSync(join(work, 'dan.txt'), 'Signed words from Dan: marmalade harbour.\n');
    const signed = (subject: string) =>
      openssl([
        'cms',
        '-sign',
        '-in',
        'dan.txt',
        '-text',
        '-signer',
        'dan.crt',
        '-inkey',
        'dan.key',
        '-from',
        'Dan <dan@example.net>',
        '-to',
        'bob@example.test',
        '-subject',
        subject,
      ]);
    await app.handOff('bob@example.test', signed('Signed by openssl'), 'dan@example.net');
    await app.handOff(
      'bob@example.test',
      signed('Tampered by someone').replace('marmalade harbour', 'marmalade harbor!'),
      'dan@example.net',
    );
    // Eve signs with a certificate of her own making: it verifies, but no CA of the service vouches for it.
    openssl(
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        'eve.key',
        '-out',
        'eve.crt',
      ].concat(['-days', '30', '-subj', '/CN=Eve', '-addext', 'subjectAltName=email:eve@example.net']),
    );
    const eve = openssl(
      ['cms', '-sign', '-in', 'dan.txt', '-text', '-signer', 'eve.crt', '-inkey', 'eve.key'].concat([
        '-from',
        'eve@example.net',
        '-to',
        'bob@example.test',
        '-subject',
        'Signed by a stranger',
      ]),
    );
    await app.handOff('bob@example.test', eve, 'eve@example.net');
    await app.until('all three are filed', async () => {
      const inbox = (await app.call(bob, 'GET', `/api/mail/folders?mailboxUid=${bobBox}`)).body.find(
        (f: { role: string }) => f.role === 'inbox',
      );
      const listed = await app.call(bob, 'GET', `/api/mail/messages?folderUid=${inbox.uid}&limit=20`);
      return listed.body.filter((m: { smime: string | null }) => m.smime === 'signed').length === 3 ? true : undefined;
    });
    const tab = await tabOf(bob);
    const problems = watchProblems(tab);
    await tab.goto(`${app.api}/`);
    const list = tab.getByRole('listbox', { name: 'Messages' });
    await list.getByRole('option', { name: /Signed by openssl/ }).click();
    const reader = tab.getByRole('article', { name: 'Message' });
    const good = await reader
      .getByRole('status')
      .filter({ hasText: 'Signed by' })
      .innerText()
      .catch(async (e) => {
        throw new Error(`${e}\n${problems.join('\n')}\n${await tab.getByRole('article').innerText()}`);
      });
    expect(good).toContain('Dan Signer <dan@example.net>: the signature is valid');
    await tab.frameLocator('iframe[title="Message"]').getByText('marmalade harbour').waitFor();
    await list.getByRole('option', { name: /Tampered by someone/ }).click();
    const bad = await reader.getByRole('alert').filter({ hasText: 'Signature problem' }).innerText();
    expect(bad).toContain('the message was changed after it was signed');
    expect(await reader.getByRole('status').filter({ hasText: 'the signature is valid' }).count()).toBe(0);
    await list.getByRole('option', { name: /Signed by a stranger/ }).click();
    const unknown = await reader.getByRole('alert').filter({ hasText: 'Signed as Eve' }).innerText();
    expect(unknown).toContain('The signer is unknown');
    expect(unknown).not.toContain('changed after it was signed');
    expect(problems).toEqual([]);
  });

  it('a passkey with the PRF extension (a virtual authenticator) is added in Settings, unlocks the keys and is removed again', async () => {
    // WebAuthn needs a domain name as relying party: the page is opened as localhost.
    const base = app.api.replace('127.0.0.1', 'localhost');
    const context = await signedInContext(browser, base, alice);
    const tab = await context.newPage();
    tab.on('request', record);
    const problems = watchProblems(tab);
    const cdp = await context.newCDPSession(tab);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        hasPrf: true,
        automaticPresenceSimulation: true,
      },
    });
    await tab.goto(`${base}/settings#encryption`);
    await tab.locator('summary', { hasText: 'Add a passkey' }).click();
    const add = tab.getByRole('form', { name: 'Add a passkey' });
    await add.getByLabel('Name of the passkey').fill('Test key');
    await add.getByLabel('Current encryption password').fill(ALICE_PW);
    await add.getByRole('button', { name: 'Add a passkey' }).click();
    await add.getByRole('status').filter({ hasText: 'The passkey was added' }).waitFor({ timeout: 30_000 });
    const vault = (await app.call(alice, 'GET', `/api/mail/mailboxes/${aliceBox}/keyvault`)).body as VaultView;
    expect(vault.wraps.filter((w) => w.method === 'passkey').map((w) => (w as { label?: string }).label)).toEqual(['Test key']);
    await tab.reload();
    const form = tab.getByRole('form', { name: 'Unlock the encryption keys of alice@example.test' });
    await form.getByRole('radio', { name: 'Passkey' }).check();
    await form.getByRole('button', { name: 'Unlock with a passkey' }).click();
    await tab
      .getByRole('status')
      .filter({ hasText: /^Unlocked in this browser session/ })
      .waitFor();
    // Removed again (after a confirmation): it no longer unlocks, and the unlock form no longer offers it.
    tab.once('dialog', (d) => void d.accept());
    await tab.getByRole('button', { name: 'Remove Test key' }).click();
    await expect
      .poll(async () =>
        ((await app.call(alice, 'GET', `/api/mail/mailboxes/${aliceBox}/keyvault`)).body as VaultView).wraps.map((w) => w.method),
      )
      .not.toContain('passkey');
    await tab.getByRole('button', { name: 'Lock now' }).click();
    await form.getByLabel('Encryption password').waitFor();
    expect(await form.getByRole('radio', { name: 'Passkey' }).count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it('a change made from a second tab after the keys were replaced in the first is refused and explained; reloading recovers', async () => {
    const [first, second] = await Promise.all([tabOf(alice), tabOf(alice)]);
    const problems = [...watchProblems(first), ...watchProblems(second, { allowStatus: (s) => s === 409 })];
    await Promise.all([first.goto(`${app.api}/settings#encryption`), second.goto(`${app.api}/settings#encryption`)]);
    await second.getByText('Your keys are set up (generation 1)').waitFor();
    await first.locator('summary', { hasText: 'Replace the keys' }).click();
    const rekey = first.getByRole('form', { name: 'Replace the keys' });
    await rekey.getByLabel('Encryption password for the new keys').fill(NEW_ALICE_PW);
    await rekey.getByLabel('The same password again').fill(NEW_ALICE_PW);
    await rekey.getByLabel('Type REPLACE to replace your keys').fill('REPLACE');
    await rekey.getByRole('button', { name: 'Replace the keys' }).click();
    await first.getByRole('list', { name: 'Recovery codes' }).waitFor({ timeout: 60_000 });
    // The second tab still shows generation 1: its change is refused (409) and explained.
    await second.locator('summary', { hasText: 'Make new recovery codes' }).click();
    const renew = second.getByRole('form', { name: 'Make new recovery codes' });
    await renew.getByLabel('Current encryption password').fill(ALICE_PW);
    await renew.getByRole('button', { name: 'Make new recovery codes' }).click();
    await renew.getByRole('alert').filter({ hasText: 'changed in another tab or on another device' }).waitFor({ timeout: 30_000 });
    await renew.getByRole('button', { name: 'Reload the keys' }).click();
    await second.getByText('Your keys are set up (generation 2)').waitFor();
    if (!(await renew.isVisible())) await second.locator('summary', { hasText: 'Make new recovery codes' }).click();
    await renew.getByLabel('Current encryption password').fill(NEW_ALICE_PW);
    await renew.getByRole('button', { name: 'Make new recovery codes' }).click();
    await second.getByRole('list', { name: 'Recovery codes' }).waitFor({ timeout: 60_000 });
    expect((await app.call(alice, 'GET', `/api/mail/mailboxes/${aliceBox}/keyvault`)).body.masterKeyGeneration).toBe(2);
    expect(problems).toEqual([]);
  });

  it('the requests the pages made never carried the plaintext, a password, a recovery code or a private key', async () => {
    remember(await privateKeys(alice, aliceBox, NEW_ALICE_PW)); // the keys that replaced hers
    const forbidden = [
      'zanzibar',
      'periwinkle',
      'tangerine',
      ALICE_PW,
      BOB_PW,
      NEW_ALICE_PW,
      ...codes.alice!,
      ...codes.bob!,
      ...keyMaterial,
    ];
    expect(keyMaterial).toHaveLength(9);
    expect(sent.length).toBeGreaterThan(20);
    for (const f of forbidden) expect(sent.filter((r) => r.includes(f) || r.includes(encodeURIComponent(f)))).toEqual([]);
  });
});
