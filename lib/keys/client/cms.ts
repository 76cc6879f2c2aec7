import type { webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { ab, concat, equalBytes, unpem } from './bytes.js';

// CMS (RFC 5652) for S/MIME: EnvelopedData to P-256 certificates (ECDH key agreement, RFC 5753),
// SignedData with ECDSA. Encryption and signing use pkijs; decryption of key-agreement recipients is
// done here because pkijs cannot open OpenSSL's output, which carries no UKM (PKI.js issue #335).

type CryptoKey = webcrypto.CryptoKey;

const OID_DATA = '1.2.840.113549.1.7.1';
const OID_SIGNED = '1.2.840.113549.1.7.2';
const OID_ENVELOPED = '1.2.840.113549.1.7.3';

/** ECDH key-agreement schemes (RFC 5753, SEC 1): the KDF hash of each. */
const KARI_KDF: Record<string, string> = {
  '1.3.133.16.840.63.0.2': 'SHA-1', // dhSinglePass-stdDH-sha1kdf-scheme (OpenSSL's default)
  '1.3.133.16.840.63.0.3': 'SHA-1', // dhSinglePass-cofactorDH-sha1kdf-scheme
  '1.3.132.1.11.1': 'SHA-256',
  '1.3.132.1.11.2': 'SHA-384',
  '1.3.132.1.11.3': 'SHA-512',
  '1.3.132.1.14.1': 'SHA-256',
  '1.3.132.1.14.2': 'SHA-384',
  '1.3.132.1.14.3': 'SHA-512',
};
const AES_WRAP_BITS: Record<string, number> = {
  '2.16.840.1.101.3.4.1.5': 128,
  '2.16.840.1.101.3.4.1.25': 192,
  '2.16.840.1.101.3.4.1.45': 256,
};
const AES_CBC_BITS: Record<string, number> = {
  '2.16.840.1.101.3.4.1.2': 128,
  '2.16.840.1.101.3.4.1.22': 192,
  '2.16.840.1.101.3.4.1.42': 256,
};

export function parseCertificate(pemOrDer: string | Uint8Array): pkijs.Certificate {
  const der = typeof pemOrDer === 'string' ? unpem(pemOrDer) : pemOrDer;
  return pkijs.Certificate.fromBER(ab(der));
}

function contentInfo(der: Uint8Array, expected: string): pkijs.ContentInfo {
  const ci = pkijs.ContentInfo.fromBER(ab(der));
  if (ci.contentType !== expected) throw new Error(`CMS content type ${ci.contentType}, expected ${expected}`);
  return ci;
}

/** DER of a CMS EnvelopedData (AES-256-CBC content) to every certificate. */
export async function envelope(content: Uint8Array, recipients: Array<string | Uint8Array>): Promise<Uint8Array> {
  if (!recipients.length) throw new Error('no recipient certificate');
  const ed = new pkijs.EnvelopedData();
  for (const r of recipients) ed.addRecipientByCertificate(parseCertificate(r), { kdfAlgorithm: 'SHA-256', kekEncryptionLength: 256 }, 2);
  await ed.encrypt({ name: 'AES-CBC', length: 256 } as unknown as Algorithm, ab(content));
  return new Uint8Array(new pkijs.ContentInfo({ contentType: OID_ENVELOPED, content: ed.toSchema() }).toSchema().toBER(false));
}
type Algorithm = Parameters<pkijs.EnvelopedData['encrypt']>[0];

/** X9.63 KDF with the ECC-CMS-SharedInfo of RFC 5753 §7.2 (UKM optional). */
export async function kdfX963(
  hash: string,
  z: Uint8Array,
  wrapAlg: pkijs.AlgorithmIdentifier,
  ukm: Uint8Array | null,
  bits: number,
): Promise<Uint8Array> {
  const shared = new asn1js.Sequence({
    value: [
      wrapAlg.toSchema(),
      ...(ukm
        ? [new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: [new asn1js.OctetString({ valueHex: ab(ukm) })] })]
        : []),
      new asn1js.Constructed({
        idBlock: { tagClass: 3, tagNumber: 2 },
        value: [
          new asn1js.OctetString({ valueHex: new Uint8Array([bits >>> 24, (bits >>> 16) & 255, (bits >>> 8) & 255, bits & 255]).buffer }),
        ],
      }),
    ],
  });
  const info = new Uint8Array(shared.toBER(false));
  const out: Uint8Array[] = [];
  let have = 0;
  for (let counter = 1; have < bits / 8; counter++) {
    const c = new Uint8Array([counter >>> 24, (counter >>> 16) & 255, (counter >>> 8) & 255, counter & 255]);
    const d = new Uint8Array(await crypto.subtle.digest(hash, ab(concat(z, c, info))));
    out.push(d);
    have += d.length;
  }
  return concat(...out).slice(0, bits / 8);
}

