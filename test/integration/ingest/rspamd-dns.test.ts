// Nothing leaves this machine, rspamd included: the rspamd every test and benchmark starts
// (test/helpers/scanners.ts) asks DNS only of a resolver on loopback. rspamadm shows the merged
// configuration naming that resolver alone, and the resolver sees the questions a scan asks
// (reputation lists for the client address, SPF for the sender's domain).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePrograms } from '../../helpers/peers.js';
import { rspamdConfigDump, startRspamd, type Rspamd } from '../../helpers/scanners.js';

const present = requirePrograms('rspamd'); // rspamadm comes in the same package

describe.runIf(present)('the test rspamd resolves through a loopback resolver only', () => {
  let rspamd: Rspamd;
  beforeAll(async () => {
    rspamd = await startRspamd();
  }, 150_000);
  afterAll(async () => rspamd?.stop());

  it('its merged configuration names the loopback resolver and no other, and no remote fuzzy server', () => {
    const options = rspamdConfigDump(rspamd.dir, 'options') as { dns: { nameserver: string[] } };
    expect(options.dns.nameserver).toEqual([rspamd.resolver.address]);
    expect(rspamd.resolver.address).toMatch(/^127\.0\.0\.1:\d+$/);
    const fuzzy = rspamdConfigDump(rspamd.dir, 'fuzzy_check') as { rule: Record<string, { servers: string }> };
    for (const rule of Object.values(fuzzy.rule)) expect(rule.servers).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('the questions a scan asks reach the loopback resolver', async () => {
    const before = rspamd.resolver.queries.length;
    const message = [
      'From: someone@sender-domain.example',
      'To: alice@example.test',
      'Subject: a scan that looks things up',
      'Message-ID: <dns-1@sender-domain.example>',
      '',
      'See http://link-domain.example/page',
      '',
    ].join('\r\n');
    const r = await fetch(`${rspamd.url}/checkv2`, {
      method: 'POST',
      body: message,
      headers: { IP: '203.0.113.7', Helo: 'mx.sender-domain.example', From: 'someone@sender-domain.example', Rcpt: 'alice@example.test' },
    });
    expect(r.status).toBe(200);
    expect(((await r.json()) as { action: string }).action).toBeTruthy();
    const asked = rspamd.resolver.queries.slice(before);
    // SPF for the envelope sender's domain, and a reputation list for the client address (reversed octets).
    expect(asked).toContain('TXT sender-domain.example');
    expect(asked.some((q) => q.includes('7.113.0.203.'))).toBe(true);
  });
});
