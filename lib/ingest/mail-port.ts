import type { ParsedMail } from 'mailparser';
import * as mail from '../mail/index.js';
import type { Deps } from '../context/index.js';
import { prepareMail, type PreparedMail } from './prepare.js';

/** What delivery needs to know about a filed copy. */
export interface FiledCopy {
  messageUid: string;
  folderUid?: string;
}

export interface FileRequest {
  mailboxUid: string;
  folderRole: 'inbox' | 'junk';
  /** A filter rule's move target (wins over folderRole). */
  folderUid?: string;
  labels?: string[];
  raw: Buffer;
  /** The message as prepared once (MailPort.prepare): each copy takes its fields and search document from it. */
  prepared: PreparedMail;
  flags?: string[];
  focused?: boolean;
  /** The verified sender's Disposition-Notification-To (read receipts are owed to it when read). */
  receiptTo?: string | null;
  /** The sender was verified (the message's senderVerified). */
  senderVerified?: boolean;
  idempotencyKey: string;
  rawRef: string;
  /** The copy's full-text document goes to this instead of into the filing commit (lib/mail FileRequest.deferText). */
  deferText?: (messageUid: string, document: string) => void;
  /** A later commit makes the filing durable; events wait for it (lib/mail FileRequest.durableLater). */
  durableLater?: { publish(send: () => void): void };
}

/**
 * The inbound pipeline's view of the mail data layer (lib/mail): raw storage, the one parse per
 * message, filing (counts, quota, events; idempotent per key) and filter rules.
 */
/** A content-addressed raw message: stored once, referenced by every ingest entry. */
export interface StoredRawRef {
  ref: string;
  size: number;
}

export interface MailPort {
  storeRaw(raw: Buffer): Promise<StoredRawRef>;
  loadRaw(ref: string): Promise<Buffer>;
  /** The one parse per message, its HTML sanitized, its stored fields and search document. */
  prepare(raw: Buffer): Promise<PreparedMail>;
  /** Filter rules of the mailbox applied to a non-junk message (size: the raw message's): where it goes and what else happens. */
  /** `rules`: the mailbox's enabled rules in position order when the caller read them already (RoundReads). */
  applyRules(
    mailboxUid: string,
    parsed: ParsedMail,
    size: number,
    rules?: mail.FilterRule[],
  ): Promise<{ folderUid?: string; flags?: string[]; labels?: string[]; discard?: boolean; forwardTo?: string[]; copyTo?: string[] }>;
  file(req: FileRequest): Promise<FiledCopy>;
}

const FLAG_NAMES = new Set(['seen', 'flagged', 'answered', 'forwarded', 'draft']);

/** What the filter rules look at in a parsed message (exported for the fuzz target, test/fuzz/targets/rules.ts). */
export function ruleInputOf(parsed: ParsedMail, size: number): mail.RuleInput {
  const m = mail.fromParsedMail(parsed, Buffer.alloc(0));
  const headers = new Map<string, string[]>();
  for (const line of parsed.headerLines) {
    const list = headers.get(line.key) ?? [];
    list.push(line.line.slice(line.line.indexOf(':') + 1).trim());
    headers.set(line.key, list);
  }
  // Size conditions compare the raw message size (what the sender's client and the MTA count).
  return {
    from: m.fields.fromAddress,
    to: [...m.fields.to, ...m.fields.cc].map((a) => a.address),
    subject: m.fields.subject,
    headers,
    size,
    hasAttachment: m.fields.hasAttachments,
  };
}

export function mailPort(deps: Deps): MailPort {
  return {
    async storeRaw(raw) {
      const r = await mail.storeRaw(deps, raw);
      return { ref: r.blobId, size: r.size };
    },
    loadRaw: (ref) => mail.loadRaw(deps, ref),
    // The one parse per message; filing takes each copy's fields and document from it without parsing again.
    prepare: prepareMail,
    async applyRules(mailboxUid, parsed, size, read) {
      // Spec: delivery rule 3 — the mailbox's filter rules, in position order, on mail that is not junk.
      const rules =
        read ??
        (await deps.store
          .repo<mail.FilterRule>(mail.FilterRuleModel)
          .list({ filter: { mailboxUid, enabled: true }, sort: [{ field: 'position', dir: 'asc' }], limit: 1000 }));
      if (!rules.length) return {};
      const r = mail.evaluateRules(rules, ruleInputOf(parsed, size));
      // A folder deleted since the rule was written is skipped (the copy stays in the Inbox), not a failed delivery.
      const targets = [...new Set([r.folderUid, ...r.copyTo].filter((f): f is string => Boolean(f)))];
      const known = new Set(
        (targets.length
          ? await deps.store
              .repo<mail.Folder>(mail.FolderModel)
              .list({ filter: { uid: { $in: targets }, mailboxUid }, limit: targets.length })
          : []
        ).map((f) => f.uid),
      );
      return {
        folderUid: r.folderUid && known.has(r.folderUid) ? r.folderUid : undefined,
        flags: r.seen ? ['seen'] : [],
        labels: r.labels,
        discard: r.delete,
        forwardTo: r.forwardTo,
        copyTo: r.copyTo.filter((f) => known.has(f)),
      };
    },
    async file(req) {
      const flags = Object.fromEntries((req.flags ?? []).filter((f) => FLAG_NAMES.has(f)).map((f) => [f, true]));
      const filed = await mail.fileMessage(deps, {
        mailboxUid: req.mailboxUid,
        folderRole: req.folderRole,
        folderUid: req.folderUid,
        labels: req.labels,
        raw: { blobId: req.rawRef, sha256: req.rawRef, size: req.raw.length },
        parsed: req.prepared.message,
        document: req.prepared.document,
        flags,
        focused: req.focused === undefined ? null : req.focused ? 'focused' : 'other',
        receiptTo: req.receiptTo ?? null,
        senderVerified: req.senderVerified ?? false,
        idempotencyKey: req.idempotencyKey,
        deferText: req.deferText,
        durableLater: req.durableLater,
      });
      return { messageUid: filed.uid, folderUid: filed.folderUid };
    },
  };
}

/** Whether this build files messages (lib/mail); always true. bench/ingest.ts asks before it measures filing. */
export const filingAvailable = (): boolean => true;
