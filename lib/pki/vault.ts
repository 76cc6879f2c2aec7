import * as x509 from '@peculiar/x509';
import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import { emailsOf, spkiOf, toIssued, type IssueRequest, type Issued, type PkiBackend } from './certs.js';

export interface VaultOptions {
  addr: string;
  token: string;
  namespace: string;
  mount: string;
  role: string;
  ttl: string;
  timeoutMs: number;
}

const signAnswer = z.object({
  data: z.object({
    certificate: z.string().min(1),
    issuing_ca: z.string().optional(),
    ca_chain: z.array(z.string()).optional(),
    serial_number: z.string().min(1),
  }),
});

/** "39:dd:2e" (Vault's form) ↔ "39dd2e" (ours). */
const colonHex = (serial: string) =>
  serial
    .toLowerCase()
    .replace(/[^0-9a-f]/g, '')
    .replace(/(..)(?=.)/g, '$1:');

/**
 * Backend `vault`: an external PKI vault (HashiCorp Vault's PKI secrets engine API). Signs the
 * client's CSR at <mount>/sign/<role> and revokes at <mount>/revoke. What comes back is checked: the
 * certificate must name the requested key and addresses.
 */
export class VaultPki implements PkiBackend {
  readonly name = 'vault' as const;
  constructor(readonly opts: VaultOptions) {}

  async #call(path: string, body: unknown): Promise<unknown> {
    if (!this.opts.addr) throw new ApiError('api-113', 'mail:pki:vault:addr is not set');
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-vault-token': this.opts.token };
    if (this.opts.namespace) headers['x-vault-namespace'] = this.opts.namespace;
    let res: Response;
    try {
      res = await fetch(`${this.opts.addr.replace(/\/$/, '')}/v1/${this.opts.mount}/${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        redirect: 'error',
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
    } catch (e) {
      throw new ApiError('api-113', `the PKI vault does not answer: ${(e as Error).message}`);
    }
    const text = await res.text();
    if (!res.ok) {
      let reason = `HTTP ${res.status}`;
      try {
        const errs = (JSON.parse(text) as { errors?: unknown[] }).errors;
        if (Array.isArray(errs) && errs.length) reason += `: ${errs.map(String).join('; ').slice(0, 300)}`;
      } catch {
        /* not JSON */
      }
      throw new ApiError('api-113', `the PKI vault refused the request (${reason})`);
    }
    try {
      return text ? JSON.parse(text) : {};
    } catch {
      throw new ApiError('api-113', 'the PKI vault answered something that is not JSON');
    }
  }

  async issue(req: IssueRequest): Promise<Issued> {
    const answer = signAnswer.safeParse(
      await this.#call(`sign/${this.opts.role}`, {
        csr: req.csr.toString('pem'),
        common_name: req.emails[0],
        alt_names: req.emails.join(','),
        ttl: this.opts.ttl,
        format: 'pem',
      }),
    );
    if (!answer.success) throw new ApiError('api-113', 'the PKI vault answered without a certificate');
    let cert: x509.X509Certificate;
    try {
      cert = new x509.X509Certificate(answer.data.data.certificate);
    } catch {
      throw new ApiError('api-113', 'the PKI vault answered with a certificate that does not parse');
    }
    if (!spkiOf(cert).equals(spkiOf(req.csr))) throw new ApiError('api-113', 'the PKI vault issued a certificate for another key');
    const emails = emailsOf(cert);
    if (!req.emails.every((e) => emails.includes(e.toLowerCase())))
      throw new ApiError('api-113', 'the PKI vault issued a certificate without the mailbox address');
    const chain = answer.data.data.ca_chain?.length
      ? answer.data.data.ca_chain
      : answer.data.data.issuing_ca
        ? [answer.data.data.issuing_ca]
        : [];
    return toIssued(cert, chain);
  }

  async revoke(serial: string): Promise<void> {
    await this.#call('revoke', { serial_number: colonHex(serial) });
  }

  async caCertificates(): Promise<string[]> {
    return [];
  }
}
