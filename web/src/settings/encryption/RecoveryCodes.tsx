// The eight recovery codes, shown once (Spec: Key vault): download or print them, then confirm they
// are kept; until then they stay on the screen. Any one unlocks the vault when the password is lost.
import { useState } from 'react';

export function RecoveryCodes({ address, codes, onDone }: { address: string; codes: string[]; onDone(): void }) {
  const [kept, setKept] = useState(false);
  const text = `Recovery codes of the encryption keys of ${address}\nMade ${new Date().toLocaleString()}. Any one code unlocks the keys; keep them apart from your password.\n\n${codes.join('\n')}\n`;
  const download = () => {
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
    const a = Object.assign(document.createElement('a'), { href: url, download: `recovery-codes-${address}.txt` });
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <section className="recovery-codes notice" aria-labelledby="recovery-codes-title">
      <h3 id="recovery-codes-title">Your recovery codes</h3>
      <p>
        If you forget your encryption password, any one of these codes unlocks your keys. They are shown only now: download or print them
        and keep them somewhere safe, apart from your password. Nobody, not even an administrator, can recover your encrypted mail without
        them.
      </p>
      <ol className="codes" aria-label="Recovery codes">
        {codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ol>
      <p className="toolbar">
        <button type="button" className="secondary" onClick={download}>
          Download the codes
        </button>
        <button type="button" className="secondary" onClick={() => print()}>
          Print the codes
        </button>
      </p>
      <label className="inline">
        <input type="checkbox" checked={kept} onChange={(e) => setKept(e.target.checked)} /> I have stored these codes somewhere safe
      </label>{' '}
      <button type="button" disabled={!kept} onClick={onDone}>
        Done
      </button>
    </section>
  );
}
