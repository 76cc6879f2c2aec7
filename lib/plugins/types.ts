import type { Principal } from '../auth/index.js';
import type { SettingName, SettingValue } from '../config/index.js';
import type { ChannelHandler, MailEventKind } from '../events/index.js';
import type { OperationDoc } from '../http/index.js';
import type { Logger } from '../log/index.js';
import type { RecordBase } from '../storage/index.js';
import type { EasCollectionFields, EasDeviceFields } from './device-models.js';
import type { AutoReplySettings } from '../ingest/index.js';

// The plugin contract (Architecture: Plugins; Style 7). A plugin is a module exporting a manifest;
// it sees HTTP only as PluginRequest/PluginResponse and data only through the scoped host API
// below, so it never imports a storage adapter or Express.

/** How a route authenticates (Spec: App passwords): nobody, a session token, or also an app password on Basic paths. */
export type PluginAuth = 'none' | 'signed-in' | 'basic-or-token';

export interface PluginRequest {
  method: string;
  /** The path as requested (case kept; routes match case-insensitively). */
  path: string;
  params: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
  /** Lower-case names, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** A Buffer for body type raw, the parsed value for json, undefined for routes without a body. */
  body: unknown;
  ip: string;
  requestId: string;
  /** The verified caller on authenticated routes; null on routes with auth none. */
  principal: Principal | null;
  /** Aborted when the client goes away, so long polls can stop early. */
  signal: AbortSignal;
}

export interface PluginResponse {
  status: number;
  headers?: Record<string, string>;
  /** Text and bytes are sent as they are; anything else as JSON. */
  body?: string | Buffer | Record<string, unknown> | unknown[];
}

export interface PluginRoute {
  method: 'get' | 'post' | 'put' | 'delete' | 'options' | 'head';
  /**
   * An Express path. Protocol plugins use their exact paths without /api (Spec: Protocol plugin
   * routes); other routes live under /api/mail/<plugin> by convention and are served by the api daemon.
   */
  path: string;
  auth: PluginAuth;
  /** Bodies beyond `limit` bytes answer 413 api-110 before the handler runs. */
  body?: { type: 'raw' | 'json'; limit: number };
  /** The OpenAPI description (Spec: What the service does, 9); auth, daemon and plugin are filled in. */
  doc: Omit<OperationDoc, 'auth' | 'daemon' | 'plugin'>;
  handle(req: PluginRequest, ctx: PluginContext): Promise<PluginResponse> | PluginResponse;
}

/**
 * A protocol a plugin serves and Autodiscover advertises while the plugin is loaded and enabled.
 * Endpoints are paths on mail:autodiscover:public_url. Known names: ActiveSync ({url}), mapiHttp
 * ({emsmdb, nspi}), AutodiscoverV1 ({url}).
 */
export interface ProtocolAdvert {
  name: string;
  endpoints: Record<string, string>;
}

export interface AdvertisedProtocol extends ProtocolAdvert {
  plugin: string;
}

export type MailHook = (payload: Record<string, unknown>, host: PluginHostApi) => Promise<void> | void;

export interface PluginHooks {
  /** Runs once when the protocols daemon loads the plugin; a throw leaves the plugin unloaded (logged), never the daemon down. */
  start?(host: PluginHostApi): Promise<void> | void;
  stop?(): Promise<void> | void;
  /** Mail event stream consumers (Spec: Mail event stream); called only while the plugin is enabled. */
  mail?: Partial<Record<MailEventKind, MailHook>>;
}

export interface PluginManifest {
  /** Lower-case letters, digits and dashes; routes under /api/mail/<name> and settings mail:<name>:… use it. */
  name: string;
  version: string;
  summary: string;
  routes: PluginRoute[];
  /** The plugin's config schema: the settings it reads, declared once in lib/config/settings, each named mail:<name>:… */
  settings: readonly SettingName[];
  protocols: ProtocolAdvert[];
  hooks?: PluginHooks;
}

export type Row = Record<string, unknown>;

/** A message's body for display: text and sanitized HTML; encrypted mail has none on the server. */
export interface MessageBody {
  encrypted: boolean;
  text: string | null;
  html: string | null;
}

