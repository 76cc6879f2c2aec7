import { useEffect, useState } from 'react';
import { api, ApiFailure, Problem } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { at, Table } from '../shared/RecordTable.js';
import { custodianKeys, importScopeKey, openMessage, type ManifestEntry, type MaterialItem, type Opened } from './escrow-crypto.js';
import type { AccessRequest, MatterExport, Scope } from './types.js';

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The request the address names (#investigate?request=uid). */
const requestOfHash = () => new URLSearchParams(location.hash.split('?')[1] ?? '').get('request') ?? '';

/** A ready export of the request's matter: one already made, else one asked for now and waited for (the worker builds it). */
async function readyExport(requestUid: string, tell: (s: string) => void): Promise<MatterExport> {
  const mine = await api<MatterExport[]>(`/api/escrow/matter-export-requests?accessRequestUid=${requestUid}&sort=-createdAt&limit=5`);
  let exp = mine.find((e) => e.state === 'ready' || e.state === 'pending');
  exp ??= await api<MatterExport>('/api/escrow/matter-export-requests', {
    method: 'POST',
    body: { accessRequestUid: requestUid },
    label: "Export the matter's messages",
  });
  for (let i = 0; exp.state === 'pending'; i++) {
    tell(`Waiting for the worker to build the matter export… (${i * 2} s)`);
    await wait(2000);
    exp = await api<MatterExport>(`/api/escrow/matter-export-requests/${exp.uid}`);
  }
  if (exp.state !== 'ready') throw new Problem(`The matter export ${exp.state}: open the matter again to ask for a new one.`);
  return exp;
}

/** Every step from the released material to the matter's readable messages, told as it goes. */
async function investigate(
  request: AccessRequest,
  scopeKey: CryptoKey,
  tell: (s: string) => void,
): Promise<{ opened: Opened[]; missing: string[] }> {
  tell('Fetching the escrow material…');
  const { material } = await api<{ material: MaterialItem[] }>(`/api/escrow/access-requests/${request.uid}/material`);
  const scope = await api<Scope>(`/api/escrow/scopes/${request.scopeUid}`);
  tell('Unwrapping the custodians’ keys in this browser…');
  const { keys, missing } = await custodianKeys(material, scope.certificatePem, scopeKey);
  const exp = await readyExport(request.uid, tell);
  tell('Downloading the matter export…');
  const manifest = await api<{ messages: ManifestEntry[] }>(`/api/escrow/matter-export-requests/${exp.uid}/manifest`);
  const res = await fetch(`/api/escrow/matter-export-requests/${exp.uid}/download`, { credentials: 'same-origin' });
  if (!res.ok) throw new Problem(`The export could not be downloaded (HTTP ${res.status}): try again.`);
  const mbox = new Uint8Array(await res.arrayBuffer());
  const opened: Opened[] = [];
  for (const [i, entry] of manifest.messages.entries()) {
    tell(`Opening message ${i + 1} of ${manifest.messages.length}…`);
    opened.push(await openMessage(mbox, entry, keys));
  }
  tell(`${opened.length} messages opened in this browser.`);
  return { opened, missing: missing.map((m) => `${m.mailboxUid}: ${m.why}`) };
}

/** Reads the scope's private key from a file into memory (a non-extractable CryptoKey); the file is never uploaded. */
function ScopeKeyInput({ onKey }: { onKey(k: CryptoKey | null): void }) {
  const [error, setError] = useState<unknown>(null);
  const [loaded, setLoaded] = useState('');
  return (
    <div className="stack">
      <label className="button secondary">
        Load the scope’s private key (PEM file)…
        <input
          type="file"
          className="visually-hidden"
          accept=".pem,.key,application/x-pem-file"
          onChange={async (e) => {
            const file = e.target.files?.[0];
            e.target.value = '';
            if (!file) return;
            setError(null);
            try {
              onKey(await importScopeKey(await file.text()));
              setLoaded(`Key from ${file.name} held in this page’s memory only; it is gone when the page closes.`);
            } catch (err) {
              onKey(null);
              setError(new Problem(`That file is not a P-256 private key (${(err as Error).message}). Choose the scope's key file.`));
            }
          }}
        />
      </label>
      <p role="status">{loaded}</p>
      <ErrorBox error={error} />
    </div>
  );
}

/** An approved request's matter mail, decrypted here with the scope key. */
export default function Investigate() {
  const [requests, setRequests] = useState<AccessRequest[]>([]);
  const [uid, setUid] = useState(requestOfHash);
  const [scopeKey, setScopeKey] = useState<CryptoKey | null>(null);
  const [progress, setProgress] = useState('');
  const [result, setResult] = useState<{ opened: Opened[]; missing: string[] } | null>(null);
  const [open, setOpen] = useState<Opened | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<AccessRequest[]>('/api/escrow/access-requests?state=approved&sort=-createdAt&limit=200').then(setRequests, setError);
  }, []);
  const request = requests.find((r) => r.uid === uid);
  const go = async () => {
    setError(null);
    setResult(null);
    try {
      setResult(await investigate(request!, scopeKey!, setProgress));
    } catch (e) {
      setProgress('');
      // The API's refusals say themselves what to do; a failure here (a wrong key, a damaged wrap) is worded for the user.
      setError(
        e instanceof ApiFailure || e instanceof Problem
          ? e
          : new Problem(`The matter could not be opened: ${(e as Error).message}. Is it this scope's key?`),
      );
    }
  };
  return (
    <>
      <p className="muted">
        The scope’s private key stays in this browser: the server sends the escrow material and the matter’s messages as ciphertext, and
        they are opened here. The key is read from its PEM file (PKCS#8, P-256): browsers cannot yet do the key agreement S/MIME needs with
        a key kept on a security key or in a passkey.
      </p>
      <label>
        Approved request{' '}
        <select value={uid} onChange={(e) => setUid(e.target.value)}>
          <option value="">Choose one</option>
          {requests.map((r) => (
            <option key={r.uid} value={r.uid}>
              {r.reason} ({at(r.createdAt)})
            </option>
          ))}
        </select>
      </label>
      <ScopeKeyInput onKey={setScopeKey} />
      <p>
        <button type="button" disabled={!request || !scopeKey || Boolean(progress && !result && !error)} onClick={() => void go()}>
          Open the matter’s mail
        </button>
      </p>
      <p role="status">{progress}</p>
      <ErrorBox error={error} />
      {result && <Results result={result} open={open} onOpen={setOpen} />}
    </>
  );
}

