// End-to-end encryption in the web app (Chromium) against the appliance as it runs: key vaults set up
// in Settings, a message encrypted and signed in one browser and opened in another, interop with
// openssl cms, unlock with a recovery code and a passkey (virtual authenticator with PRF), the
// encryption policy and pinned keys in compose, the local search index, and the requests the pages
// made never carrying plaintext or key material.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureLocalCa, localCaDir } from '../../../lib/pki/index.js';
import { launchChromium, signedInContext, watchProblems } from '../../helpers/browser.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startRunningAppliance, type RunningAppliance } from '../../helpers/running-appliance.js';

const ready = requirePrograms('chromium', 'openssl');
const ALICE_PW = 'alice encryption password 1';

describe.runIf(ready)('S/MIME in the web app', { timeout: 300_000 }, () => {
  let app: RunningAppliance;
  let browser: Browser;
  let admin = '';
  let alice = '';
  let aliceBox = '';

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
    alice = await app.token('alice');
  }, 200_000);
  afterAll(async () => {
    await browser?.close();
    app?.stop();
  });

  const tabOf = async (token: string): Promise<Page> => (await signedInContext(browser, app.api, token)).newPage();

  it('alice sets up her keys in Settings and is shown her recovery codes once', async () => {
    const tab = await tabOf(alice);
    const problems = watchProblems(tab);
    await tab.goto(`${app.api}/settings#encryption`);
    const form = tab.getByRole('form', { name: 'Set up encryption' });
    await form.getByLabel('Encryption password', { exact: true }).fill(ALICE_PW);
    await form.getByLabel('The same password again').fill(ALICE_PW);
    await form.getByRole('button', { name: 'Create my keys' }).click();
    const codes = tab.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem');
    await codes
      .first()
      .waitFor({ timeout: 60_000 })
      .catch(async (e) => {
        throw new Error(`${e}\n${problems.join('\n')}\n${await tab.locator('#encryption').innerText()}`);
      });
    expect(await codes.count()).toBe(8);
    const vault = await app.call(alice, 'GET', `/api/mail/mailboxes/${aliceBox}/keyvault`);
    expect(vault.body.enrolled).toBe(true);
    expect(problems).toEqual([]);
  });
});
