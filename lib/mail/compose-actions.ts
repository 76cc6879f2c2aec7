// What the compose routes do: create and replace drafts from JSON, add an uploaded attachment, and
// store client-made S/MIME drafts. Service functions: the routes in compose-routes.ts call them.
import { ApiError, invalid } from '../errors/index.js';
import type { ResourceService } from '../resources/index.js';
import type { Ctx } from '../context/index.js';
import {
  attachmentsOf,
  buildDraft,
  fileDraft,
  mailboxFor,
  parseEncryptedDraft,
  type ComposeDecls,
  type DraftAttachment,
  type DraftBody,
} from './compose.js';
import { loadRaw, type MessageRecord } from './filing.js';
import { parseMessage } from './messages.js';

/** A body that is not JSON, as it came: its Content-Type (without parameters) and bytes. */
export interface UploadedBody {
  contentType: string;
  content: Buffer;
}

/** A draft as the compose routes answer it: the record as it was filed. */
export type DraftAnswer = Record<string, unknown>;

/** The content types an encrypted draft comes as: the whole client-made message. */
const ENCRYPTED_TYPES = ['application/pkcs7-mime', 'application/x-pkcs7-mime', 'message/rfc822'];

/** What compose needs of the resource service: the messages and folders declarations, ACL-checked loads. */
function declsOf(service: ResourceService): ComposeDecls {
  return {
    messages: service.registry.get('messages'),
    folders: service.registry.get('folders'),
    load: (ctx, decl, uid, right) => service.load(ctx, decl, uid, right),
  };
}

/** The draft being replaced: writable and deletable by the caller, a draft, at the version the client saw. */
async function existingDraft(ctx: Ctx, d: ComposeDecls, uid: string, version: number | undefined): Promise<MessageRecord> {
  const old = (await d.load(ctx, d.messages, uid, 'write')) as unknown as MessageRecord;
  await d.load(ctx, d.messages, uid, 'delete');
  if (!old.draft) throw new ApiError('api-120', 'only drafts are changed through compose');
  if (version !== undefined && version !== old.version)
    throw new ApiError('api-108', `Version conflict: the draft is at version ${old.version}`);
  return old;
}

/** The old draft's attachments the new one keeps: all, or those whose ids `keep` names. */
async function keptAttachments(ctx: Ctx, old: MessageRecord, keep: string[] | undefined): Promise<DraftAttachment[]> {
  if (old.smime === 'encrypted' || !old.hasAttachments || keep?.length === 0) return [];
  return attachmentsOf(await parseMessage(await loadRaw(ctx, old.blobId)), keep && new Set(keep));
}

