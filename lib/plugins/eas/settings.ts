import { isApiError, type PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { atLeast, kid, kids, textOf, wbxml } from './protocol.js';
import { deviceInformation } from './provision.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// Settings (MS-ASCMD 2.2.1.18): the mailbox's out-of-office reply (Oof Get/Set, on the same record
// the web app and delivery use), DeviceInformation (stored on the device), UserInformation (the
// mailbox's addresses and display name). DevicePassword recovery and rights management are not
// offered: their Status says so.

const st = ns('Settings');

/** Settings Status values. */
const STATUS = { ok: 1, protocol: 2, denied: 3, invalid: 5, policy: 7 } as const;
const AUDIENCES = ['AppliesToInternal', 'AppliesToExternalKnown', 'AppliesToExternalUnknown'] as const;

const easTime = (d: Date | null) => (d ? d.toISOString() : undefined);

async function oof(r: EasRequest, el: WbxmlElement): Promise<WbxmlElement> {
  const set = kid(el, 'Set');
  try {
    if (set) {
      const state = Number(textOf(set, 'OofState') ?? -1);
      if (![0, 1, 2].includes(state)) return st('Oof', [st('Status', STATUS.invalid)]);
      const start = textOf(set, 'StartTime');
      const end = textOf(set, 'EndTime');
      const dates = state === 2 ? [start ? new Date(start) : null, end ? new Date(end) : null] : [null, null];
      if (state === 2 && (!dates[0] || !dates[1] || Number.isNaN(dates[0].getTime()) || Number.isNaN(dates[1].getTime())))
        return st('Oof', [st('Status', STATUS.invalid)]);
      // One reply for every audience: the first message the device enabled.
      const message = kids(set, 'OofMessage').find((m) => textOf(m, 'Enabled') === '1');
      await r.caller.setAutoReply(r.mailboxUid, {
        enabled: state !== 0,
        startsAt: dates[0],
        endsAt: dates[1],
        ...(message ? { body: (textOf(message, 'ReplyMessage') ?? '').slice(0, 100_000) } : {}),
      });
      return st('Oof', [st('Status', STATUS.ok)]);
    }
    const a = await r.caller.autoReply(r.mailboxUid);
    const state = !a.enabled ? 0 : a.startsAt && a.endsAt ? 2 : 1;
    const times = state === 2 ? [st('StartTime', easTime(a.startsAt)!), st('EndTime', easTime(a.endsAt)!)] : [];
    const messages = AUDIENCES.map((aud) =>
      st('OofMessage', [st(aud), st('Enabled', a.enabled ? '1' : '0'), st('ReplyMessage', a.body), st('BodyType', 'TEXT')]),
    );
    return st('Oof', [st('Status', STATUS.ok), st('Get', [st('OofState', state), ...times, ...messages])]);
  } catch (e) {
    if (isApiError(e)) return st('Oof', [st('Status', STATUS.denied)]);
    throw e;
  }
}

async function userInformation(r: EasRequest): Promise<WbxmlElement> {
  const box = await r.caller.mailbox();
  const primary = String(box.address);
  const aliases = Array.isArray(box.aliases) ? box.aliases.map(String) : [];
  const smtp = [primary, ...aliases].map((a) => st('SmtpAddress', a));
  const get = atLeast(r.version, '14.1')
    ? st('Get', [
        st('Accounts', [
          st('Account', [
            st('UserDisplayName', String(box.name ?? primary)),
            st('EmailAddresses', [...smtp, st('PrimarySmtpAddress', primary)]), // the schema's order
          ]),
        ]),
      ])
    : st('Get', [st('EmailAddresses', smtp)]);
  return st('UserInformation', [st('Status', STATUS.ok), get]);
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  const out: WbxmlElement[] = [];
  for (const el of r.body?.children ?? []) {
    if (el.tag === 'Oof') out.push(await oof(r, el));
    else if (el.tag === 'DeviceInformation') {
      await r.caller.devices.update(r.device.uid, { deviceInfo: deviceInformation(kid(el, 'Set')) });
      out.push(st('DeviceInformation', [st('Status', STATUS.ok)]));
    } else if (el.tag === 'UserInformation') out.push(await userInformation(r));
    else if (el.page === 'Settings' && ['DevicePassword', 'RightsManagementInformation'].includes(el.tag))
      out.push(st(el.tag, [st('Status', STATUS.policy)])); // not offered: denied by policy
    else return wbxml(st('Settings', [st('Status', STATUS.protocol)]));
  }
  return wbxml(st('Settings', [st('Status', out.length ? STATUS.ok : STATUS.protocol), ...out]));
}

export const settings: EasCommand = { root: { page: 'Settings', tag: 'Settings' }, handle };
