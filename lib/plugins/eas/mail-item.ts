import type { CallerApi, MessageBody, Row } from '../api.js';
import { kid, kids, textOf } from './protocol.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// A message as a mobile device receives it (MS-ASEMAIL): the envelope fields, read and flag, the
// attachments, and the body in the first format the device prefers (MS-ASAIRS BodyPreference:
// plain text, HTML — sanitized as the web app shows it — or the whole MIME source), cut at its
// TruncationSize. Encrypted mail has no server-side text: the device gets it as MIME to decrypt.

const em = ns('Email');
const asb = ns('AirSyncBase');

export const BODY = { text: 1, html: 2, rtf: 3, mime: 4 } as const;

export interface BodyPreference {
  type: number;
  truncationSize: number | null;
  allOrNone: boolean;
}

/** The BodyPreference elements of a collection's Options (or of an ItemOperations Fetch). */
export function bodyPreferences(options: WbxmlElement | undefined): BodyPreference[] {
  return kids(options, 'BodyPreference').map((p) => {
    const size = textOf(p, 'TruncationSize');
    return {
      type: Number(textOf(p, 'Type') ?? BODY.text),
      truncationSize: size && /^\d+$/.test(size) ? Number(size) : null,
      allOrNone: textOf(p, 'AllOrNone') === '1',
    };
  });
}

/** MIMESupport 2 (all messages as MIME) or 1 (S/MIME ones): what the device asked. */
export const mimeSupportOf = (options: WbxmlElement | undefined) => Number(textOf(options, 'MIMESupport') ?? 0);

interface Address {
  name?: string | null;
  address: string;
}

const addressList = (list: unknown): string =>
  (Array.isArray(list) ? (list as Address[]) : list ? [list as Address] : [])
    .map((a) => (a.name ? `"${a.name.replace(/"/g, '')}" <${a.address}>` : a.address))
    .join(', ');
const displayList = (list: unknown): string => (Array.isArray(list) ? (list as Address[]) : []).map((a) => a.name || a.address).join('; ');

/** EAS dates: ISO 8601 in UTC with milliseconds. */
export const easDate = (d: unknown) => new Date(String(d)).toISOString();

/** Cuts UTF-8 text to at most `limit` bytes without splitting a character. */
export function cut(text: string, limit: number | null): { data: string; truncated: boolean } {
  const bytes = Buffer.from(text, 'utf8');
  if (limit === null || bytes.length <= limit) return { data: text, truncated: false };
  let end = limit;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return { data: bytes.subarray(0, end).toString('utf8'), truncated: true };
}

/** The first HTML or plain-text preference: how a message not sent as MIME is written. */
const textualPreference = (prefs: BodyPreference[]): BodyPreference =>
  prefs.find((p) => p.type === BODY.html || p.type === BODY.text) ?? { type: BODY.text, truncationSize: null, allOrNone: false };

/** The preference a message is written with: MIME when asked for and allowed (always for encrypted mail), else the first textual one. */
function preferenceFor(msg: Row, prefs: BodyPreference[], mimeSupport: number): BodyPreference {
  const encrypted = msg.smime === 'encrypted';
  const wantsMime = prefs.some((p) => p.type === BODY.mime) && (mimeSupport === 2 || (mimeSupport === 1 && msg.smime !== null));
  return ((wantsMime || encrypted) && prefs.find((p) => p.type === BODY.mime)) || textualPreference(prefs);
}

/**
 * The text and HTML bodies of a page of messages of one folder, read in one batch: only the format
 * the device prefers is made. Messages sent as MIME (and encrypted ones) are read whole when written.
 */
export async function pageBodies(
  caller: CallerApi,
  folderUid: string,
  rows: Row[],
  prefs: BodyPreference[],
  mimeSupport: number,
): Promise<Map<string, MessageBody>> {
  const uids = rows
    .filter((r) => r.smime !== 'encrypted' && preferenceFor(r, prefs, mimeSupport).type !== BODY.mime)
    .map((r) => String(r.uid));
  return caller.messageBodies(folderUid, uids, textualPreference(prefs).type === BODY.html ? 'html' : 'text');
}

/**
 * The AirSyncBase Body element in the first preferred format this message has (`known`: its body
 * read beforehand), and the message's own body type (NativeBodyType; null when it was not read).
 */
