import { isApiError, type ApiError, type PluginResponse, type Row } from '../api.js';
import { statusOnly, type EasCommand, type EasRequest } from './command.js';
import {
  buildForward,
  buildReply,
  derivedMessageId,
  isNeedsActionReply,
  isSealed,
  parseMime,
  recipientsOf,
  threading,
  withHeaders,
  type Original,
} from './compose-mime.js';
import { empty, kid, textOf, wbxml } from './protocol.js';
import type { WbxmlElement } from './wbxml/index.js';

// SendMail, SmartReply and SmartForward (MS-ASCMD 2.2.1.17, 2.2.1.20, 2.2.1.19): a device hands over
// a whole MIME message (ComposeMail code page). All three go through the product's common send path
// (CallerApi.sendRaw: filed as a draft, then sent with the caller's From and Sender checks, the
// encryption policy, the outbound scan, local delivery and relay; the sent message is filed in Sent
// Items). Success is HTTP 200 with an empty body; a failure is <Root><Status>n</Status></Root>.
//
// SmartReply and SmartForward name the original (Source: ItemId, or LongId; FolderId and
// InstanceId are not needed to find a message). Without ReplaceMime the server completes the
// message: a reply quotes the original below the device's text, a forward attaches the original as
// message/rfc822; with ReplaceMime (or S/MIME, whose bytes may not change) the device's message goes
// as it is. Replies carry In-Reply-To and References, forwards References.
//
// A repeated ClientId is not sent again (Status 118): a send still running for the same device and
// ClientId is waited for; one this process accepted within the window is remembered; and the
// message's Message-ID (the device's, or one derived from the ClientId) is looked for among the
// newest messages of Sent Items and the Outbox, which catches a repeat served by another copy or
// after a restart. Nothing new is stored for it.

/** ComposeMail Status values (MS-ASCMD 2.2.2, the common status codes) these commands answer. */
export const COMPOSE = {
  invalidContent: 101,
  invalidXml: 103,
  invalidMime: 107,
  serverError: 110,
  serverErrorRetryLater: 111,
  sendQuotaExceeded: 115,
  recipientUnresolved: 116,
  previouslySent: 118,
  noRecipient: 119,
  submissionFailed: 120,
  accessDenied: 130,
  itemNotFound: 150,
} as const;

type Kind = 'SendMail' | 'SmartReply' | 'SmartForward';

interface ComposeRequest {
  clientId: string;
  saveInSent: boolean;
  replaceMime: boolean;
  mime: Buffer;
  /** SmartReply and SmartForward: the original's id (ItemId, else LongId). */
  sourceId: string | null;
}

/** How long a ClientId this process accepted, or a Message-ID found in Sent Items, counts as sent. */
const WINDOW_MS = 60 * 60_000;
/** The newest messages of Sent Items and the Outbox looked through for a repeated Message-ID. */
const SENT_LOOKBACK = 50;
const RECENT_MAX = 10_000;

/** Sends this process accepted: device key → when. */
const recent = new Map<string, number>();
/** Sends still running: device key → whether it was accepted. */
const running = new Map<string, Promise<boolean>>();

function remember(key: string): void {
  const now = Date.now();
  // Oldest first (a Map keeps insertion order): drop those past the window, and beyond the bound.
  for (const [k, at] of recent) {
    if (recent.size < RECENT_MAX && now - at <= WINDOW_MS) break;
    recent.delete(k);
  }
  recent.delete(key);
  recent.set(key, now);
}
const acceptedRecently = (key: string) => Date.now() - (recent.get(key) ?? -Infinity) <= WINDOW_MS;

const mimeOf = (el: WbxmlElement | undefined): Buffer => el?.opaque ?? Buffer.from(el?.text ?? '', 'utf8');

