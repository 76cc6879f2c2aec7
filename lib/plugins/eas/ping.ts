import type { PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { kid, kids, textOf, wbxml } from './protocol.js';
import { pendingChanges } from './pending.js';
import { pushOf } from './sources.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// Ping (MS-ASCMD 2.2.1.13): a long poll. The device names folders and a heartbeat; the answer comes
// when one of them changes (status 2 with the folders) or when the heartbeat ends (status 1). The
// folders' push channels wake it: in one process directly, across daemon copies over the shared
// event channel (redis:url); without it a change made elsewhere waits out the heartbeat. Contacts
// and calendar wake on their mailbox's channel (events of their own type only); task lists have no
// channel a plugin may subscribe to, so they are compared every POLL_SECONDS instead. A Ping
// without folders reuses the last set. A newer Ping of the same device ends the older one.

const pg = ns('Ping');

/** Ping Status values. */
export const PING = { expired: 1, changes: 2, missing: 3, syntax: 4, heartbeat: 5, tooMany: 6, hierarchy: 7, serverError: 8 } as const;

/** How often a parked Ping compares the collections that announce nothing (task lists). */
const POLL_SECONDS = 30;

/** A Ping's identity in the "newer Ping" signal: its start, and a tie-break. */
let pings = 0;

const answer = (status: number, extra: WbxmlElement[] = []) => wbxml(pg('Ping', [pg('Status', status), ...extra]));

/** Folders of the set whose items differ from what the device holds (mail that came while it was away). */
async function changedAlready(r: EasRequest, folders: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const id of folders) {
    const state = await r.caller.devices.collection(r.device.uid, id);
    if (state && (await pendingChanges(r, state)) > 0) out.push(id); // a folder never synced has nothing to compare with
  }
  return out;
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  const min = r.host.setting('mail:eas:ping:min_heartbeat_seconds');
  const max = r.host.setting('mail:eas:ping:max_heartbeat_seconds');
  const maxFolders = r.host.setting('mail:eas:ping:max_folders');
  let heartbeat = r.device.pingHeartbeat;
  let folders = r.device.pingFolders;
  if (r.body) {
    const asked = textOf(r.body, 'HeartbeatInterval');
    const ids = kids(kid(r.body, 'Folders'), 'Folder').map((f) => textOf(f, 'Id') ?? '');
    if (asked !== undefined) {
      if (!/^\d{1,6}$/.test(asked)) return answer(PING.syntax);
      heartbeat = Number(asked);
      if (heartbeat < min) return answer(PING.heartbeat, [pg('HeartbeatInterval', min)]);
      if (heartbeat > max) return answer(PING.heartbeat, [pg('HeartbeatInterval', max)]);
    }
    if (ids.length > maxFolders) return answer(PING.tooMany, [pg('MaxFolders', maxFolders)]);
    if (ids.some((id) => !id)) return answer(PING.syntax);
    if (ids.length) folders = ids;
    if (heartbeat !== r.device.pingHeartbeat || JSON.stringify(folders) !== JSON.stringify(r.device.pingFolders))
      await r.caller.devices.update(r.device.uid, { pingHeartbeat: heartbeat, pingFolders: folders });
  }
  if (!heartbeat || !folders.length) return answer(PING.missing);
  // Folders the device names must be the ones FolderSync gave it; else it must sync the hierarchy first.
  if (folders.some((id) => !r.device.folders[id])) return answer(PING.hierarchy);

  const already = await changedAlready(r, folders);
  if (already.length)
    return answer(PING.changes, [
      pg(
        'Folders',
        already.map((id) => pg('Folder', id)),
      ),
    ]);
  return park(r, folders, heartbeat);
}

/** Waits for a change in one of the folders, the heartbeat, a newer Ping or the client going away. */
async function park(r: EasRequest, folders: string[], heartbeat: number): Promise<PluginResponse> {
  const changed = new Set<string>();
  const unsubscribe: Array<() => void> = [];
  const polled: string[] = [];
  let done: (why: 'change' | 'expired' | 'replaced') => void = () => undefined;
  const finished = new Promise<'change' | 'expired' | 'replaced'>((resolve) => (done = resolve));
  const timer = setTimeout(() => done('expired'), heartbeat * 1000);
  const onAbort = () => done('replaced');
  r.req.signal.addEventListener('abort', onAbort);
  // A newer Ping of the device ends this one, in this daemon or in any other copy (a plugin signal
  // over the shared event channel): the first thing each Ping does is say it started.
  const me = { at: Date.now(), n: `${process.pid}:${++pings}` };
  const topic = `ping:${r.device.uid}`;
  const stopListening = r.host.onSignal(topic, (other) => {
    if (other.n !== me.n && Number(other.at) >= me.at) done('replaced');
  });
  r.host.signal(topic, me);
  let poller: NodeJS.Timeout | undefined;
  try {
    for (const id of folders) {
      const push = pushOf(r, id);
      if (!push) {
        polled.push(id);
        continue;
      }
      unsubscribe.push(
        await r.caller.subscribe(push.channel, (_channel, event) => {
          if (push.types && !push.types.includes(event.type)) return;
          changed.add(id);
          // Several events of one filing arrive together: answer once they have.
          setTimeout(() => done('change'), 50);
        }),
      );
    }
    if (polled.length)
      poller = setInterval(() => {
        changedAlready(r, polled).then(
          (ids) => {
            for (const id of ids) changed.add(id);
            if (ids.length) done('change');
          },
          (e: unknown) => r.host.log.warn({ err: e }, 'mobile-sync Ping poll failed'),
        );
      }, POLL_SECONDS * 1000);
    const why = await finished;
    if (why === 'change')
      return answer(PING.changes, [
        pg(
          'Folders',
          [...changed].map((id) => pg('Folder', id)),
        ),
      ]);
    return answer(PING.expired);
  } finally {
    clearTimeout(timer);
    clearInterval(poller);
    r.req.signal.removeEventListener('abort', onAbort);
    for (const u of unsubscribe) u();
    stopListening();
  }
}

export const ping: EasCommand = { root: { page: 'Ping', tag: 'Ping' }, handle };
