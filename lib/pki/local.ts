import * as x509 from '@peculiar/x509';
import { ApiError } from '../errors/index.js';
import { loadLocalCa, randomSerial, type LocalCa } from './ca.js';
import { toIssued, usagesOf, type IssueRequest, type Issued, type PkiBackend } from './certs.js';

/** Backend `local`: certificates from the self-signed P-256 CA; revocation lives in our records only. */
export class LocalPki implements PkiBackend {
  readonly name = 'local' as const;
  #ca: Promise<LocalCa> | null = null;

  constructor(
    readonly dir: string,
    readonly days: number,
  ) {}

  #loadCa(): Promise<LocalCa> {
    this.#ca ??= loadLocalCa(this.dir).catch((e: unknown) => {
      this.#ca = null;
      throw new ApiError('api-113', `the local CA in ${this.dir} is not readable (run svcmail setup): ${(e as Error).message}`);
    });
    return this.#ca;
  }

  async caCertificates(): Promise<string[]> {
    return [(await this.#loadCa()).certPem];
  }

  async issue(req: IssueRequest): Promise<Issued> {
    const ca = await this.#loadCa();
    const { ku, eku } = usagesOf(req.kind);
    const now = Date.now();
    const notAfter = new Date(Math.min(now + this.days * 86_400_000, ca.cert.notAfter.getTime()));
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: `E=${req.emails[0]}`,
      issuer: ca.cert.subject,
      notBefore: new Date(now - 60_000),
      notAfter,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      publicKey: req.csr.publicKey,
      signingKey: ca.privateKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(ku, true),
        new x509.ExtendedKeyUsageExtension(eku, false),
        new x509.SubjectAlternativeNameExtension(
          req.emails.map((e) => ({ type: 'email' as const, value: e })),
          false,
        ),
        await x509.SubjectKeyIdentifierExtension.create(req.csr.publicKey),
        await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
      ],
    });
    return toIssued(cert, [ca.certPem]);
  }

  /** Nothing to tell anyone: the caller records the revocation (no CRL, no OCSP). */
  async revoke(): Promise<void> {}
}