export async function bodyElement(
  caller: CallerApi,
  msg: Row,
  prefs: BodyPreference[],
  mimeSupport: number,
  known?: MessageBody,
): Promise<{ element: WbxmlElement; native: number | null }> {
  const pref = preferenceFor(msg, prefs, mimeSupport);
  let type: number = pref.type;
  let full: string;
  let native: number | null = null;
  if (type === BODY.mime || msg.smime === 'encrypted') {
    type = BODY.mime;
    full = (await caller.rawMessage(String(msg.uid))).toString('utf8');
  } else {
    const b = known ?? (await caller.messageBody(String(msg.uid)));
    native = b.html !== null ? BODY.html : BODY.text;
    if (type === BODY.html && b.html !== null) full = b.html;
    else {
      type = BODY.text;
      full = b.text ?? '';
    }
  }
  const size = Buffer.byteLength(full, 'utf8');
  const limit = pref.type === type ? pref.truncationSize : null;
  if (limit !== null && pref.allOrNone && size > limit)
    return { element: asb('Body', [asb('Type', type), asb('EstimatedDataSize', size), asb('Truncated', '1')]), native };
  const { data, truncated } = cut(full, limit);
  return {
    element: asb('Body', [
      asb('Type', type),
      asb('EstimatedDataSize', size),
      ...(truncated ? [asb('Truncated', '1')] : []),
      asb('Data', data),
    ]),
    native,
  };
}

/** The ApplicationData of a message (Sync Add, ItemOperations Fetch); `known`: its body read beforehand (pageBodies). */
export async function mailData(
  caller: CallerApi,
  msg: Row,
  prefs: BodyPreference[],
  mimeSupport: number,
  known?: MessageBody,
): Promise<WbxmlElement[]> {
  const attachments = (Array.isArray(msg.attachments) ? msg.attachments : []) as Array<{
    id: string;
    safeFilename?: string;
    filename: string;
    size: number;
    inline: boolean;
    contentType: string;
  }>;
  const body = await bodyElement(caller, msg, prefs, mimeSupport, known);
  return [
    em('To', addressList(msg.to)),
    ...(Array.isArray(msg.cc) && msg.cc.length ? [em('Cc', addressList(msg.cc))] : []),
    em('From', addressList(msg.from)),
    em('Subject', String(msg.subject ?? '')),
    em('DateReceived', easDate(msg.date)),
    em('DisplayTo', displayList(msg.to)),
    em('ThreadTopic', String(msg.subject ?? '')),
    em('Importance', '1'),
    em('Read', msg.seen ? '1' : '0'),
    ...(attachments.length
      ? [
          asb(
            'Attachments',
            attachments.map((a) =>
              asb('Attachment', [
                asb('DisplayName', a.safeFilename ?? a.filename),
                asb('FileReference', `${String(msg.uid)}:${a.id}`),
                asb('Method', '1'),
                asb('EstimatedDataSize', a.size),
                ...(a.inline ? [asb('IsInline', '1')] : []),
              ]),
            ),
          ),
        ]
      : []),
    body.element,
    em(
      'MessageClass',
      msg.smime === 'encrypted' ? 'IPM.Note.SMIME' : msg.smime === 'signed' ? 'IPM.Note.SMIME.MultipartSigned' : 'IPM.Note',
    ),
    em('InternetCPID', '65001'),
    flagElement(msg),
    em('ContentClass', 'urn:content-classes:message'),
    ...(body.native !== null ? [asb('NativeBodyType', body.native)] : []),
  ];
}

/** Email:Flag: active (2) while flagged, empty when not. */
export const flagElement = (msg: Row): WbxmlElement =>
  msg.flagged ? em('Flag', [em('FlagStatus', '2'), em('FlagType', 'Flag for follow up')]) : em('Flag');

/** The fields of a mail Change from the server: what can change on a message (read, flag). */
export const mailChange = (msg: Row): WbxmlElement[] => [em('Read', msg.seen ? '1' : '0'), flagElement(msg)];

/** What a device's Change of a message asks: read and flag (anything else of a message is the server's). */
export function clientMailChange(data: WbxmlElement | undefined): { seen?: boolean; flagged?: boolean } {
  const out: { seen?: boolean; flagged?: boolean } = {};
  const read = textOf(data, 'Read');
  if (read !== undefined) out.seen = read === '1';
  const flag = kid(data, 'Flag');
  if (flag) {
    const status = textOf(flag, 'FlagStatus');
    out.flagged = status === '2';
  }
  return out;
}