/** What a plugin may do for one signed-in caller: always checked with trusted roles stripped (Spec: Roles and elevation). */
export interface CallerApi {
  readonly principal: Principal;
  /** The caller's own mailbox, or a mailbox shared with them when an address of it is given; 404 api-107 otherwise. */
  mailbox(address?: string): Promise<Row>;
  folders(mailboxUid: string): Promise<Row[]>;
  folder(uid: string): Promise<Row>;
  messages(folderUid: string, opts?: { limit?: number; page?: number; sort?: string }): Promise<Row[]>;
  message(uid: string): Promise<Row>;
  /** The stored source of a message the caller may read. */
  rawMessage(uid: string): Promise<Buffer>;
  /** Sends a draft through the common send path (From/Sender checks, policy, scan, relay). */
  sendDraft(uid: string, opts?: { background?: boolean }): Promise<{ status: number; body: Row }>;
  /** Files a whole MIME message as a draft of the mailbox, then sends it like sendDraft (mobile sync SendMail). */
  sendRaw(mailboxUid: string, raw: Buffer, opts?: { background?: boolean }): Promise<{ status: number; body: Row }>;
  /** Push events of a folder, task list or mailbox the caller can read (404 otherwise); returns the unsubscribe function. */
  subscribe(channel: string, handler: ChannelHandler): Promise<() => void>;
  /**
   * Messages of a folder the caller can read, as the API shows them, in uid order: after `after`
   * (a cursor through the folder), or newest first below `before` when `newestFirst`; received
   * since `since` (a sync filter window); those of `uids` only; at most `limit`.
   */
  folderItems(
    folderUid: string,
    opts: { after?: string | null; before?: string | null; newestFirst?: boolean; since?: Date | null; uids?: string[]; limit: number },
  ): Promise<Row[]>;
  /** The text and sanitized HTML of a message the caller can read (encrypted mail: only that it is). */
  messageBody(uid: string): Promise<MessageBody>;
  /**
   * messageBody of several messages of a folder the caller can read (one access check; messages not
   * in it are left out); `want` 'html': an HTML message's text is not made (mobile sync's first fill).
   */
  messageBodies(folderUid: string, uids: string[], want: 'text' | 'html'): Promise<Map<string, MessageBody>>;
  /** Every message of the folder in the window: uid → change key (changes with every write to it). */
  folderKeys(folderUid: string, since?: Date | null): Promise<Map<string, string>>;
  /** Read, flagged, answered and forwarded, as the API's PUT sets them (write access to the folder). */
  setFlags(uid: string, flags: { seen?: boolean; flagged?: boolean; answered?: boolean; forwarded?: boolean }): Promise<Row>;
  /** Moves a message to another folder of its mailbox (write access to both). */
  moveMessage(uid: string, folderUid: string): Promise<Row>;
  /** To Deleted Items; already there: removed for good (null). */
  trashMessage(uid: string): Promise<Row | null>;
  /** Removed for good (a device that does not ask for deletes as moves). */
  deleteMessage(uid: string): Promise<void>;
  /** An attachment of a message the caller can read: its type and bytes (404 when there is none of that id). */
  attachment(messageUid: string, attachmentId: string): Promise<{ filename: string; contentType: string; data: Buffer }>;
  /** Removes every message of a folder the caller may delete from (Deleted Items emptied). */
  emptyFolder(folderUid: string): Promise<{ removed: number }>;
  /** The out-of-office reply of a mailbox the caller can read. */
  autoReply(mailboxUid: string): Promise<AutoReplySettings>;
  /** Changes it (the caller must own the mailbox or hold write on it). */
  setAutoReply(mailboxUid: string, patch: Partial<AutoReplySettings>): Promise<AutoReplySettings>;
  /** Mail search over the caller's mailboxes (or one named), newest first, as GET /api/mail/search answers. */
  searchMail(q: {
    mailboxUid?: string;
    q?: string;
    folderUid?: string;
    after?: Date;
    before?: Date;
    limit?: number;
    page?: number;
  }): Promise<Row[]>;
  /** The directory (mailboxes and lists) whose address or name starts with q. */
  directory(q: string, limit: number): Promise<Array<{ address: string; name: string; kind: 'mailbox' | 'list' }>>;
  /** The encryption certificate (PEM) of an address, local or federated; null when it has none. */
  encryptionCertificate(mailboxUid: string, address: string): Promise<string | null>;
  /**
   * Answers a meeting invitation (the calendar event, or the invitation message naming it): the
   * event's PARTSTAT and an iTIP REPLY to the organizer, as the web app answers.
   */
  answerInvitation(itemUid: string, response: 'accepted' | 'tentative' | 'declined'): Promise<{ eventUid: string }>;
  /** Contacts, calendar events, tasks and task lists, as the generic resource routes serve them. */
  records(name: SyncResource): RecordsApi;
  /** The mobile-sync records of the caller's own devices. */
  readonly devices: DeviceStateApi;
}

