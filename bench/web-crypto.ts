// npm run bench -- web-crypto: end-to-end encryption in the web app, in headless Chromium (Debian's),
// against the appliance as it runs, each figure the median of BENCH_RUNS (5) and beside it a native
// peer measured in the same run on the same input:
// - unlock with the encryption password at the default Argon2id parameters (64 MiB, t=3, p=1): the
//   page's own measure (Web Worker Argon2id in WASM + opening the sealed keys); peer: @node-rs/argon2
//   (Rust, native) deriving the same key;
// - a 1 MB attachment signed and encrypted in compose (the page's measure of the send's seal), and
//   decrypted and verified in the reading pane (the page's measure of opening it); peer: openssl cms
//   -sign | -encrypt and -decrypt | -verify of the same message entity.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashRaw } from '@node-rs/argon2';
import type { Browser, Page } from 'playwright-core';
import { createVault, DEFAULT_ARGON2, fromB64, VaultClient, type VaultView } from '../lib/keys/client/index.js';
import { CA_CERT_FILE, CA_KEY_FILE, ensureLocalCa, localCaDir } from '../lib/pki/index.js';
import { launchChromium, lockKeys, signedInContext } from '../test/helpers/browser.js';
import { startRunningAppliance, type RunningAppliance } from '../test/helpers/running-appliance.js';
import { median, round } from './_stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const SIZE = 1024 * 1024;
const PASSWORD = 'bench encryption password';

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

/** Keys for a user made as the browser makes them (default Argon2id), enrolled through the API; answers the vault. */
async function enrol(app: RunningAppliance, token: string, box: string, address: string) {
  const made = await createVault(box, address, PASSWORD);
  const vault = await new VaultClient(app.api, box, { token }).enroll(made.body);
  return { vault, made };
}

/** The page's User Timing measures named `name` (svcmail:… in web/src/crypto), in ms. */
const measures = (tab: Page, name: string): Promise<number[]> =>
  tab.evaluate((n) => performance.getEntriesByName(n, 'measure').map((e) => e.duration), name);

async function setUp(app: RunningAppliance, work: string) {
  await ensureLocalCa(localCaDir(app.config));
  const admin = await app.token('root', { roles: ['admin'], elevated: true });
  await app.call(admin, 'POST', '/api/mail/domains', { name: 'example.test', verified: true });
  const boxes: Record<string, string> = {};
  for (const u of ['alice', 'bob'])
    boxes[u] = (await app.call(admin, 'POST', '/api/mail/mailboxes', { address: `${u}@example.test`, owners: [u], name: u })).body.uid;
  const [alice, bob] = await Promise.all([app.token('alice'), app.token('bob')]);
  const a = await enrol(app, alice, boxes.alice!, 'alice@example.test');
  const b = await enrol(app, bob, boxes.bob!, 'bob@example.test');
  // Alice's signing certificate, issued by the service's CA (a manual enrolment completed by hand).
  const req = await app.call(alice, 'POST', `/api/mail/mailboxes/${boxes.alice}/keyvault/signing-enrollment`, {
    expectedMasterKeyGeneration: a.vault.masterKeyGeneration,
    csr: a.made.keys.signingCsr,
  });
  writeFileSync(join(work, 'req.pem'), a.made.keys.signingCsr);
  writeFileSync(
    join(work, 'ext.cnf'),
    'subjectAltName=email:alice@example.test\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=emailProtection\n',
  );
  const ca = localCaDir(app.config);
  const cert = execFileSync(
    'openssl',
    ['x509', '-req', '-in', 'req.pem', '-CA', join(ca, CA_CERT_FILE), '-CAkey', join(ca, CA_KEY_FILE), '-days', '2', '-extfile', 'ext.cnf'],
    { cwd: work },
  ).toString();
  await app.call(admin, 'POST', `/api/admin/signing-enrollments/${req.body.uid}/complete`, { certificate: cert });
  return { alice, bob, boxes, a, b, signingCert: cert };
}

