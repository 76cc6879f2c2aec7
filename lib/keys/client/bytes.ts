// Byte helpers that run the same in Node and browsers (no Buffer).

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
export const fromUtf8 = (b: Uint8Array | ArrayBuffer): string => new TextDecoder().decode(b);

export function toB64(b: Uint8Array | ArrayBuffer): string {
  const u = b instanceof Uint8Array ? b : new Uint8Array(b);
  let s = '';
  for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode(...u.subarray(i, i + 0x8000));
  return btoa(s);
}

export function fromB64(s: string): Uint8Array {
  const bin = atob(
    s
      .replace(/[\r\n\s]/g, '')
      .replace(/-/g, '+')
      .replace(/_/g, '/'),
  );
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export const toB64url = (b: Uint8Array | ArrayBuffer): string => toB64(b).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function random(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n));
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

/** A fresh ArrayBuffer holding exactly these bytes (WebCrypto and asn1js want ArrayBuffers). */
export function ab(u: Uint8Array): ArrayBuffer {
  return u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength) as ArrayBuffer;
}

/** 64-column base64 lines, CRLF-separated (MIME bodies). */
export function b64Lines(b: Uint8Array | ArrayBuffer): string {
  return (toB64(b).match(/.{1,64}/g) ?? []).join('\r\n');
}

export function pem(label: string, der: Uint8Array | ArrayBuffer): string {
  return `-----BEGIN ${label}-----\n${(toB64(der).match(/.{1,64}/g) ?? []).join('\n')}\n-----END ${label}-----\n`;
}

export function unpem(text: string): Uint8Array {
  const m = /-----BEGIN [^-]+-----([\s\S]*?)-----END [^-]+-----/.exec(text);
  return fromB64(m ? m[1]! : text);
}