/** The personal-information resources a sync protocol reads and writes. */
export type SyncResource = 'contacts' | 'calendar-events' | 'tasks' | 'task-lists';

/** One resource for one caller: each call checked like the HTTP API's generic route (404 for what the caller cannot see). */
export interface RecordsApi {
  /** Every record matching equality filters (e.g. { mailboxUid }, { taskListUid }). */
  list(filter: Record<string, string>): Promise<Row[]>;
  /** The same records' uid → change key (the record version). */
  keys(filter: Record<string, string>): Promise<Map<string, string>>;
  get(uid: string): Promise<Row>;
  create(body: Record<string, unknown>): Promise<Row>;
  /**
   * Changes fields: only while the record is still `expectedVersion` when given (api-108 otherwise),
   * else whatever its version now (the caller's change wins over the server's).
   */
  update(uid: string, body: Record<string, unknown>, expectedVersion?: number): Promise<Row>;
  remove(uid: string): Promise<void>;
}

/** A mailbox's out-of-office reply (lib/ingest/auto-reply.ts). */
export type { AutoReplySettings };

/** Spec: DeviceSyncState, as the host keeps it for its owner. */
export type EasDevice = EasDeviceFields & RecordBase;
/** Spec: EasCollectionState. */
export type EasCollection = EasCollectionFields & RecordBase;

/**
 * A collection as the device-state calls name it: its uid and its device's, and the version it was
 * read at (a held list kept since the round that wrote that version is used instead of a read).
 */
export type CollectionRef = Pick<EasCollection, 'uid' | 'deviceUid'> & { version?: number };

export interface DeviceStateApi {
  /** The caller's device of this id (made on first use, bound to the caller's own mailbox). */
  open(deviceId: string, init: { deviceType: string; userAgent: string; protocolVersion: string }): Promise<EasDevice>;
  update(deviceUid: string, patch: Partial<EasDeviceFields>): Promise<EasDevice>;
  collection(deviceUid: string, folderUid: string): Promise<EasCollection | null>;
  saveCollection(deviceUid: string, folderUid: string, patch: Partial<EasCollectionFields>): Promise<EasCollection>;
  /** Spec: EasCollectionChunk — what the device holds of a collection: item id → change key. */
  held(collection: CollectionRef): Promise<Map<string, string>>;
  setHeld(collection: CollectionRef, held: Map<string, string>): Promise<void>;
  /**
   * The end of a Sync round, in one transaction: what the device now holds (the chunks a read of
   * `held` changed) and the collection's new state, written only while the collection is still the
   * version `state` was read at; otherwise nothing is written and api-108 is thrown.
   */
  saveRound(state: EasCollection, held: Map<string, string>, patch: Partial<EasCollectionFields>): Promise<EasCollection>;
  /** Forgets the device's collections (one folder, or all). */
  drop(deviceUid: string, folderUid?: string): Promise<void>;
}

/** What a plugin gets from the host, scoped to itself. */
export interface PluginHostApi {
  readonly name: string;
  readonly log: Logger;
  /** One of the settings the manifest names; any other name throws. */
  setting<K extends SettingName>(name: K): SettingValue<K>;
  /** Protocols of the plugins loaded and enabled right now. */
  advertised(): Promise<AdvertisedProtocol[]>;
  /** Subscribes to the mail event stream; the handler runs only while the plugin is enabled. */
  onMail(kind: MailEventKind, handler: (payload: Record<string, unknown>) => Promise<void> | void): () => void;
  /**
   * A message to every copy of this plugin in every daemon (over the shared event channel when there
   * is one), on a topic of the plugin's own: no user and no push client can subscribe to it.
   */
  signal(topic: string, data: Record<string, unknown>): void;
  /** Receives the signals of a topic (this process's own included); returns the function that stops it. */
  onSignal(topic: string, handler: (data: Record<string, unknown>) => void): () => void;
  /** Acts for a verified caller (a request's principal), trusted roles stripped. */
  as(principal: Principal, meta?: { ip?: string; requestId?: string }): CallerApi;
}

/** The second argument of a route handler. */
export interface PluginContext {
  host: PluginHostApi;
  /** Set on authenticated routes. */
  caller: CallerApi | null;
}
