// A scripted mobile-sync device: builds WBXML requests with the product's codec, posts them as a
// phone does (query form, version header, X-MS-PolicyKey) and decodes the answers. Every body it
// sends or receives is kept, so a test can have tools nobody here wrote decode all of them.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { decode, encode, ns, type WbxmlElement } from '../../../../lib/plugins/eas/wbxml/index.js';
import { kid, textOf } from '../../../../lib/plugins/eas/protocol.js';
import { programPath } from '../../../helpers/peers.js';
import { validateWire } from './_schemas.js';

export { el, ns, toXml } from '../../../../lib/plugins/eas/wbxml/index.js';
export { kid, kids, textOf } from '../../../../lib/plugins/eas/protocol.js';

/** Element builders of the code pages the tests use most. */
export const pv = ns('Provision');
export const fh = ns('FolderHierarchy');
export const as = ns('AirSync');
export const pg = ns('Ping');
export const asb = ns('AirSyncBase');
export const mv = ns('Move');
export const io = ns('ItemOperations');
export const ge = ns('GetItemEstimate');
export const cm = ns('ComposeMail');

export interface Exchange {
  status: number;
  headers: Headers;
  /** The decoded answer, null when it had no WBXML body. */
  tree: WbxmlElement | null;
  text: string;
}

export class Device {
  policyKey = 0;
  /** Every WBXML body sent and received, in order. */
  readonly wire: Buffer[] = [];

  constructor(
    readonly base: string,
    private readonly auth: string,
    readonly id = 'DEV0001',
    readonly type = 'iPhone',
    readonly version = '14.1',
    readonly path = '/Microsoft-Server-ActiveSync',
  ) {}

  async send(cmd: string, tree: WbxmlElement | null, opts: { headers?: Record<string, string>; raw?: Buffer } = {}): Promise<Exchange> {
    const body = opts.raw ?? (tree ? encode(tree) : undefined);
    if (body && !opts.raw) this.wire.push(body);
    const q = new URLSearchParams({ Cmd: cmd, User: 'alice', DeviceId: this.id, DeviceType: this.type });
    const res = await fetch(`${this.base}${this.path}?${q}`, {
      method: 'POST',
      headers: {
        authorization: this.auth,
        'ms-asprotocolversion': this.version,
        'user-agent': `${this.type}/1.0`,
        ...(this.policyKey ? { 'x-ms-policykey': String(this.policyKey) } : {}),
        ...(body ? { 'content-type': 'application/vnd.ms-sync.wbxml' } : {}),
        ...opts.headers,
      },
      body: body ? new Uint8Array(body) : undefined,
    });
    const buf = Buffer.from(await res.arrayBuffer());
    const wbxml = res.headers.get('content-type')?.startsWith('application/vnd.ms-sync.wbxml') && buf.length > 0;
    if (wbxml) this.wire.push(buf);
    return { status: res.status, headers: res.headers, tree: wbxml ? decode(buf) : null, text: wbxml ? '' : buf.toString() };
  }

  /** Provision in two steps, as a device does; keeps the final policy key. */
  async provision(pv: (tag: string, c?: WbxmlElement[] | string | number) => WbxmlElement): Promise<void> {
    const ask = (key?: number) =>
      pv('Provision', [
        pv('Policies', [
          pv('Policy', [pv('PolicyType', 'MS-EAS-Provisioning-WBXML'), ...(key ? [pv('PolicyKey', key), pv('Status', '1')] : [])]),
        ]),
      ]);
    const first = await this.send('Provision', ask());
    expect(first.status).toBe(200);
    const temp = Number(textOf(kid(kid(first.tree!, 'Policies'), 'Policy'), 'PolicyKey'));
    expect(temp).toBeGreaterThan(0);
    const second = await this.send('Provision', ask(temp));
    const final = Number(textOf(kid(kid(second.tree!, 'Policies'), 'Policy'), 'PolicyKey'));
    expect(final).toBeGreaterThan(0);
    expect(final).not.toBe(temp);
    this.policyKey = final;
  }
}

/**
 * Tags a tool reports as unknown in one decoded document, and documents the MS-ASCMD schemas do not
 * accept (_schemas.ts: answers whole, requests in their parts); none is the goal.
 */
export function crossDecode(bodies: Buffer[]): { libwbxml: string[]; horde: string[]; schema: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-eas-wire-'));
  const out = { libwbxml: [] as string[], horde: [] as string[], schema: validateWire(bodies) };
  try {
    const tool = programPath('wbxml2xml');
    const php = programPath('php-horde-activesync');
    const files = bodies.map((b, i) => {
      const file = join(dir, `${i}.wbxml`);
      writeFileSync(file, b);
      return file;
    });
    if (tool)
      files.forEach((file, i) => {
        const xml = `${file}.xml`;
        const r = spawnSync(tool, ['-l', 'ACTIVESYNC', '-o', xml, file], { encoding: 'utf8' });
        if (r.status !== 0) out.libwbxml.push(`#${i}: wbxml2xml failed: ${r.stderr}`);
        else if (/<unknown/i.test(readFileSync(xml, 'utf8'))) out.libwbxml.push(`#${i}: ${readFileSync(xml, 'utf8').slice(0, 400)}`);
      });
    if (php && files.length) {
      // One PHP start for every document: each one's tokens follow a line "=== <file>".
      const r = spawnSync('/usr/bin/php', [join(import.meta.dirname, '../../../fixtures/eas/horde-decode.php'), ...files], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      });
      if (r.status !== 0) out.horde.push(`horde failed: ${r.stderr}`);
      // A single document comes without the marker line.
      const parts = files.length === 1 ? [`${files[0]}\n${r.stdout}`] : r.stdout.split(/^=== /m).slice(1);
      for (const part of parts)
        if (/^S!? \?$/m.test(part)) out.horde.push(`#${files.indexOf(part.slice(0, part.indexOf('\n')))}: ${part.slice(0, 400)}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}
