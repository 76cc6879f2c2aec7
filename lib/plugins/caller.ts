import { AclEntryModel, type AclEntryRecord } from '../acl/index.js';
import type { Principal } from '../auth/index.js';
import { notFound } from '../errors/index.js';
import type { ChannelHandler } from '../events/index.js';
import type { Logger } from '../log/index.js';
import { AddressModel, fileDraft, loadRaw, mailboxFor, type MessageRecord } from '../mail/index.js';
import type { ResourceService } from '../resources/index.js';
import type { Ctx, Deps } from '../context/index.js';
import { sendDraft, type SendDeps } from '../send/index.js';
import { itemApi } from './caller-items.js';
import { lookupApi } from './caller-lookup.js';
import { meetingApi } from './caller-meetings.js';
import { recordsApi } from './caller-records.js';
import { deviceStateApi } from './device-state.js';
import type { CallerApi, Row } from './types.js';

export interface CallerDeps extends Deps {
  service: ResourceService;
  /** Built on first use: most plugin requests never send. */
  sendDeps(): SendDeps;
}

/**
 * The host API for one caller. Every read and write goes through the resource engine
 * (ResourceService.load/list/get → checkRecord), so a plugin is refused exactly what the HTTP API
 * refuses. The principal is stripped of its elevation first: trusted roles then never count
 * (Spec: Roles and elevation; Protocol plugin routes check access with trusted roles stripped).
 */
export function callerApi(deps: CallerDeps, log: Logger, principal: Principal, meta: { ip?: string; requestId?: string } = {}): CallerApi {
  const stripped: Principal = { ...principal, elevatedAt: null };
  // One request's reads share a consistency point until it writes (Store.session), as an HTTP
  // request's do; an event it is told of starts a new one (subscribe), so what the event announces
  // is read, not a result kept from before it.
  const freshStore = () => (deps.store.session ? deps.store.session() : deps.store);
  const ctx: Ctx = {
    config: deps.config,
    store: freshStore(),
    events: deps.events,
    log,
    principal: stripped,
    ip: meta.ip ?? '',
    requestId: meta.requestId ?? '',
  };
  const { service } = deps;
  const decl = (name: 'mailboxes' | 'folders' | 'messages') => service.registry.get(name);
  const sendDecls = () => ({ messages: decl('messages'), mailboxes: decl('mailboxes'), load: service.load.bind(service) });

  const api: CallerApi = {
    principal: stripped,
    async mailbox(address) {
      if (address !== undefined) {
        const row = await ctx.store.repo<{ mailboxUid: string }>(AddressModel).findOne({ address: address.trim().toLowerCase() });
        if (!row) throw notFound();
        return service.get(ctx, decl('mailboxes'), row.mailboxUid);
      }
      const entries = await ctx.store.repo<AclEntryRecord>(AclEntryModel).list({
        filter: { resource: 'mailboxes', subject: `user:${stripped.uid}` },
        sort: [{ field: 'createdAt', dir: 'asc' }],
        limit: 1000,
      });
      const own = entries.find((e) => e.rights.includes('owner'));
      if (!own) throw notFound('You have no mailbox here');
      return service.get(ctx, decl('mailboxes'), own.resourceUid);
    },
    folders: (mailboxUid) => service.list(ctx, decl('folders'), { mailboxUid, limit: '1000' }),
    folder: (uid) => service.get(ctx, decl('folders'), uid),
    messages: (folderUid, opts = {}) =>
      service.list(ctx, decl('messages'), {
        folderUid,
        limit: String(opts.limit ?? 100),
        page: String(opts.page ?? 0),
        ...(opts.sort ? { sort: opts.sort } : {}),
      }),
    message: (uid) => service.get(ctx, decl('messages'), uid),
    async rawMessage(uid) {
      const msg = (await service.load(ctx, decl('messages'), uid, 'read')) as unknown as MessageRecord;
      return loadRaw(ctx, msg.blobId);
    },
    sendDraft: (uid, opts = {}) =>
      sendDraft(ctx, deps.sendDeps(), sendDecls(), uid, { background: opts.background ?? false }) as Promise<{ status: number; body: Row }>,
    async sendRaw(mailboxUid, raw, opts = {}) {
      // The caller must be able to create in the mailbox's Drafts, exactly like compose.
      const box = await mailboxFor(
        ctx,
        { messages: decl('messages'), folders: decl('folders'), load: service.load.bind(service) },
        mailboxUid,
      );
      const draft = await fileDraft(ctx, box.uid, raw);
      return sendDraft(ctx, deps.sendDeps(), sendDecls(), draft.uid, { background: opts.background ?? false }) as Promise<{
        status: number;
        body: Row;
      }>;
    },
    ...itemApi(ctx, service),
    ...lookupApi(ctx, service),
    ...meetingApi(ctx, service),
    records: (name) => recordsApi(ctx, service, name),
    devices: deviceStateApi(
      () => ctx.store,
      stripped,
      async () => String((await api.mailbox()).uid),
    ),
    async subscribe(channel, handler: ChannelHandler) {
      // Channels are folder, task-list and mailbox uids (Spec: Events 2); READ is checked like a GET.
      const folders = decl('folders');
      const lists = service.registry.get('task-lists');
      if (await ctx.store.repo(folders.model).get(channel)) await service.load(ctx, folders, channel, 'read');
      else if (await ctx.store.repo(lists.model).get(channel)) await service.load(ctx, lists, channel, 'read');
      else await service.get(ctx, decl('mailboxes'), channel);
      return ctx.events.subscribe(channel, (ch, event) => {
        ctx.store = freshStore();
        try {
          handler(ch, event);
        } catch (e) {
          log.warn({ err: e, channel: ch }, 'plugin push handler failed');
        }
      });
    },
  };
  return api;
}
