// The reading pane of an S/MIME message (Spec: What the service does, 5): decrypted here with the
// mailbox's unlocked key (the unlock form when it is locked), its signature checked — who signed,
// the certificate's validity, whether the signer is the From address, a signature that does not
// verify or an unknown signer flagged — and its body and attachments shown from what was decrypted.
import { useEffect, useRef, useState } from 'react';
import { bytes, when } from '../shared/api.js';
import { useUnlocked } from '../crypto/keyring.js';
import type { OpenedMail, SignatureView } from '../crypto/smime-mail.js';
import type { FrameContent } from '../crypto/secure-view.js';
import { Unlock } from '../crypto/Unlock.js';
import { explainCrypto } from '../crypto/explain.js';
import type { Message } from './types.js';
import { openOnce } from './secure-open.js';

const day = (d: Date | null) => (d ? d.toLocaleDateString() : '?');

/** The signature's verdict: good (trusted, current, the From address), or what is wrong with it. */
export function SignatureBanner({ s }: { s: SignatureView }) {
  const problems = [
    !s.valid && `The signature does not match the content: the message was changed after it was signed (${s.problem ?? 'bad signature'}).`,
    s.valid && !s.trusted && 'The signer is unknown: the certificate is not from a certificate authority this service trusts.',
    !s.current && `The signer's certificate was not valid now (valid ${day(s.notBefore)} to ${day(s.notAfter)}).`,
    !s.matchesFrom && `The certificate is for ${s.signerEmails.join(', ') || 'no address'}, not for the sender shown.`,
  ].filter((p): p is string => Boolean(p));
  const who = `${s.signer}${s.signerEmails.length ? ` <${s.signerEmails.join(', ')}>` : ''}`;
  if (!problems.length)
    return (
      <p className="signature-ok" role="status">
        Signed by {who}: the signature is valid (certificate valid until {day(s.notAfter)}).
      </p>
    );
  return (
    <div className="error signature-bad" role="alert">
      <strong>Signature problem.</strong> Signed as {who}.
      <ul>
        {problems.map((p) => (
          <li key={p}>{p}</li>
        ))}
      </ul>
    </div>
  );
}

/** The decrypted attachments: downloaded from memory (nothing is sent to the server). */
function LocalFiles({ mail }: { mail: OpenedMail }) {
  const [urls, setUrls] = useState<string[]>([]);
  useEffect(() => {
    const made = mail.files.map((f) => URL.createObjectURL(new Blob([f.bytes as Uint8Array<ArrayBuffer>], { type: f.type })));
    setUrls(made);
    return () => made.forEach((u) => URL.revokeObjectURL(u));
  }, [mail]);
  if (!mail.files.length) return null;
  return (
    <ul className="attachment-list reader-attachments" aria-label="Attachments">
      {mail.files.map((f, i) => (
        <li key={`${f.name}-${i}`}>
          <a href={urls[i]} download={f.name}>
            {f.name}
          </a>{' '}
          <span className="muted">{bytes(f.bytes.length)}</span>
        </li>
      ))}
    </ul>
  );
}

/** The decrypted body in a frame of its own; remote images only once allowed. */
function SecureFrame({ mail }: { mail: OpenedMail }) {
  const [remote, setRemote] = useState(false);
  const [content, setContent] = useState<FrameContent | null>(null);
  const [far, setFar] = useState(false);
  const frame = useRef<HTMLIFrameElement>(null);
  useEffect(() => {
    void import('../crypto/secure-view.js').then((v) => {
      setFar(v.loadsRemoteContent(mail.html));
      setContent(v.prepareFrame(mail, remote));
    });
  }, [mail, remote]);
  const loaded = () =>
    void import('../crypto/secure-view.js').then((v) => frame.current && content && v.applyStyles(frame.current, content));
  return (
    <>
      {far && !remote && (
        <div className="notice" role="status">
          Remote images are hidden so the sender cannot see that you opened this message.{' '}
          <button type="button" className="secondary" onClick={() => setRemote(true)}>
            Show images
          </button>
        </div>
      )}
      {content && (
        <iframe
          ref={frame}
          key={content.srcdoc.length + String(remote)}
          title="Message"
          className="message-frame"
          sandbox="allow-same-origin allow-popups allow-popups-to-escape-sandbox"
          srcDoc={content.srcdoc}
          onLoad={loaded}
        />
      )}
    </>
  );
}

/** An encrypted or signed message in the reading pane. */
export function SecureMessage({ message, address }: { message: Message; address: string }) {
  const keys = useUnlocked(message.mailboxUid);
  const [mail, setMail] = useState<OpenedMail | null>(null);
  const [error, setError] = useState<unknown>(null);
  const locked = message.smime === 'encrypted' && !keys;
  useEffect(() => {
    setMail(null);
    setError(null);
    if (locked) return;
    let live = true;
    openOnce(message).then(
      (m) => live && setMail(m),
      (e) => live && setError(e),
    );
    return () => void (live = false);
  }, [message, locked]);
  const sender = message.from?.name ? `${message.from.name} <${message.fromAddress}>` : message.fromAddress;
  return (
    <>
      <h2>{mail ? mail.subject || '(no subject)' : message.smime === 'encrypted' ? 'Encrypted message' : message.subject}</h2>
      <p className="muted">
        {sender} · {when(message.date)} · {message.smime === 'encrypted' ? 'encrypted end to end' : 'signed'}
      </p>
      {locked && (
        <Unlock
          mailboxUid={message.mailboxUid}
          address={address}
          why="This message is encrypted end to end: unlock your keys to read it."
        />
      )}
      {error !== null && (
        <p className="error" role="alert">
          This message could not be opened: {explainCrypto(error)}
        </p>
      )}
      {mail?.signature && <SignatureBanner s={mail.signature} />}
      {mail && <LocalFiles mail={mail} />}
      {mail && <SecureFrame mail={mail} />}
    </>
  );
}
