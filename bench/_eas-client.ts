// A scripted mobile-sync device for the eas benchmark: WBXML requests built with the product's codec,
// posted as a phone posts them (plain query form, MS-ASProtocolVersion, X-MS-PolicyKey) over a
// node:http keep-alive agent the caller shares between devices (one socket per request in flight,
// so parked Pings each hold one). Unlike test/integration/plugins/eas/_client.ts it asserts
// nothing and keeps no wire copy: it only measures.
import { Agent, request } from 'node:http';
import { kid, kids, textOf } from '../lib/plugins/eas/protocol.js';
import { decode, encode, ns, type WbxmlElement } from '../lib/plugins/eas/wbxml/index.js';

export const pv = ns('Provision');
export const fh = ns('FolderHierarchy');
export const as = ns('AirSync');
export const asb = ns('AirSyncBase');
export const pg = ns('Ping');

/** A keep-alive agent without a socket cap: 2 000 parked Pings need 2 000 sockets. */
export const deviceAgent = () => new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 4096 });

export interface Answer {
  status: number;
  /** The WBXML answer's size on the wire (0 without a body). */
  bytes: number;
  /** When the last byte of the answer arrived (performance.now()). */
  receivedAt: number;
  tree: WbxmlElement | null;
}

export interface SyncOptions {
  window: number;
  bodyType: number;
  truncation: number;
}

export class BenchDevice {
  policyKey = 0;

  constructor(
    readonly base: URL,
    private readonly token: string,
    readonly id: string,
    private readonly agent: Agent,
  ) {}

  /** One command; the answer decoded (null tree for an empty or non-WBXML body). */
  send(cmd: string, tree: WbxmlElement | null): Promise<Answer> {
    const body = tree ? encode(tree) : null;
    const q = new URLSearchParams({ Cmd: cmd, User: 'bench', DeviceId: this.id, DeviceType: 'iPhone' });
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: this.base.hostname,
          port: this.base.port,
          method: 'POST',
          path: `/Microsoft-Server-ActiveSync?${q}`,
          agent: this.agent,
          headers: {
            authorization: `Bearer ${this.token}`,
            'ms-asprotocolversion': '14.1',
            'user-agent': 'Apple-iPhone/1.0',
            ...(this.policyKey ? { 'x-ms-policykey': String(this.policyKey) } : {}),
            ...(body ? { 'content-type': 'application/vnd.ms-sync.wbxml', 'content-length': body.length } : { 'content-length': 0 }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const receivedAt = performance.now();
            const buf = Buffer.concat(chunks);
            const wbxml = String(res.headers['content-type'] ?? '').startsWith('application/vnd.ms-sync.wbxml') && buf.length > 0;
            if (!wbxml && res.statusCode !== 200)
              return reject(new Error(`${cmd}: HTTP ${res.statusCode} ${buf.toString().slice(0, 300)}`));
            resolve({ status: res.statusCode ?? 0, bytes: buf.length, receivedAt, tree: wbxml ? decode(buf) : null });
          });
        },
      );
      req.on('error', reject);
      req.end(body ?? undefined);
    });
  }

  /** Provision in two steps, as a device does; keeps the final policy key. */
  async provision(): Promise<void> {
    const ask = (key?: number) =>
      pv('Provision', [
        pv('Policies', [
          pv('Policy', [pv('PolicyType', 'MS-EAS-Provisioning-WBXML'), ...(key ? [pv('PolicyKey', key), pv('Status', '1')] : [])]),
        ]),
      ]);
    const keyOf = (a: Answer) => Number(textOf(kid(kid(a.tree ?? undefined, 'Policies'), 'Policy'), 'PolicyKey'));
    const temp = keyOf(await this.send('Provision', ask()));
    if (!(temp > 0)) throw new Error(`${this.id}: Provision gave no temporary policy key`);
    this.policyKey = keyOf(await this.send('Provision', ask(temp)));
    if (!(this.policyKey > 0)) throw new Error(`${this.id}: Provision gave no final policy key`);
  }

  /** FolderSync from 0: the Inbox's ServerId. */
  async inbox(): Promise<string> {
    const r = await this.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    const add = kids(kid(r.tree ?? undefined, 'Changes'), 'Add').find((a) => textOf(a, 'Type') === '2');
    const id = textOf(add, 'ServerId');
    if (!id) throw new Error(`${this.id}: FolderSync status ${textOf(r.tree ?? undefined, 'Status')}, no Inbox`);
    return id;
  }

  /** One Sync round of one collection: the answer, its Add count, its next key and MoreAvailable. */
  async sync(collectionId: string, key: string | number, o: SyncOptions): Promise<Answer & { adds: number; key: string; more: boolean }> {
    const a = await this.send(
      'Sync',
      as('Sync', [
        as('Collections', [
          as('Collection', [
            as('SyncKey', key),
            as('CollectionId', collectionId),
            as('DeletesAsMoves', '1'),
            as('GetChanges', '1'),
            as('WindowSize', o.window),
            as('Options', [as('FilterType', '0'), asb('BodyPreference', [asb('Type', o.bodyType), asb('TruncationSize', o.truncation)])]),
          ]),
        ]),
      ]),
    );
    const c = kid(kid(a.tree ?? undefined, 'Collections'), 'Collection');
    const status = textOf(c, 'Status');
    if (status !== '1') throw new Error(`${this.id}: Sync key ${key} answered status ${status ?? textOf(a.tree ?? undefined, 'Status')}`);
    const adds = kids(kid(c, 'Commands'), 'Add').length;
    return { ...a, adds, key: textOf(c, 'SyncKey') ?? '', more: kid(c, 'MoreAvailable') !== undefined };
  }

  /** A Ping on the folders with this heartbeat (seconds): resolves when the server answers. */
  ping(folders: string[], heartbeat: number): Promise<Answer> {
    return this.send(
      'Ping',
      pg('Ping', [
        pg('HeartbeatInterval', heartbeat),
        pg(
          'Folders',
          folders.map((id) => pg('Folder', [pg('Id', id), pg('Class', 'Email')])),
        ),
      ]),
    );
  }
}

/** A Ping answer's Status ('2': changes, '1': heartbeat expired). */
export const pingStatus = (a: Answer) => textOf(a.tree ?? undefined, 'Status') ?? `http ${a.status}`;
