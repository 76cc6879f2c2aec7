// The local search index of decrypted mail in Chromium against the appliance as it runs (issue #32;
// Spec: Token lifecycle). Alice's key vault and the encrypted mail she receives are made in Node with
// the reference client, as her own client and her correspondents' would; the browser unlocks her keys
// on the mail page. Search then finds a word that exists only inside an encrypted message, merged
// with the server's results once each; the list shows the decrypted subject; IndexedDB holds the
// index sealed (no word of the mail in it); the next page reads it back instead of decrypting again
// and forgets a deleted message; sign-out leaves no database, and the next session must unlock again;
// new encrypted mail gets its subject in the list while the keys stay unlocked, and locking them (here:
// the idle lock) takes the index out of memory.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVault, encryptEntity } from '../../../lib/keys/client/index.js';
import { ensureLocalCa, localCaDir } from '../../../lib/pki/index.js';
import { innerEntity, outerMessage } from '../../../web/src/crypto/mime.js';
import { launchChromium, watchProblems, lockKeys } from '../../helpers/browser.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startRunningAppliance, type RunningAppliance } from '../../helpers/running-appliance.js';
import { startSigninDouble, type SigninDouble } from '../../helpers/signin-double.js';
import { TEST_ARGON2 } from '../keys/helpers.js';

const ready = requirePrograms('chromium');
const PASSWORD = 'alice index password 7';
/** In the encrypted message's text only. */
const SECRET_WORD = 'zebracornucopia';
/** The encrypted message's real subject (the stored one is "[...]"). */
const SECRET_SUBJECT = 'Aurochs migration figures';
/** In the encrypted message that gets deleted. */
const DOOMED_WORD = 'pelicanwhistle';
/** In one encrypted and one plain message: both found, each once. */
const SHARED_WORD = 'lighthousekeeper';

/** An encrypted message from bob to alice with protected headers (RFC 9788), as a client makes it. */
async function encryptedMail(certPem: string, subject: string, text: string, n: number): Promise<string> {
  const c = {
    from: { name: 'Bob Sender', address: 'bob@example.net' },
    to: [{ name: 'Alice', address: 'alice@example.test' }],
    cc: [],
    bcc: [],
    subject,
    text,
    html: null,
    files: [],
    date: new Date(Date.UTC(2026, 10, 20, 9, n)),
    messageId: `<enc-${n}@example.net>`,
  };
  return outerMessage(c, await encryptEntity(innerEntity(c), [certPem]));
}

/** Everything this origin keeps in IndexedDB, as text: each string, and each byte array read as Latin-1 and as UTF-8. */
const readIndexedDb = (tab: Page) =>
  tab.evaluate(async () => {
    type Req<T> = { result: T; error: unknown; onsuccess: unknown; onerror: unknown };
    type Db = {
      objectStoreNames: ArrayLike<string>;
      transaction(s: string): { objectStore(s: string): { getAll(): Req<unknown[]>; getAllKeys(): Req<unknown[]> } };
      close(): void;
    };
    const g = globalThis as unknown as {
      indexedDB: { databases(): Promise<Array<{ name: string }>>; open(n: string): Req<Db> };
      TextDecoder: new (label: string) => { decode(b: Uint8Array): string };
    };
    const done = <T>(r: Req<T>) =>
      new Promise<T>((ok, ko) => {
        r.onsuccess = () => ok(r.result);
        r.onerror = () => ko(r.error);
      });
    const texts: string[] = [];
    let bytes = 0;
    const walk = (v: unknown): void => {
      if (typeof v === 'string') texts.push(v);
      else if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) {
        const b = v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
        bytes += b.length;
        texts.push(new g.TextDecoder('latin1').decode(b), new g.TextDecoder('utf-8').decode(b));
      } else if (v && typeof v === 'object')
        for (const [k, x] of Object.entries(v)) {
          texts.push(k);
          walk(x);
        }
      else if (v !== undefined && v !== null) texts.push(String(v));
    };
    const names = (await g.indexedDB.databases()).map((d) => d.name);
    for (const name of names) {
      const db = await done(g.indexedDB.open(name));
      for (const store of Array.from(db.objectStoreNames)) {
        walk(await done(db.transaction(store).objectStore(store).getAll()));
        walk(await done(db.transaction(store).objectStore(store).getAllKeys()));
      }
      db.close();
    }
    return { names, text: texts.join('\n').toLowerCase(), bytes };
  });