/** Unlocks on /settings RUNS times (locked again after each); the page's measure of each. */
async function unlockTimes(browser: Browser, app: RunningAppliance, token: string): Promise<number[]> {
  const tab = await (await signedInContext(browser, app.api, token)).newPage();
  const out: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await tab.goto(`${app.api}/settings#encryption`);
    const form = tab.getByRole('form', { name: 'Unlock the encryption keys of alice@example.test' });
    await form
      .getByLabel('Encryption password')
      .fill(PASSWORD)
      .catch(async (e) => {
        throw new Error(`${e}: ${await tab.locator('main').innerText()}`);
      });
    await form.getByRole('button', { name: 'Unlock' }).click();
    await tab.getByText(/^Unlocked in this/).waitFor({ timeout: 60_000 });
    out.push(...(await measures(tab, 'svcmail:unlock-password')));
    await tab.evaluate(() => performance.clearMeasures('svcmail:unlock-password')); // the page may stay the same document
    await lockKeys(tab, app.api);
  }
  await tab.context().close();
  return out;
}

/** Sends RUNS messages with a 1 MB attachment from alice to bob, sealed in the page; the page's measure of each send's seal. */
async function sealTimes(browser: Browser, app: RunningAppliance, token: string, file: Buffer): Promise<number[]> {
  const tab = await (await signedInContext(browser, app.api, token)).newPage();
  tab.on('console', (m) => process.stderr.write(`console ${m.type()}: ${m.text()}\n`));
  tab.on('pageerror', (e) => process.stderr.write(`pageerror: ${e.message}\n`));
  tab.on('response', (r) => r.status() >= 300 && process.stderr.write(`${r.status()} ${r.url()}\n`));
  await tab.goto(`${app.api}/`);
  for (let i = 0; i < RUNS; i++) {
    await tab.getByRole('button', { name: 'New message' }).click();
    const compose = tab.getByRole('form', { name: 'New message' });
    if (i === 0) {
      const unlock = compose.getByRole('form', { name: 'Unlock the encryption keys of alice@example.test' });
      await unlock.getByLabel('Encryption password').fill(PASSWORD);
      await unlock.getByRole('button', { name: 'Unlock' }).click();
      await unlock.waitFor({ state: 'detached', timeout: 60_000 });
    }
    process.stderr.write(`bench: message ${i + 1} of ${RUNS}\n`);
    await compose
      .getByRole('combobox', { name: 'To' })
      .fill('bob@example.test')
      .catch(async (e) => {
        throw new Error(`${e}: ${await tab.locator('main').innerText()}`);
      });
    await compose.getByLabel('Subject').fill(`bench ${i}`);
    await compose.getByRole('textbox', { name: 'Message' }).fill('One megabyte attached.');
    await compose.locator('input[type=file]').setInputFiles({ name: `data-${i}.bin`, mimeType: 'application/octet-stream', buffer: file });
    await compose
      .getByText('This message will be encrypted and signed.')
      .waitFor({ timeout: 30_000 })
      .catch(async (e) => {
        throw new Error(`${e}: ${await tab.locator('main').innerText()}`);
      });
    await compose.getByRole('button', { name: 'Send', exact: true }).click();
    await compose.waitFor({ state: 'detached', timeout: 60_000 }); // sealed and handed to the send (the last status is still shown until then)
    await tab.getByRole('status').filter({ hasText: /^Sent/ }).waitFor({ timeout: 60_000 });
  }
  const out = await measures(tab, 'svcmail:seal-send');
  await tab.context().close();
  return out;
}

/** Bob opens each of them in the reading pane; the page's measure of each decrypt-and-verify. */
async function openTimes(browser: Browser, app: RunningAppliance, token: string): Promise<number[]> {
  const tab = await (await signedInContext(browser, app.api, token)).newPage();
  const rows = tab.getByRole('listbox', { name: 'Messages' }).getByRole('option');
  const unlock = tab.getByRole('form', { name: 'Unlock the encryption keys of bob@example.test' });
  const unlocked = async () => {
    await rows.nth(RUNS - 1).waitFor({ timeout: 60_000 });
    await rows.first().click();
    await unlock.getByLabel('Encryption password').fill(PASSWORD);
    await unlock.getByRole('button', { name: 'Unlock' }).click();
    await tab.getByRole('status').filter({ hasText: 'the signature is valid' }).waitFor({ timeout: 60_000 });
  };
  // First the local search index catches up with them (it decrypts every message once, four at a
  // time); a new page then reads that index back and the reading pane's opens are measured alone.
  await tab.goto(`${app.api}/`);
  await unlocked();
  await tab.getByText(/encrypted mail/).waitFor({ state: 'detached', timeout: 120_000 });
  await lockKeys(tab, app.api);
  await tab.goto(`${app.api}/`);
  await unlocked();
  for (let i = 1; i < RUNS; i++) {
    await rows.nth(i).click();
    await tab.getByRole('heading', { name: `bench ${RUNS - 1 - i}` }).waitFor({ timeout: 60_000 });
    await tab.getByRole('status').filter({ hasText: 'the signature is valid' }).waitFor({ timeout: 60_000 });
  }
  const out = await measures(tab, 'svcmail:open');
  await tab.context().close();
  return out;
}