function ridMatches(rid: pkijs.KeyAgreeRecipientIdentifier, cert: pkijs.Certificate): boolean {
  if (rid.variant === 1) {
    const ias = rid.value as pkijs.IssuerAndSerialNumber;
    return ias.serialNumber.isEqual(cert.serialNumber) && ias.issuer.isEqual(cert.issuer);
  }
  const ski = cert.extensions?.find((e) => e.extnID === '2.5.29.14');
  if (!ski) return false;
  const want = new Uint8Array((ski.parsedValue as asn1js.OctetString).valueBlock.valueHexView);
  const have = new Uint8Array((rid.value as pkijs.RecipientKeyIdentifier).subjectKeyIdentifier.valueBlock.valueHexView);
  return equalBytes(want, have);
}

/** Opens a CMS EnvelopedData with our certificate and ECDH private key (OpenSSL's and ours). */
export async function openEnvelope(der: Uint8Array, certPem: string, privateKey: CryptoKey): Promise<Uint8Array> {
  const ed = new pkijs.EnvelopedData({ schema: contentInfo(der, OID_ENVELOPED).content });
  const cert = parseCertificate(certPem);
  for (const ri of ed.recipientInfos) {
    if (ri.variant !== 2) continue;
    const kari = ri.value as pkijs.KeyAgreeRecipientInfo;
    const rek = kari.recipientEncryptedKeys.encryptedKeys.find((k) => ridMatches(k.rid, cert));
    if (!rek) continue;
    const hash = KARI_KDF[kari.keyEncryptionAlgorithm.algorithmId];
    if (!hash) throw new Error(`unsupported key agreement ${kari.keyEncryptionAlgorithm.algorithmId}`);
    const wrapAlg = new pkijs.AlgorithmIdentifier({ schema: kari.keyEncryptionAlgorithm.algorithmParams });
    const kekBits = AES_WRAP_BITS[wrapAlg.algorithmId];
    if (!kekBits) throw new Error(`unsupported key wrap ${wrapAlg.algorithmId}`);
    if (kari.originator.variant !== 3) throw new Error('the originator is not an ephemeral public key');
    const originator = kari.originator.value as pkijs.OriginatorPublicKey;
    const point = new Uint8Array(originator.publicKey.valueBlock.valueHexView);
    const ephemeral = await crypto.subtle.importKey('raw', ab(point), { name: 'ECDH', namedCurve: 'P-256' }, false, []);
    const z = new Uint8Array(await crypto.subtle.deriveBits({ name: 'ECDH', public: ephemeral }, privateKey, 256));
    const ukm = kari.ukm ? new Uint8Array(kari.ukm.valueBlock.valueHexView) : null;
    const kek = await crypto.subtle.importKey('raw', ab(await kdfX963(hash, z, wrapAlg, ukm, kekBits)), 'AES-KW', false, ['unwrapKey']);
    const ceAlg = ed.encryptedContentInfo.contentEncryptionAlgorithm;
    const ceBits = AES_CBC_BITS[ceAlg.algorithmId];
    if (!ceBits) throw new Error(`unsupported content encryption ${ceAlg.algorithmId}`);
    const cek = await crypto.subtle.unwrapKey(
      'raw',
      ab(new Uint8Array(rek.encryptedKey.valueBlock.valueHexView)),
      kek,
      'AES-KW',
      { name: 'AES-CBC', length: ceBits },
      false,
      ['decrypt'],
    );
    const iv = new Uint8Array((ceAlg.algorithmParams as asn1js.OctetString).valueBlock.valueHexView);
    return new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-CBC', iv: ab(iv) }, cek, ab(encryptedContent(ed))));
  }
  throw new Error('no recipient in this message matches the certificate');
}

/** The encrypted content, whether primitive or constructed (BER chunks). */
function encryptedContent(ed: pkijs.EnvelopedData): Uint8Array {
  const ec = ed.encryptedContentInfo.encryptedContent;
  if (!ec) throw new Error('the message carries no encrypted content');
  if (ec.idBlock.isConstructed)
    return concat(...(ec.valueBlock.value as asn1js.OctetString[]).map((c) => new Uint8Array(c.valueBlock.valueHexView)));
  return new Uint8Array(ec.valueBlock.valueHexView);
}

