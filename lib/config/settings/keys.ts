import { z } from 'zod';
import { setting } from '../define.js';

const nameserver = z
  .string()
  .regex(
    /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\])(:\d{1,5})?$/,
    'must be an IP address with an optional :port, e.g. 127.0.0.1:53 or [::1]:53',
  );

// End-to-end encryption on the server side. Spec: Versioning (PKI backends, signing-enrolment
// backends), Key vault, Discovered keys, Finding the server from an address, Limits.
// mail:pki:local_ca:dir is declared with the appliance settings (svcmail setup writes it).
export const keySettings = {
  'mail:pki:backend': setting(z.enum(['local', 'vault']), {
    default: 'local',
    doc: 'Who issues encryption certificates: local (the self-signed P-256 CA in mail:pki:local_ca:dir; revocation recorded in our own records, no CRL/OCSP) or vault (an external PKI vault: <mount>/sign/<role>, <mount>/revoke).',
  }),
  'mail:pki:cert_days': setting(z.number().int().min(1).max(3650), {
    default: 730,
    doc: 'Validity of encryption certificates the local CA issues, in days.',
  }),
  'mail:pki:vault:addr': setting(z.union([z.url(), z.literal('')]), {
    default: '',
    doc: 'Base URL of the PKI vault (for instance https://vault.internal:8200); required with mail:pki:backend vault.',
  }),
  'mail:pki:vault:token': setting(z.string(), { default: '', secret: true, doc: 'Token sent as X-Vault-Token to the PKI vault.' }),
  'mail:pki:vault:namespace': setting(z.string(), { default: '', doc: 'Vault namespace (X-Vault-Namespace header); empty for none.' }),
  'mail:pki:vault:mount': setting(z.string().regex(/^[A-Za-z0-9_/-]{1,200}$/), {
    default: 'pki',
    doc: 'Mount path of the PKI secrets engine; certificates are signed at /v1/<mount>/sign/<role> and revoked at /v1/<mount>/revoke.',
  }),
  'mail:pki:vault:role': setting(z.string().regex(/^[A-Za-z0-9_.-]{1,200}$/), {
    default: 'svcmail-email',
    doc: 'PKI role that signs encryption certificates (email protection, key agreement).',
  }),
  'mail:pki:vault:ttl': setting(z.string().regex(/^\d+[smhd]?$/), {
    default: '17520h',
    doc: 'Requested certificate lifetime (Vault duration syntax).',
  }),
  'mail:pki:vault:timeout_ms': setting(z.number().int().positive(), { default: 10_000, doc: 'Timeout of one call to the PKI vault.' }),

  'mail:dns:resolver': setting(z.enum(['system', 'doh-dnssec']), {
    default: 'system',
    doc: "DNS for key discovery (_svc.<domain> TXT): system (node's resolver, servers from mail:dns:nameservers or the system's) or doh-dnssec (DNS over HTTPS at mail:dns:doh_url; answers without the DNSSEC AD bit are refused).",
  }),
  'mail:dns:nameservers': setting(z.array(nameserver), {
    default: [],
    doc: "Name servers node's resolver asks for key discovery (ip or ip:port); empty means the system resolvers.",
  }),
  'mail:dns:doh_url': setting(z.url(), {
    default: 'https://cloudflare-dns.com/dns-query',
    doc: 'DNS-over-HTTPS endpoint (RFC 8484, POST application/dns-message) for mail:dns:resolver doh-dnssec; it must validate DNSSEC.',
  }),
  'mail:dns:timeout_ms': setting(z.number().int().positive(), { default: 3000, doc: 'Timeout of one DNS question for key discovery.' }),

  'mail:keys:federation:url_template': setting(
    z.string().regex(/^https?:\/\/\{host\}(:\d{1,5})?\/?$/, 'must be https://{host} or https://{host}:<port> (http only for tests)'),
    {
      default: 'https://{host}',
      doc: 'How the host= of a _svc.<domain> record becomes a base URL for /.well-known/svc/keys: https://{host}, or https://{host}:<port> for a federation of servers on another port. A record cannot name a port itself. Keep https outside tests.',
    },
  ),
  'mail:keys:federation:timeout_ms': setting(z.number().int().positive(), {
    default: 5000,
    doc: "Timeout of one call to another server's /.well-known/svc/keys route.",
  }),
  'mail:keys:federation:max_response_bytes': setting(z.number().int().positive(), {
    default: 65_536,
    doc: "Largest answer accepted from another server's key route.",
  }),
  'mail:keys:federation:cache_seconds': setting(z.number().int().min(0).max(86_400), {
    default: 300,
    doc: 'How long send remembers whether a recipient domain has a _svc record (federated or external, Spec: Encryption policy); 0 asks DNS on every send.',
  }),
  'mail:keys:federation:send_timeout_ms': setting(z.number().int().min(50).max(30_000), {
    default: 1500,
    doc: 'Longest send waits for the _svc record of a recipient domain; an unanswered domain counts as external for the encryption policy.',
  }),
  'mail:keys:lookup_floor_ms': setting(z.number().int().min(0).max(5000), {
    default: 50,
    doc: 'GET /.well-known/svc/keys answers no sooner than this after the request arrived, whether or not the address exists (hides existence in the timing).',
  }),

  'mail:keys:argon2:min_memory_kib': setting(z.number().int().min(8192), {
    default: 19_456,
    doc: 'Smallest Argon2id memory (KiB) a password wrap may declare.',
  }),
  'mail:keys:argon2:min_iterations': setting(z.number().int().min(1), {
    default: 2,
    doc: 'Fewest Argon2id iterations a password wrap may declare.',
  }),
  'mail:keys:max_passkeys': setting(z.number().int().min(1).max(100), { default: 10, doc: 'Most passkey wraps one vault holds.' }),

  'mail:signing:backend': setting(z.enum(['manual', 'rfc8823', 'auto']), {
    default: 'manual',
    doc: 'Signing-certificate enrolment: manual (administrators complete requests by hand), rfc8823 (ACME for S/MIME) or auto (rfc8823 for a real domain, manual for local test domains).',
  }),
  'mail:signing:acme:directory_url': setting(z.union([z.url(), z.literal('')]), {
    default: '',
    doc: 'ACME directory of the CA for rfc8823 enrolment.',
  }),
  'mail:signing:acme:contact': setting(z.string(), { default: '', doc: 'Contact (mailto:) of the ACME account; empty for none.' }),
  'mail:signing:acme:account_key_file': setting(z.string(), {
    default: '',
    doc: 'PEM file of the ACME account key (P-256); empty means <data_dir>/pki/acme-account.key, created on first use.',
  }),
  'mail:jobs:signing_enrollment:interval_seconds': setting(z.number().positive(), {
    default: 60,
    doc: 'Period of the signing-enrolment driver job.',
  }),
  'mail:jobs:signing_enrollment:lease_seconds': setting(z.number().int().min(10).max(3600), {
    default: 120,
    doc: 'Lease of the signing-enrolment driver job on the requests it advances; a worker that dies frees them when it ends.',
  }),
};
