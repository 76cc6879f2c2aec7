// The DNS checklist against a real (tiny) DNS server: present, missing and wrong.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkItems, checklistFor, parseNameserver, txtChunks } from '../../../lib/dns/index.js';
import { startDnsServer, type Zone } from '../../helpers/dns-server.js';
import { setupArgs, svcmail } from './helpers.js';

const txt = (value: string) => ({ type: 'TXT' as const, data: txtChunks(value) });

describe('svcmail dns --check', () => {
  let dir: string;
  let conf: string;
  let dkimTxt: string;
  let serverId: string;
  let dns: Awaited<ReturnType<typeof startDnsServer>>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-dns-'));
    conf = join(dir, 'svcmail.conf');
    const r = await svcmail([...setupArgs(dir, 'http://127.0.0.1:9'), '--json']);
    expect(r.code, r.stderr).toBe(0);
    dkimTxt = r.json().checklist.find((i: { purpose: string }) => i.purpose === 'dkim').value;
    serverId = JSON.parse(readFileSync(conf, 'utf8'))['mail:server_id'];
    const zone: Zone = {
      'example.test': [
        { type: 'MX', data: { preference: 10, exchange: 'mail.example.test' } },
        txt('v=spf1 a -all'),
        txt('google-site-verification=abc'),
      ],
      'mail._domainkey.example.test': [txt(dkimTxt)], // long: split into 255-byte strings, joined by the checker
      '_svc.example.test': [txt(`v=SVCv1; id=someone-else; host=mail.example.test;`)],
      'autodiscover.example.test': [{ type: 'CNAME', data: 'mail.example.test' }],
      // _dmarc and _autodiscover._tcp are not published at all
    };
    dns = await startDnsServer(zone);
  }, 60_000);
  afterAll(async () => {
    await dns?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a new domain is not verified: setup says what mail still needs, and --check without its MX keeps it so, naming the MX record', async () => {
    const again = await svcmail(setupArgs(dir, 'http://127.0.0.1:9'));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/Still needed for mail to flow: example\.test is not verified, so inbound mail is refused/);
    expect(again.stdout).toMatch(/svcmail dns --check: it verifies each domain whose MX points here/);
    const mx = dns.zone['example.test'];
    dns.zone['example.test'] = mx.filter((r) => r.type !== 'MX');
    try {
      const r = await svcmail(['--config', conf, '--json', 'dns', '--check', '--resolver', dns.address]);
      expect(r.code).toBe(1);
      const [verdict] = r.json().domains;
      expect(verdict).toMatchObject({ domain: 'example.test', verified: false, changed: false });
      expect(verdict.missing.find((m: { purpose: string }) => m.purpose === 'mx')).toMatchObject({
        status: 'missing',
        fix: 'add: example.test. 3600 IN MX 10 mail.example.test.',
      });
      const human = await svcmail(['--config', conf, 'dns', '--check', '--resolver', dns.address]);
      expect(human.stdout).toMatch(
        /example\.test: NOT verified, inbound mail is refused until its MX record points here \(add: example\.test\. 3600 IN MX 10 mail\.example\.test\.\)/,
      );
    } finally {
      dns.zone['example.test'] = mx;
    }
  });

  it('reports each record present, missing or wrong with the exact record to add', async () => {
    const r = await svcmail(['--config', conf, '--json', 'dns', '--check', '--resolver', dns.address]);
    expect(r.code).toBe(1);
    const status = Object.fromEntries(r.json().items.map((i: { purpose: string; status: string }) => [i.purpose, i.status]));
    expect(status).toEqual({
      mx: 'present',
      spf: 'wrong',
      dkim: 'present',
      dmarc: 'missing',
      svc: 'wrong',
      'autodiscover-cname': 'present',
      'autodiscover-srv': 'missing',
    });
    const items = r.json().items as Array<{ purpose: string; fix?: string; found: string[] }>;
    expect(items.find((i) => i.purpose === 'svc')!.fix).toBe(
      `replace "v=SVCv1; id=someone-else; host=mail.example.test;" with: _svc.example.test. 3600 IN TXT "v=SVCv1; id=${serverId}; host=mail.example.test;"`,
    );
    expect(items.find((i) => i.purpose === 'dmarc')!.fix).toBe(
      'add: _dmarc.example.test. 3600 IN TXT "v=DMARC1; p=quarantine; rua=mailto:postmaster@example.test"',
    );
    expect(items.find((i) => i.purpose === 'autodiscover-srv')!.fix).toBe(
      'add: _autodiscover._tcp.example.test. 3600 IN SRV 0 0 443 mail.example.test.',
    );
    expect(items.find((i) => i.purpose === 'spf')!.found).toEqual(['v=spf1 a -all']); // the unrelated apex TXT is not counted

    // the MX points here: the domain is verified now (its other records do not hold that back), once
    expect(r.json().domains).toEqual([expect.objectContaining({ domain: 'example.test', verified: true, changed: true })]);
    const human = await svcmail(['--config', conf, 'dns', '--check', '--resolver', dns.address]);
    expect(human.stdout).toMatch(/dns: 3 present, 2 missing, 2 wrong, 0 not checked/);
    expect(human.stdout).toMatch(/example\.test: verified$/m);
    const setup = await svcmail(setupArgs(dir, 'http://127.0.0.1:9'));
    expect(setup.stdout).not.toMatch(/Still needed for mail to flow/);
  });

  it('is all present (exit 0) once the zone is fixed', async () => {
    const want = checklistFor({
      domain: 'example.test',
      host: 'mail.example.test',
      serverId,
      dkimSelector: 'mail',
      dkimPublicKey: dkimTxt.replace(/^.*p=/, ''),
    });
    dns.zone['example.test'] = [
      { type: 'MX', data: { preference: 10, exchange: 'mail.example.test' } },
      txt('v=spf1 mx include:_spf.example.net ~all'),
    ];
    dns.zone['_svc.example.test'] = [txt(want.find((i) => i.purpose === 'svc')!.value)];
    dns.zone['_dmarc.example.test'] = [txt('v=DMARC1; p=reject')];
    dns.zone['_autodiscover._tcp.example.test'] = [
      { type: 'SRV', data: { priority: 0, weight: 0, port: 443, target: 'mail.example.test' } },
    ];
    const checked = await checkItems(want, [parseNameserver(dns.address)]);
    expect(checked.map((i) => [i.purpose, i.status])).toEqual(want.map((i) => [i.purpose, 'present']));
    const r = await svcmail(['--config', conf, '--json', 'dns', '--check', '--resolver', dns.address]);
    expect(r.code, r.stdout).toBe(0);
  });

  it('reports an unreachable resolver as not checked rather than missing', async () => {
    const want = checklistFor({ domain: 'example.test', host: 'mail.example.test', serverId, dkimSelector: 'mail', dkimPublicKey: null });
    const checked = await checkItems(want.slice(0, 1), [parseNameserver('127.0.0.1:9')], 300);
    expect(checked[0].status).toBe('error');
  });
});