/** The request's fields, or the Status that refuses a request not shaped as MS-ASCMD says. */
function readRequest(kind: Kind, body: WbxmlElement | null): ComposeRequest | number {
  if (!body) return COMPOSE.invalidContent;
  if (body.page !== 'ComposeMail' || body.tag !== kind) return COMPOSE.invalidXml;
  const clientId = textOf(body, 'ClientId') ?? '';
  const mime = mimeOf(kid(body, 'Mime'));
  if (!clientId || clientId.length > 40 || !mime.length) return COMPOSE.invalidXml;
  let sourceId: string | null = null;
  if (kind !== 'SendMail') {
    const source = kid(body, 'Source');
    sourceId = textOf(source, 'ItemId') || textOf(source, 'LongId') || null;
    if (!sourceId) return COMPOSE.invalidXml;
  }
  return {
    clientId,
    saveInSent: Boolean(kid(body, 'SaveInSentItems')),
    replaceMime: Boolean(kid(body, 'ReplaceMime')),
    mime,
    sourceId,
  };
}

/** The Status of a refusal from the send path (its ApiError code). */
function statusOf(e: ApiError): number {
  switch (e.code) {
    case 'api-102':
      return COMPOSE.accessDenied; // a From or Sender the caller may not use
    case 'api-106':
      return e.details?.some((d) => d.path === 'to') ? COMPOSE.noRecipient : COMPOSE.invalidMime;
    case 'api-109':
      return COMPOSE.sendQuotaExceeded;
    case 'api-113':
      return COMPOSE.serverErrorRetryLater;
    case 'api-115':
      return e.details?.length && e.details.every((d) => d.message === 'no such recipient here')
        ? COMPOSE.recipientUnresolved
        : COMPOSE.submissionFailed;
    case 'api-114': // refused by the outbound scan
    case 'api-120':
    case 'api-121': // refused by the encryption policy
      return COMPOSE.submissionFailed;
    default:
      return COMPOSE.serverError;
  }
}

/** The mailbox's folders of these roles. */
async function foldersByRole(r: EasRequest, roles: string[]): Promise<Row[]> {
  return (await r.caller.folders(r.mailboxUid)).filter((f) => roles.includes(String(f.role)));
}

/** Whether a message with this Message-ID was filed in Sent Items or the Outbox within the window. */
async function alreadySent(r: EasRequest, messageId: string): Promise<boolean> {
  for (const f of await foldersByRole(r, ['sent', 'outbox'])) {
    const rows = await r.caller.messages(String(f.uid), { sort: '-createdAt', limit: SENT_LOOKBACK });
    if (rows.some((m) => m.messageId === messageId && Date.now() - new Date(m.createdAt as string).getTime() <= WINDOW_MS)) return true;
  }
  return false;
}

/** A refused send leaves its draft in Drafts; the device keeps the message in its own Outbox, so the draft goes. */
async function dropDraft(r: EasRequest, messageId: string): Promise<void> {
  try {
    for (const f of await foldersByRole(r, ['drafts'])) {
      const rows = await r.caller.messages(String(f.uid), { sort: '-createdAt', limit: 20 });
      for (const m of rows) if (m.messageId === messageId && m.draft) await r.caller.deleteMessage(String(m.uid));
    }
  } catch (e) {
    r.host.log.warn({ err: e, messageId }, 'mobile sync: the draft of a refused send could not be removed');
  }
}

/** The original a SmartReply or SmartForward names, in the device's mailbox; null when there is none. */
async function originalRow(r: EasRequest, id: string): Promise<Row | null> {
  try {
    const row = await r.caller.message(id);
    return row.mailboxUid === r.mailboxUid ? row : null;
  } catch (e) {
    if (isApiError(e)) return null;
    throw e;
  }
}

/** What is handed to the send path: the device's message as it is (plus missing header fields), or completed with the original. */
async function messageFor(
  r: EasRequest,
  kind: Kind,
  req: ComposeRequest,
  parsed: NonNullable<Awaited<ReturnType<typeof parseMime>>>,
  row: Row | null,
  ids: { messageId: string; from?: string },
): Promise<Buffer> {
  if (kind === 'SendMail' || req.replaceMime || isSealed(parsed) || !row) {
    const thread = row ? threading(row, kind === 'SmartReply') : {};
    return withHeaders(req.mime, {
      From: parsed.from ? undefined : ids.from,
      'Message-ID': parsed.messageId ? undefined : ids.messageId,
      'In-Reply-To': parsed.inReplyTo ? undefined : thread.inReplyTo,
      References: parsed.references ? undefined : thread.references,
    });
  }
  const uid = String(row.uid);
  if (kind === 'SmartReply') {
    const body = await r.caller.messageBody(uid);
    const orig: Original = { row, text: body.encrypted ? null : body.text, html: body.html, raw: null };
    return buildReply(parsed, ids.messageId, orig, ids.from);
  }
  return buildForward(parsed, ids.messageId, { row, text: null, html: null, raw: await r.caller.rawMessage(uid) }, ids.from);
}