/** The native peers on the same input: openssl cms sign+encrypt and decrypt+verify, and Rust Argon2id. */
async function peers(work: string, s: Awaited<ReturnType<typeof setUp>>, file: Buffer, vault: VaultView) {
  writeFileSync(
    join(work, 'entity.eml'),
    `Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n${file.toString('base64').replace(/.{76}/g, '$&\r\n')}\r\n`,
  );
  writeFileSync(join(work, 'alice.crt'), s.signingCert);
  writeFileSync(join(work, 'alice.key'), pemKey(s.a.made.keys.signingPkcs8));
  writeFileSync(join(work, 'bob.crt'), s.b.vault.encryptionCertificate!);
  writeFileSync(join(work, 'bob.key'), pemKey(s.b.made.keys.encryptionPkcs8));
  writeFileSync(join(work, 'ca.crt'), (vault.caCertificates ?? []).join('\n'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: work, maxBuffer: 64 << 20 });
  const seal: number[] = [];
  const open: number[] = [];
  const argon: number[] = [];
  const kdf = vault.wraps.find((w) => w.method === 'password') as { kdf: { salt: string } } | undefined;
  for (let i = 0; i < RUNS; i++) {
    let t0 = process.hrtime.bigint();
    run(['cms', '-sign', '-in', 'entity.eml', '-signer', 'alice.crt', '-inkey', 'alice.key', '-nodetach', '-out', 'signed.eml']);
    run(['cms', '-encrypt', '-in', 'signed.eml', '-aes256', '-recip', 'bob.crt', '-out', 'enc.eml']);
    seal.push(ms(t0));
    t0 = process.hrtime.bigint();
    run(['cms', '-decrypt', '-in', 'enc.eml', '-inkey', 'bob.key', '-recip', 'bob.crt', '-out', 'dec.eml']);
    run(['cms', '-verify', '-in', 'dec.eml', '-CAfile', 'ca.crt', '-purpose', 'any', '-out', 'verified.eml']);
    open.push(ms(t0));
    t0 = process.hrtime.bigint();
    await hashRaw(PASSWORD, {
      salt: Buffer.from(fromB64(kdf!.kdf.salt)),
      memoryCost: DEFAULT_ARGON2.memoryKiB,
      timeCost: DEFAULT_ARGON2.iterations,
      parallelism: DEFAULT_ARGON2.parallelism,
      outputLen: 32,
    });
    argon.push(ms(t0));
  }
  return { seal, open, argon };
}

const pemKey = (der: Uint8Array) =>
  `-----BEGIN PRIVATE KEY-----\n${Buffer.from(der).toString('base64').replace(/.{64}/g, '$&\n')}\n-----END PRIVATE KEY-----\n`;

const figure = (page: number[], peer: number[]) => ({
  page_ms: round(median(page), 0),
  peer_ms: round(median(peer), 0),
  ratio: round(median(page) / median(peer), 1),
  runs: page.length,
});

export default async function bench(): Promise<Record<string, unknown>> {
  const work = mkdtempSync(join(tmpdir(), 'svcmail-bench-crypto-'));
  const [app, browser] = await Promise.all([startRunningAppliance({ 'log:level': 'error' }), launchChromium()]);
  try {
    process.stderr.write('bench: setting up two users with keys…\n');
    const s = await setUp(app, work);
    const file = randomBytes(SIZE);
    process.stderr.write('bench: unlocking in the browser…\n');
    const unlock = await unlockTimes(browser, app, s.alice);
    process.stderr.write('bench: sending 1 MB encrypted and signed…\n');
    const seal = await sealTimes(browser, app, s.alice, file);
    process.stderr.write('bench: opening them…\n');
    const open = await openTimes(browser, app, s.bob);
    const native = await peers(work, s, file, s.a.vault);
    return {
      argon2: DEFAULT_ARGON2,
      unlock_password: { ...figure(unlock, native.argon), peer: '@node-rs/argon2 (native), key derivation only' },
      encrypt_sign_1mb: { ...figure(seal, native.seal), peer: 'openssl cms -sign | -encrypt' },
      decrypt_verify_1mb: { ...figure(open, native.open), peer: 'openssl cms -decrypt | -verify' },
    };
  } finally {
    await browser.close();
    app.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