/** Compose actions for one resource service (the registry's messages and folders, access checked through it). */
export function composeActions(service: ResourceService) {
  const decls = () => declsOf(service);
  const existing = (ctx: Ctx, uid: string, version: number | undefined) => existingDraft(ctx, decls(), uid, version);
  /** A draft as every message route answers it: hidden fields dropped, safe attachment names added. */
  const answer = (m: MessageRecord): DraftAnswer => service.view(decls().messages, m as never);

  /** Files the new source, then removes the old draft exactly like DELETE (counters, usage, blob, events). */
  async function replace(ctx: Ctx, old: MessageRecord, raw: Buffer, encrypted: boolean, sendAt = old.sendAt): Promise<DraftAnswer> {
    const fresh = await fileDraft(ctx, old.mailboxUid, raw, encrypted ? await parseEncryptedDraft(raw) : undefined, sendAt);
    await service.remove(ctx, decls().messages, old.uid, old.version);
    return answer(fresh);
  }

  return {
    /** A new draft in the mailbox's Drafts, built from the request. */
    async create(ctx: Ctx, body: DraftBody): Promise<DraftAnswer> {
      for (const field of ['version', 'keepAttachments'] as const)
        if (body[field] !== undefined)
          throw invalid(`${field} is for PUT /api/mail/compose/:id`, [{ path: field, message: 'not on create' }]);
      const box = await mailboxFor(ctx, decls(), body.mailboxUid);
      return answer(await fileDraft(ctx, box.uid, await buildDraft(ctx, decls(), body, box, []), undefined, body.sendAt ?? null));
    },

    /**
     * Replaces a draft by one built from the request; its uploaded attachments and (unless given) its
     * sendAt are kept, and so are its In-Reply-To and References unless the request quotes anew
     * (replyTo or forwardOf): a reply edited and saved again stays in its conversation.
     */
    async update(ctx: Ctx, uid: string, body: DraftBody): Promise<DraftAnswer> {
      const old = await existing(ctx, uid, body.version);
      if (old.mailboxUid !== body.mailboxUid)
        throw invalid('a draft stays in its mailbox', [{ path: 'mailboxUid', message: 'differs from the draft' }]);
      const box = await mailboxFor(ctx, decls(), old.mailboxUid);
      const built = await buildDraft(ctx, decls(), body, box, await keptAttachments(ctx, old, body.keepAttachments));
      const raw = body.replyTo || body.forwardOf ? built : withThreading(built, old.inReplyTo, old.references);
      return replace(ctx, old, raw, false, body.sendAt === undefined ? old.sendAt : body.sendAt);
    },

    /** Replaces a draft by one that carries the uploaded file too (the rebuilt source keeps the draft's threading headers). */
    async attach(ctx: Ctx, uid: string, filename: string, upload: UploadedBody, version: number | undefined): Promise<DraftAnswer> {
      if (!upload.content.length) throw invalid('the attachment is the request body', [{ path: 'body', message: 'empty' }]);
      const old = await existing(ctx, uid, version);
      if (old.smime === 'encrypted') throw new ApiError('api-120', 'an encrypted draft is replaced whole by the client');
      const box = await mailboxFor(ctx, decls(), old.mailboxUid);
      const parsed = await parseMessage(await loadRaw(ctx, old.blobId));
      const m = parsed.fields;
      const body: DraftBody = {
        mailboxUid: old.mailboxUid,
        from: m.from?.address,
        to: m.to,
        cc: m.cc,
        bcc: m.bcc,
        subject: m.subject,
        text: parsed.text,
        html: parsed.html,
        signature: false,
        forwardAs: 'inline',
      };
      const file = { filename, contentType: upload.contentType || 'application/octet-stream', content: upload.content };
      const raw = await buildDraft(ctx, decls(), body, box, [...attachmentsOf(parsed), file]);
      return replace(ctx, old, withThreading(raw, m.inReplyTo, m.references), false);
    },

    /** Stores a client-made S/MIME draft in the mailbox's Drafts: only its header is read. */
    async createEncrypted(ctx: Ctx, mailboxUid: string, upload: UploadedBody): Promise<DraftAnswer> {
      const raw = encryptedSource(upload);
      const box = await mailboxFor(ctx, decls(), mailboxUid);
      return answer(await fileDraft(ctx, box.uid, raw, await parseEncryptedDraft(raw)));
    },

    /** Replaces a draft by a client-made S/MIME message. */
    async updateEncrypted(ctx: Ctx, uid: string, upload: UploadedBody, version: number | undefined): Promise<DraftAnswer> {
      const raw = encryptedSource(upload);
      const old = await existing(ctx, uid, version);
      await mailboxFor(ctx, decls(), old.mailboxUid);
      return replace(ctx, old, raw, true);
    },
  };
}

export type ComposeActions = ReturnType<typeof composeActions>;

/** The whole client-made message of an encrypted draft (415 api-117 for another content type, 400 when empty). */
function encryptedSource(upload: UploadedBody): Buffer {
  if (!ENCRYPTED_TYPES.includes(upload.contentType.toLowerCase())) {
    throw new ApiError(
      'api-117',
      'an encrypted draft is sent as application/pkcs7-mime (or message/rfc822): the whole client-made message',
    );
  }
  if (!upload.content.length) throw invalid('the message is the request body', [{ path: 'body', message: 'empty' }]);
  return upload.content;
}

/** Adds In-Reply-To/References to a composed source when the draft had them. */
function withThreading(raw: Buffer, inReplyTo: string | null, references: string[]): Buffer {
  const lines: string[] = [];
  if (inReplyTo) lines.push(`In-Reply-To: ${inReplyTo}`);
  if (references.length) lines.push(`References: ${references.join(' ')}`);
  return lines.length ? Buffer.concat([Buffer.from(lines.map((l) => `${l}\r\n`).join('')), raw]) : raw;
}
