import { when } from '../shared/api.js';
import { Section } from '../shared/Section.js';
import { remove, useRecords, type Rec } from '../shared/records.js';

interface Device extends Rec {
  mailboxUid: string;
  deviceId: string;
  deviceType: string;
  userAgent: string;
  lastSyncAt: string | null;
}

/** The phones and tablets that sync this mailbox (ActiveSync); one removed syncs from scratch if it comes back. */
export function Devices({ mailboxUid }: { mailboxUid: string }) {
  const { rows, error, run } = useRecords<Device>('/api/mail/devices?limit=1000');
  const mine = rows?.filter((d) => d.mailboxUid === mailboxUid) ?? [];
  return (
    <Section id="devices" title="Devices" intro="Phones and tablets syncing this mailbox. Remove one you no longer use." error={error}>
      {rows && !mine.length && <p className="muted">No device syncs this mailbox.</p>}
      <ul className="plain">
        {mine.map((d) => (
          <li key={d.uid}>
            <strong>{d.deviceType || 'Device'}</strong> {d.userAgent}{' '}
            <span className="muted">last sync {when(d.lastSyncAt) || 'never'}</span>{' '}
            <button
              type="button"
              className="link"
              aria-label={`Remove ${d.deviceType} ${d.deviceId}`}
              onClick={() => void run(() => remove('devices', d))}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
    </Section>
  );
}