/** DER of a CMS SignedData (ECDSA SHA-256, signed attributes, signer certificate included). */
export async function sign(
  content: Uint8Array,
  certPem: string,
  privateKey: CryptoKey,
  opts: { detached?: boolean; chain?: string[] } = {},
): Promise<Uint8Array> {
  const cert = parseCertificate(certPem);
  const digest = await crypto.subtle.digest('SHA-256', ab(content));
  const signerInfo = new pkijs.SignerInfo({
    version: 1,
    sid: new pkijs.IssuerAndSerialNumber({ issuer: cert.issuer, serialNumber: cert.serialNumber }),
    signedAttrs: new pkijs.SignedAndUnsignedAttributes({
      type: 0,
      attributes: [
        new pkijs.Attribute({ type: '1.2.840.113549.1.9.3', values: [new asn1js.ObjectIdentifier({ value: OID_DATA })] }),
        new pkijs.Attribute({ type: '1.2.840.113549.1.9.5', values: [new asn1js.UTCTime({ valueDate: new Date() })] }),
        new pkijs.Attribute({ type: '1.2.840.113549.1.9.4', values: [new asn1js.OctetString({ valueHex: digest })] }),
      ],
    }),
  });
  const sd = new pkijs.SignedData({
    version: 1,
    encapContentInfo: new pkijs.EncapsulatedContentInfo({
      eContentType: OID_DATA,
      ...(opts.detached ? {} : { eContent: new asn1js.OctetString({ valueHex: ab(content) }) }),
    }),
    signerInfos: [signerInfo],
    certificates: [cert, ...(opts.chain ?? []).map((c) => parseCertificate(c))],
  });
  await sd.sign(privateKey as unknown as Parameters<pkijs.SignedData['sign']>[0], 0, 'SHA-256', opts.detached ? ab(content) : undefined);
  return new Uint8Array(new pkijs.ContentInfo({ contentType: OID_SIGNED, content: sd.toSchema(true) }).toSchema().toBER(false));
}

export interface Verified {
  content: Uint8Array;
  signerCertificate: pkijs.Certificate;
  /** rfc822Name entries of the signer certificate. */
  signerEmails: string[];
  /** True when the signer chains to one of the trusted certificates (false when none were given). */
  trusted: boolean;
}

export function emailsOfCert(cert: pkijs.Certificate): string[] {
  const san = cert.extensions?.find((e) => e.extnID === '2.5.29.17');
  const names = (san?.parsedValue as pkijs.AltName | undefined)?.altNames ?? [];
  return names.filter((n) => n.type === 1).map((n) => String(n.value).toLowerCase());
}

/** The content a SignedData carries (null when detached) and its certificates, read without verifying anything. */
export function signedParts(der: Uint8Array): { sd: pkijs.SignedData; content: Uint8Array | null; certificates: pkijs.Certificate[] } {
  const sd = new pkijs.SignedData({ schema: contentInfo(der, OID_SIGNED).content });
  const attached = sd.encapContentInfo.eContent;
  const content = attached
    ? attached.idBlock.isConstructed
      ? concat(...(attached.valueBlock.value as asn1js.OctetString[]).map((c) => new Uint8Array(c.valueBlock.valueHexView)))
      : new Uint8Array(attached.valueBlock.valueHexView)
    : null;
  const certificates = (sd.certificates ?? []).filter((c): c is pkijs.Certificate => c instanceof pkijs.Certificate);
  return { sd, content, certificates };
}

/** Verifies a SignedData (attached, or detached with `content`); throws when the signature is bad. */
export async function verify(der: Uint8Array, opts: { content?: Uint8Array; trusted?: string[] } = {}): Promise<Verified> {
  const parts = signedParts(der);
  const sd = parts.sd;
  const content = opts.content ?? parts.content;
  if (!content) throw new Error('detached signature without the signed content');
  const result = await sd.verify({ signer: 0, data: ab(content), extendedMode: true, checkChain: false });
  if (!result.signatureVerified || !result.signerCertificate) throw new Error('the signature does not verify');
  let trusted = false;
  if (opts.trusted?.length) {
    const anchors = opts.trusted.map((t) => parseCertificate(t));
    const engine = new pkijs.CertificateChainValidationEngine({
      trustedCerts: anchors,
      certs: parts.certificates,
      checkDate: new Date(),
    });
    trusted = (await engine.verify()).result === true;
  }
  return { content, signerCertificate: result.signerCertificate, signerEmails: emailsOfCert(result.signerCertificate), trusted };
}
