import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Config } from '../config/index.js';
import { fromLine, loadRaw, mboxrdQuote, MessageModel, type Message } from '../mail/index.js';
import type { Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { MatterModel, type Matter, type MatterExport } from './models.js';

// A matter export (Spec: /api/escrow/ matter-export-requests) is a folder under
// <mail:escrow:export_dir or data_dir/escrow-exports>/<uid>/ with two files:
//   messages.mbox  — mboxrd: each custodian message within the matter's date range, raw as stored
//                    (S/MIME stays ciphertext: the holders' client decrypts with the released keys);
//                    lines starting with ">*From " get one more ">".
//   manifest.json  — the metadata of each message (never content), where its bytes are in the mbox
//                    and the SHA-256 of the raw message, so the holders can check what they got.

export const EXPORT_PARTS = { mbox: 'messages.mbox', manifest: 'manifest.json' } as const;
export type ExportPart = keyof typeof EXPORT_PARTS;

const UID = /^[A-Za-z0-9-]{1,100}$/;

export function exportDir(config: Config, uid: string): string {
  if (!UID.test(uid)) throw new Error('bad export uid');
  return join(resolve(config.get('mail:escrow:export_dir') || join(config.get('data_dir'), 'escrow-exports')), uid);
}

export const exportFile = (config: Config, uid: string, part: ExportPart): string => join(exportDir(config, uid), EXPORT_PARTS[part]);

/** Deletes an export's files (expiry, a closed matter). */
export async function removeExportFiles(config: Config, uid: string): Promise<void> {
  await rm(exportDir(config, uid), { recursive: true, force: true });
}

export interface ManifestMessage {
  uid: string;
  mailboxUid: string;
  folderUid: string;
  messageId: string | null;
  date: string;
  subject: string;
  fromAddress: string;
  to: string[];
  cc: string[];
  smime: Message['smime'];
  /** Bytes of the raw message and their SHA-256 (hex), before quoting. */
  size: number;
  sha256: string;
  /** Where the quoted message is in messages.mbox (after its "From " line). */
  offset: number;
  length: number;
}

export interface BuiltExport {
  messageCount: number;
  mboxSize: number;
  mboxSha256: string;
  manifestSha256: string;
}

const PAGE = 500;

/** Builds the export's two files in a temporary folder and renames it into place. */
export async function buildExportArchive(deps: Pick<Deps, 'config' | 'store'>, exp: Row<MatterExport>): Promise<BuiltExport> {
  const matter = await deps.store.repo<Matter>(MatterModel).get(exp.matterUid);
  if (!matter) throw new Error('the matter is gone');
  const dir = exportDir(deps.config, exp.uid);
  const tmp = `${dir}.tmp-${randomBytes(6).toString('hex')}`;
  await mkdir(tmp, { recursive: true, mode: 0o750 });
  try {
    const mboxHash = createHash('sha256');
    const messages: ManifestMessage[] = [];
    const fh = await open(join(tmp, EXPORT_PARTS.mbox), 'w', 0o640);
    let offset = 0;
    const write = async (b: Buffer) => {
      await fh.write(b);
      mboxHash.update(b);
      offset += b.length;
    };
    try {
      const repo = deps.store.repo<Message>(MessageModel);
      const filter = { mailboxUid: { $in: matter.custodians }, date: { $gte: new Date(matter.from), $lte: new Date(matter.to) } };
      for (let page = 0; ; page++) {
        const rows = await repo.list({
          filter,
          sort: [
            { field: 'date', dir: 'asc' },
            { field: 'uid', dir: 'asc' },
          ],
          limit: PAGE,
          offset: page * PAGE,
        });
        for (const m of rows) {
          const raw = await loadRaw(deps, m.blobId);
          const quoted = mboxrdQuote(raw);
          await write(fromLine('MAILER-DAEMON', new Date(m.date)));
          const at = offset;
          await write(quoted);
          await write(Buffer.from(quoted.at(-1) === 0x0a ? '\n' : '\n\n'));
          messages.push({
            uid: m.uid,
            mailboxUid: m.mailboxUid,
            folderUid: m.folderUid,
            messageId: m.messageId,
            date: new Date(m.date).toISOString(),
            subject: m.subject,
            fromAddress: m.fromAddress,
            to: m.to.map((a) => a.address),
            cc: m.cc.map((a) => a.address),
            smime: m.smime,
            size: raw.length,
            sha256: createHash('sha256').update(raw).digest('hex'),
            offset: at,
            length: quoted.length,
          });
        }
        if (rows.length < PAGE) break;
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    const built = { messageCount: messages.length, mboxSize: offset, mboxSha256: mboxHash.digest('hex') };
    const manifest = Buffer.from(
      JSON.stringify(
        {
          format: 'svcmail-escrow-export-v1',
          exportUid: exp.uid,
          matterUid: matter.uid,
          accessRequestUid: exp.accessRequestUid,
          scopeUid: exp.scopeUid,
          custodians: matter.custodians,
          from: new Date(matter.from).toISOString(),
          to: new Date(matter.to).toISOString(),
          builtAt: new Date().toISOString(),
          mbox: { file: EXPORT_PARTS.mbox, quoting: 'mboxrd', size: built.mboxSize, sha256: built.mboxSha256 },
          messages,
        },
        null,
        1,
      ),
    );
    const mf = await open(join(tmp, EXPORT_PARTS.manifest), 'w', 0o640);
    try {
      await mf.writeFile(manifest);
      await mf.sync();
    } finally {
      await mf.close();
    }
    await rm(dir, { recursive: true, force: true }); // a half-finished earlier attempt
    await rename(tmp, dir);
    return { ...built, manifestSha256: createHash('sha256').update(manifest).digest('hex') };
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    throw e;
  }
}
