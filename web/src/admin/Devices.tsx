import { useState } from 'react';
import { api } from '../shared/api.js';
import { Outcome, useAnswer } from '../shared/outcome.js';
import type { Plugin } from './Plugins.js';
import { at, Table } from '../shared/RecordTable.js';
import type { Run } from '../shared/outcome.js';

/** A mobile-sync device as GET /api/mail/devices answers it (lib/plugins/devices.ts, deviceView). */
interface Device {
  uid: string;
  version: number;
  userUid: string;
  mailboxUid: string;
  deviceId: string;
  deviceType: string;
  userAgent: string;
  protocolVersion: string;
  /** The device acknowledged the current policy. */
  provisioned: boolean;
  wipe: 'none' | 'requested' | 'account-only' | 'wiped';
  blocked: boolean;
  deviceInfo: Record<string, string>;
  lastSyncAt: string | null;
  createdAt: string;
  folders: Array<{ folderUid: string; folderName: string | null; syncKey: number; items: number; complete: boolean; lastSyncAt: string }>;
}

/** The route pages the list (limit, page) but tells no count: a full page means there may be more. */
const PAGE = 100;

const WIPE: Record<Device['wipe'], string> = {
  none: '',
  requested: 'Wipe of the whole device asked: done at its next sync',
  'account-only': 'Wipe of this account asked: done at its next sync',
  wiped: 'Wiped: refused until unblocked',
};

/** Blocked, wipe asked or done, else syncing; and whether it acknowledged the policy. */
function stateOf(d: Device): string {
  const state = WIPE[d.wipe] || (d.blocked ? 'Blocked' : 'Syncing');
  return `${state}${d.provisioned ? '' : ' (policy not acknowledged)'}`;
}

/** The folders the device syncs, each with what it holds and whether more items wait for it. */
function Folders({ d }: { d: Device }) {
  if (!d.folders.length) return <>None yet</>;
  return (
    <details>
      <summary>
        {d.folders.length} folder{d.folders.length === 1 ? '' : 's'}
      </summary>
      <ul className="plain">
        {d.folders.map((f) => (
          <li key={f.folderUid}>
            {f.folderName ?? f.folderUid}: {f.items} items, sync key {f.syncKey}
            {f.complete ? '' : ', more waiting'}, {at(f.lastSyncAt)}
          </li>
        ))}
      </ul>
    </details>
  );
}

/** Remote wipe (whole device, or this account only on 16.1 devices), unblock, forget: each confirmed when it cannot be taken back. */
function Actions({ d, run }: { d: Device; run: Run }) {
  const name = `${d.deviceType} ${d.deviceId}`;
  const path = `/api/mail/devices/${encodeURIComponent(d.uid)}`;
  const wipe = (accountOnly: boolean) => {
    const what = accountOnly ? `the account of ${d.userUid} from ${name}` : `${name} (the whole device, back to factory settings)`;
    if (!confirm(`Wipe ${what} at its next sync? This cannot be undone once the device acts on it.`)) return;
    void run(
      () =>
        api(`${path}/remote-wipe`, {
          method: 'POST',
          body: { accountOnly },
          label: `Wipe ${accountOnly ? 'the account from ' : ''}${name}`,
        }),
      `${name} is wiped at its next sync.`,
    );
  };
  return (
    <>
      {d.wipe === 'none' && (
        <button type="button" className="secondary" onClick={() => wipe(false)}>
          Remote wipe
        </button>
      )}{' '}
      {/* Only 16.1 devices wipe one account; older ones would wipe everything. */}
      {d.wipe === 'none' && d.protocolVersion === '16.1' && (
        <button type="button" className="secondary" onClick={() => wipe(true)}>
          Wipe this account only
        </button>
      )}{' '}
      {(d.blocked || d.wipe !== 'none') && (
        <button
          type="button"
          className="secondary"
          onClick={() =>
            void run(
              () => api(`${path}/unblock`, { method: 'POST', label: `Unblock ${name}` }),
              `${name} may sync again; every folder starts over.`,
            )
          }
        >
          Unblock
        </button>
      )}{' '}
      <button
        type="button"
        className="secondary"
        onClick={() =>
          confirm(`Forget ${name} and its sync state? If it syncs again, it starts over as a new device.`) &&
          void run(() => api(path, { method: 'DELETE', label: `Forget ${name}` }), `${name} forgotten.`)
        }
      >
        Forget
      </button>
    </>
  );
}

/** Whether the mobile-sync plugin is disabled (null: not known). */
function useSyncDisabled(): boolean | null {
  const { data } = useAnswer<Plugin[]>('/api/system/plugins');
  const eas = data?.find((p) => p.name === 'eas');
  return eas ? !eas.enabled : null;
}

/** The devices that sync by ActiveSync, a page at a time, with their state and the remote wipe, unblock and forget actions. */
export default function Devices() {
  const [page, setPage] = useState(0);
  const { data, error, told, run } = useAnswer<Device[]>(`/api/mail/devices?limit=${PAGE}&page=${page}`);
  const disabled = useSyncDisabled();
  return (
    <>
      {disabled && (
        <p className="notice">
          Mobile sync (the ActiveSync plugin, eas) is disabled: no device can sync, so this list may be empty. It can be enabled under{' '}
          <a href="#plugins">Plugins</a>.
        </p>
      )}
      <Outcome error={error} told={told} />
      <Table<Device>
        label="Mobile devices"
        rows={data}
        empty={page ? 'No more devices.' : 'No device has synced yet.'}
        problem={(d) => d.blocked || d.wipe !== 'none'}
        columns={[
          {
            label: 'Device',
            cell: (d) => (
              <>
                {d.deviceType} <code>{d.deviceId}</code>
                <div className="muted">{d.deviceInfo.FriendlyName || d.deviceInfo.Model || d.userAgent}</div>
              </>
            ),
          },
          { label: 'User', cell: (d) => d.userUid },
          { label: 'Protocol', cell: (d) => d.protocolVersion },
          { label: 'State', cell: stateOf },
          { label: 'Last sync', cell: (d) => at(d.lastSyncAt) },
          { label: 'Folders', cell: (d) => <Folders d={d} /> },
        ]}
        actions={(d) => <Actions d={d} run={run} />}
      />
      {(page > 0 || data?.length === PAGE) && (
        <nav className="toolbar" aria-label="Mobile devices: pages">
          <button type="button" className="secondary" disabled={page === 0} onClick={() => setPage(page - 1)}>
            Previous
          </button>
          <span>Page {page + 1}</span>
          <button type="button" className="secondary" disabled={data?.length !== PAGE} onClick={() => setPage(page + 1)}>
            Next
          </button>
        </nav>
      )}
    </>
  );
}