/** One send: null when it was accepted (or deliberately dropped), else the Status that refuses it. */
async function submit(r: EasRequest, kind: Kind, req: ComposeRequest, key: string): Promise<number | null> {
  const log = { device: r.device.deviceId, clientId: req.clientId, command: kind };
  const parsed = await parseMime(req.mime);
  if (!parsed) return COMPOSE.invalidMime;
  if (isNeedsActionReply(parsed)) {
    r.host.log.info(log, 'mobile sync: an invitation reply still NEEDS-ACTION was acknowledged and not sent');
    return null;
  }
  if (!recipientsOf(parsed).length) return COMPOSE.noRecipient;
  const given = parsed.from?.value[0]?.address;
  const from = given ? undefined : String((await r.caller.mailbox()).address);
  const domain = (given ?? from ?? '').split('@').pop() ?? '';
  const messageId = parsed.messageId ?? derivedMessageId(key, domain);
  if (await alreadySent(r, messageId)) return COMPOSE.previouslySent;
  const row = req.sourceId ? await originalRow(r, req.sourceId) : null;
  if (kind !== 'SendMail' && !row) return COMPOSE.itemNotFound;
  const mime = await messageFor(r, kind, req, parsed, row, { messageId, from });
  try {
    // Synchronous: the device learns whether the message went. The send path always files the sent
    // message in Sent Items, so SaveInSentItems is honoured; its absence is not (sendRaw has no such option).
    await r.caller.sendRaw(r.mailboxUid, mime, { background: false });
  } catch (e) {
    if (!isApiError(e)) throw e;
    await dropDraft(r, messageId);
    const status = statusOf(e);
    r.host.log.info({ ...log, code: e.code, status, reason: e.message }, 'mobile sync: a send was refused');
    return status;
  }
  if (row) await markOriginal(r, kind, row, log);
  if (!req.saveInSent) r.host.log.debug(log, 'mobile sync: SaveInSentItems absent; the send path filed a copy in Sent Items anyway');
  return null;
}

/** The original shows it was answered or forwarded, as after a reply from the web app (a failure only logged: the mail went). */
async function markOriginal(r: EasRequest, kind: Kind, row: Row, log: Record<string, unknown>): Promise<void> {
  try {
    await r.caller.setFlags(String(row.uid), kind === 'SmartReply' ? { answered: true } : { forwarded: true });
  } catch (e) {
    r.host.log.warn({ ...log, err: e }, 'mobile sync: the original could not be marked');
  }
}

async function handle(kind: Kind, cmd: EasCommand, r: EasRequest): Promise<PluginResponse> {
  const answer = (status: number) => wbxml(statusOnly(cmd, status));
  const req = readRequest(kind, r.body);
  if (typeof req === 'number') return answer(req);
  const key = `${r.device.uid}\u0000${req.clientId}`; // the device record: its owner and DeviceId
  // The same ClientId while its send runs: wait for it; accepted, this one is the repeat.
  for (let earlier = running.get(key); earlier;) {
    if (await earlier) return answer(COMPOSE.previouslySent);
    const next = running.get(key);
    earlier = next === earlier ? undefined : next;
  }
  if (acceptedRecently(key)) return answer(COMPOSE.previouslySent);
  const run = submit(r, kind, req, key);
  const accepted = run.then(
    (s) => s === null,
    () => false,
  );
  running.set(key, accepted);
  try {
    const status = await run;
    if (status !== null) return answer(status);
    remember(key);
    return empty(200);
  } finally {
    if (running.get(key) === accepted) running.delete(key);
  }
}

const command = (kind: Kind): EasCommand => {
  const cmd: EasCommand = { root: { page: 'ComposeMail', tag: kind }, handle: (r) => handle(kind, cmd, r) };
  return cmd;
};

export const sendMail = command('SendMail');
export const smartReply = command('SmartReply');
export const smartForward = command('SmartForward');