/** What became of a message: decrypted, not encrypted, or why not; whether it matches the manifest; who signed it. */
const stateOf = (o: Opened) =>
  `${o.error ? `Not opened: ${o.error}` : o.encrypted ? 'Decrypted here' : 'Not encrypted'}${o.intact ? '' : '; does not match the manifest'}${o.signer ? `; signed by ${o.signer}` : ''}`;

function Results({
  result,
  open,
  onOpen,
}: {
  result: { opened: Opened[]; missing: string[] };
  open: Opened | null;
  onOpen(o: Opened): void;
}) {
  return (
    <>
      {result.missing.length > 0 && (
        <div className="notice">
          Not every custodian can be read:{' '}
          <ul>
            {result.missing.map((m) => (
              <li key={m}>{m}</li>
            ))}
          </ul>
        </div>
      )}
      <Table<Opened>
        label="The matter's messages"
        rows={result.opened}
        keyOf={(o) => o.entry.uid}
        empty="The matter holds no message in its period."
        problem={(o) => Boolean(o.error) || !o.intact}
        columns={[
          { label: 'Date', cell: (o) => at(o.entry.date) },
          { label: 'From', cell: (o) => o.entry.fromAddress },
          {
            label: 'Subject',
            cell: (o) => (
              <button type="button" className="link" onClick={() => onOpen(o)}>
                {o.entry.subject || '(no subject)'}
              </button>
            ),
          },
          { label: 'State', cell: stateOf },
        ]}
      />
      {open && (
        <section aria-labelledby="opened-title" className="card">
          <h3 id="opened-title">{open.entry.subject || '(no subject)'}</h3>
          <pre className="headers">{open.text}</pre>
        </section>
      )}
    </>
  );
}