describe.runIf(ready)('the local search index of encrypted mail in the browser', { timeout: 300_000 }, () => {
  let app: RunningAppliance;
  let signin: SigninDouble;
  let browser: Browser;
  let context: BrowserContext;
  let tab: Page;
  let problems: string[];
  let aliceBox = '';
  let alice = '';
  let doomedUid = '';
  let cert = '';

  beforeAll(async () => {
    signin = await startSigninDouble({ users: { alice: { passwords: [] } } });
    [app, browser] = await Promise.all([
      startRunningAppliance({ 'mail:auth_server_url': signin.url, 'mail:keys:argon2:min_memory_kib': 8192 }),
      launchChromium(),
    ]);
    await ensureLocalCa(localCaDir(app.config)); // what svcmail setup makes
    const admin = await app.token('root', { roles: ['admin'], elevated: true });
    expect((await app.call(admin, 'POST', '/api/mail/domains', { name: 'example.test', verified: true })).status).toBe(201);
    aliceBox = (await app.call(admin, 'POST', '/api/mail/mailboxes', { address: 'alice@example.test', owners: ['alice'], name: 'Alice' }))
      .body.uid;
    alice = await app.token('alice');
    // alice's client made her vault; her correspondents encrypt to her certificate
    const vault = await createVault(aliceBox, 'alice@example.test', PASSWORD, { argon2: TEST_ARGON2 });
    const enrolled = await app.call(alice, 'POST', `/api/mail/mailboxes/${aliceBox}/keyvault/enroll`, vault.body);
    expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(201);
    cert = (await app.call(alice, 'GET', `/api/mail/mailboxes/${aliceBox}/keyvault`)).body.encryptionCertificate as string;
    await app.handOff(
      'alice@example.test',
      await encryptedMail(cert, SECRET_SUBJECT, `The ${SECRET_WORD} ledger, ask the ${SHARED_WORD}.`, 1),
    );
    await app.handOff('alice@example.test', await encryptedMail(cert, 'Doomed memo', `Burn after reading: ${DOOMED_WORD}.`, 2));
    await app.handOff(
      'alice@example.test',
      `From: Carol <carol@example.net>\r\nTo: alice@example.test\r\nSubject: Plain note\r\nDate: Fri, 20 Nov 2026 08:00:00 +0000\r\nMessage-ID: <plain-1@example.net>\r\n\r\nThe ${SHARED_WORD} waves.\r\n`,
    );
    const filed = await app.until('three messages filed', async () => {
      const rows = (await app.call(alice, 'GET', `/api/mail/messages?mailboxUid=${aliceBox}`)).body as Array<Record<string, string>>;
      return rows.length === 3 ? rows : undefined;
    });
    expect(filed.filter((m) => m.smime === 'encrypted').map((m) => m.subject)).toEqual(['[...]', '[...]']);
    doomedUid = filed.find((m) => m.messageId === '<enc-2@example.net>')!.uid;
    context = await signedIn();
    tab = await context.newPage();
    problems = watchProblems(tab);
  }, 200_000);
  afterAll(async () => {
    await browser?.close();
    app?.stop();
    await signin?.close();
  });

  /** A context signed in as alice: the session cookie, the sign-in service's refresh cookie, the CSRF cookie. */
  async function signedIn(): Promise<BrowserContext> {
    const c = context ?? (await browser.newContext());
    c.setDefaultTimeout(30_000);
    const token = await app.token('alice');
    await c.addCookies(
      [
        ['jwt', token, true],
        ['refresh', 'alice', true],
        ['csrf', 'csrf-of-this-session', false],
      ].map(([name, value, httpOnly]) => ({
        name: String(name),
        value: String(value),
        domain: '127.0.0.1',
        path: '/',
        httpOnly: Boolean(httpOnly),
        sameSite: 'Strict' as const,
      })),
    );
    // the sign-in page is the sign-in service's: here a plain page
    await c.route(`${signin.url}/auth/**`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<title>Sign in</title>' }),
    );
    return c;
  }

  const results = () => tab.getByRole('listbox', { name: 'Search results' }).getByRole('option');
  const resultsNote = () => tab.locator('.results > p[role=status]');

  async function search(words: string): Promise<void> {
    await tab.getByRole('searchbox', { name: 'Search words' }).fill(words);
    await tab.getByRole('search', { name: 'Search mail' }).getByRole('button', { name: 'Search', exact: true }).click();
    await resultsNote().waitFor();
  }

  async function unlockFromSearch(): Promise<void> {
    await tab.getByText('Unlock to search encrypted mail').click();
    const form = tab.getByRole('form', { name: 'Unlock the encryption keys of alice@example.test' });
    await form.getByRole('textbox', { name: 'Encryption password' }).fill(PASSWORD);
    await form.getByRole('button', { name: 'Unlock', exact: true }).click();
  }

  const openMailPage = async () => {
    await tab.goto(`${app.api}/`);
    await tab.getByRole('listbox', { name: 'Folders' }).getByRole('option', { name: /Inbox/ }).waitFor();
  };

  it('finds a word that exists only inside an encrypted message once the keys are unlocked on the mail page, merged with the server’s results', async () => {
    await openMailPage();
    const list = tab.getByRole('listbox', { name: 'Messages' });
    await expect.poll(() => list.getByRole('img', { name: 'Encrypted' }).count()).toBe(2);
    expect(await list.textContent()).not.toContain(SECRET_SUBJECT);

    await search(SECRET_WORD);
    await expect.poll(() => resultsNote().textContent()).toContain('2 encrypted messages not searched: unlock your keys to include them.');
    expect(await results().count()).toBe(0);

    await unlockFromSearch();
    await expect.poll(() => results().allTextContents(), { timeout: 60_000 }).toEqual([expect.stringContaining(SECRET_SUBJECT)]);
    await expect.poll(() => resultsNote().textContent()).toContain('Encrypted mail was searched too (2 messages indexed on this device)');
    expect(await results().first().getByRole('img', { name: 'Encrypted' }).count()).toBe(1);

    // the plain message from the server, the encrypted one from the index
    await search(SHARED_WORD);
    await expect
      .poll(async () => (await results().allTextContents()).sort())
      .toEqual([expect.stringContaining(SECRET_SUBJECT), expect.stringContaining('Plain note')]);
    // the server finds both encrypted messages by their outer From, so does the index: each shows once
    await search('Bob');
    await expect
      .poll(() => results().allTextContents())
      .toEqual([expect.stringContaining('Doomed memo'), expect.stringContaining(SECRET_SUBJECT)]);

    // the message list shows the decrypted subjects, marked as encrypted
    await tab.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => list.getByRole('option', { name: new RegExp(`Encrypted.*${SECRET_SUBJECT}`) }).count()).toBe(1);
    expect(await list.getByRole('option', { name: /Encrypted.*Doomed memo/ }).count()).toBe(1);
    expect(problems).toEqual([]);
  });

  it('keeps the index in IndexedDB sealed: no word, subject or address of the encrypted mail in it', async () => {
    await expect.poll(async () => (await readIndexedDb(tab)).bytes, { timeout: 20_000 }).toBeGreaterThan(1000);
    const stored = await readIndexedDb(tab);
    expect(stored.names).toContain('svcmail-local-index');
    for (const word of [SECRET_WORD, DOOMED_WORD, SHARED_WORD, 'aurochs', 'migration', 'doomed', 'bob sender', 'bob@example.net'])
      expect(stored.text, word).not.toContain(word);
  });

  it('reads the sealed index back at the next unlock instead of decrypting again, and forgets a deleted message', async () => {
    const version = (await app.call(alice, 'GET', `/api/mail/messages/${doomedUid}`)).body.version;
    expect((await app.call(alice, 'DELETE', `/api/mail/messages/${doomedUid}`, { version })).status).toBe(204);
    const raws: string[] = [];
    tab.on('request', (r) => /\/raw$/.test(r.url()) && raws.push(r.url()));
    await lockKeys(tab, app.api); // else the keys stay unlocked for the session's next page
    await openMailPage();
    await search(DOOMED_WORD);
    await expect.poll(() => resultsNote().textContent()).toContain('1 encrypted message not searched');
    await unlockFromSearch();
    await expect.poll(() => resultsNote().textContent(), { timeout: 60_000 }).toContain('(1 message indexed on this device)');
    expect(await results().count()).toBe(0);
    await search(SECRET_WORD);
    await expect.poll(() => results().allTextContents()).toEqual([expect.stringContaining(SECRET_SUBJECT)]);
    expect(raws).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('sign-out deletes the index: IndexedDB holds nothing and the next session has to unlock again', async () => {
    await tab.getByRole('button', { name: 'Sign out' }).click();
    await tab.waitForURL(`${signin.url}/auth/signin**`);
    const check = await context.newPage();
    await check.goto(`${app.api}/.well-known/svc/server-info`);
    const left = await readIndexedDb(check);
    expect(left).toEqual({ names: [], text: '', bytes: 0 });
    await check.close();

    await signedIn();
    await openMailPage();
    await expect.poll(() => tab.getByRole('listbox', { name: 'Messages' }).getByRole('img', { name: 'Encrypted' }).count()).toBe(1);
    expect(await tab.getByRole('listbox', { name: 'Messages' }).textContent()).not.toContain(SECRET_SUBJECT);
    await search(SECRET_WORD);
    await expect.poll(() => resultsNote().textContent()).toContain('1 encrypted message not searched: unlock your keys to include them.');
    expect(await results().count()).toBe(0);
  });

  it('indexes new encrypted mail while the keys stay unlocked, and drops the index from memory when they lock (idle)', async () => {
    const list = tab.getByRole('listbox', { name: 'Messages' });
    // lock after 30 s without a key press or click (the setting is in minutes)
    await tab.evaluate(() =>
      (globalThis as unknown as { localStorage: { setItem(k: string, v: string): void } }).localStorage.setItem(
        'svcmail:lock-after-minutes',
        '0.5',
      ),
    );
    await openMailPage();
    await search(SECRET_WORD);
    await unlockFromSearch();
    await expect.poll(() => results().allTextContents(), { timeout: 60_000 }).toEqual([expect.stringContaining(SECRET_SUBJECT)]);
    await tab.getByRole('button', { name: 'Clear' }).click();
    await app.handOff('alice@example.test', await encryptedMail(cert, 'Fresh narwhal report', 'Arrived while unlocked.', 3));
    // the live list shows it, and the index learns its subject by itself
    await expect.poll(() => list.getByRole('option', { name: /Encrypted.*Fresh narwhal report/ }).count(), { timeout: 30_000 }).toBe(1);
    expect(await list.getByRole('option', { name: new RegExp(`Encrypted.*${SECRET_SUBJECT}`) }).count()).toBe(1);
    // no activity: the keys lock, the decrypted subjects leave the page
    await expect.poll(() => list.textContent(), { timeout: 45_000 }).not.toContain(SECRET_SUBJECT);
    expect(await list.textContent()).not.toContain('Fresh narwhal report');
    expect(await list.getByRole('option', { name: /Encrypted.*\[\.\.\.\]/ }).count()).toBe(2);
    await search(SECRET_WORD);
    await expect.poll(() => resultsNote().textContent()).toContain('2 encrypted messages not searched: unlock your keys to include them.');
    expect(await results().count()).toBe(0);
  });
});
