import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { calculateJwkThumbprint, flattenedVerify, importJWK, type FlattenedJWSInput, type JWK } from 'jose';
import { LocalPki, parseCsr } from '../../../lib/pki/index.js';

// A local ACME CA for S/MIME (RFC 8555 + RFC 8823 email-reply-00): verifies every JWS and nonce,
// mails a challenge (handed to `onChallenge`), checks the reply mail's digest, then issues from its
// own CA. It stands in for the external CA, speaking the same HTTP contract. Like a real CA it
// validates asynchronously: once the client POSTs to the challenge, the challenge is "processing"
// until a reply with the right digest arrives (and passes `verifyReply`, e.g. a DKIM check).
// `validationMs` after the POST without one, the order becomes invalid.

export interface ChallengeMail {
  to: string;
  from: string;
  subject: string;
  messageId: string;
}

export class AcmeDouble {
  server!: Server;
  url = '';
  readonly nonces = new Set<string>();
  readonly accounts = new Map<string, JWK>();
  readonly orders = new Map<
    string,
    { email: string; status: string; part1: string; part2: string; kid: string; cert?: string; digest?: string; deadline?: number }
  >();
  readonly from = 'acme-challenge@ca.test';
  /** Every reply received, and those `verifyReply` passed. */
  replies: string[] = [];
  accepted: string[] = [];
  validationMs = 60_000;

  constructor(
    readonly ca: LocalPki,
    readonly onChallenge: (m: ChallengeMail) => void,
    readonly verifyReply: (raw: string) => Promise<boolean> = async () => true,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () =>
        this.#handle(req.method!, req.url!, raw).then(
          ([status, body, headers]) => {
            const nonce = randomBytes(12).toString('base64url');
            this.nonces.add(nonce);
            res.writeHead(status, { 'replay-nonce': nonce, 'cache-control': 'no-store', ...headers });
            res.end(typeof body === 'string' ? body : JSON.stringify(body));
          },
          (e: Error) => {
            res.writeHead(400, { 'content-type': 'application/problem+json' });
            res.end(JSON.stringify({ type: 'urn:ietf:params:acme:error:malformed', detail: e.message }));
          },
        ),
      );
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** What the reply mailer delivers to the CA's challenge address. */
  async receiveReply(raw: string): Promise<void> {
    this.replies.push(raw);
    if (await this.verifyReply(raw)) this.accepted.push(raw);
  }

  /** RFC 8823 §3.2: the reply answers the challenge (Subject, digest) from the address being validated. */
  #validate(o: { email: string; status: string; part1: string; digest?: string; deadline?: number }): void {
    if (o.status !== 'processing') return;
    const ok = this.accepted.some(
      (r) =>
        r.includes(`Subject: Re: ACME: ${o.part1}`) &&
        r.includes(`-----BEGIN ACME RESPONSE-----\r\n${o.digest}\r\n-----END ACME RESPONSE-----`) &&
        r.includes(`From: <${o.email}>`),
    );
    if (ok) o.status = 'ready';
    else if (Date.now() > (o.deadline ?? 0)) o.status = 'invalid';
  }

  async #verify(raw: string, url: string): Promise<{ payload: unknown; kid: string; jwk: JWK }> {
    const jws = JSON.parse(raw) as FlattenedJWSInput;
    const header = JSON.parse(Buffer.from(jws.protected!, 'base64url').toString()) as {
      alg: string;
      nonce: string;
      url: string;
      jwk?: JWK;
      kid?: string;
    };
    if (!this.nonces.delete(header.nonce)) throw new Error('bad nonce');
    if (header.url !== url) throw new Error('url mismatch');
    const jwk = header.jwk ?? this.accounts.get(header.kid ?? '');
    if (!jwk) throw new Error('unknown account');
    const { payload } = await flattenedVerify(jws, await importJWK(jwk, header.alg));
    const text = new TextDecoder().decode(payload);
    return { payload: text ? JSON.parse(text) : undefined, kid: header.kid ?? '', jwk };
  }

  async #handle(method: string, path: string, raw: string): Promise<[number, unknown, Record<string, string>?]> {
    const u = this.url;
    const json = { 'content-type': 'application/json' };
    if (path === '/directory') return [200, { newNonce: `${u}/nonce`, newAccount: `${u}/acct`, newOrder: `${u}/order` }, json];
    if (path === '/nonce') return [200, ''];
    if (method !== 'POST') return [405, ''];
    const { payload, kid, jwk } = await this.#verify(raw, u + path);
    if (path === '/acct') {
      const id = `${u}/acct/${this.accounts.size + 1}`;
      this.accounts.set(id, jwk);
      return [201, { status: 'valid' }, { ...json, location: id }];
    }
    if (path === '/order') {
      const email = (payload as { identifiers: Array<{ type: string; value: string }> }).identifiers[0]!;
      if (email.type !== 'email') throw new Error('email identifiers only');
      const id = String(this.orders.size + 1);
      const part1 = randomBytes(16).toString('base64url');
      const part2 = randomBytes(16).toString('base64url');
      this.orders.set(id, { email: email.value, status: 'pending', part1, part2, kid });
      this.onChallenge({ to: email.value, from: this.from, subject: `ACME: ${part1}`, messageId: `<chal-${id}@ca.test>` });
      return [201, this.#order(id), { ...json, location: `${u}/order/${id}` }];
    }
    const m = /^\/(order|authz|chall|finalize|cert)\/(\d+)$/.exec(path);
    const o = m && this.orders.get(m[2]!);
    if (!m || !o || o.kid !== kid) return [404, { type: 'urn:ietf:params:acme:error:malformed' }, json];
    const id = m[2]!;
    this.#validate(o);
    switch (m[1]) {
      case 'order':
        return [200, this.#order(id), json];
      case 'authz':
        return [
          200,
          {
            status: ['pending', 'processing'].includes(o.status) ? 'pending' : o.status === 'invalid' ? 'invalid' : 'valid',
            identifier: { type: 'email', value: o.email },
            challenges: [
              {
                type: 'email-reply-00',
                url: `${u}/chall/${id}`,
                status:
                  o.status === 'pending'
                    ? 'pending'
                    : o.status === 'processing'
                      ? 'processing'
                      : o.status === 'invalid'
                        ? 'invalid'
                        : 'valid',
                token: o.part2,
                from: this.from,
              },
            ],
          },
          json,
        ];
      case 'chall': {
        if (o.status === 'pending') {
          o.digest = createHash('sha256')
            .update(`${o.part1}${o.part2}.${await calculateJwkThumbprint(jwk)}`)
            .digest('base64url');
          o.deadline = Date.now() + this.validationMs;
          o.status = 'processing';
          this.#validate(o);
        }
        return [
          200,
          { type: 'email-reply-00', status: o.status === 'processing' ? 'processing' : o.status === 'invalid' ? 'invalid' : 'valid' },
          json,
        ];
      }
      case 'finalize': {
        if (o.status !== 'ready') return [403, { type: 'urn:ietf:params:acme:error:orderNotReady' }, json];
        const csr = await parseCsr(Buffer.from((payload as { csr: string }).csr, 'base64url').toString('base64'));
        o.cert = (await this.ca.issue({ csr, emails: [o.email], kind: 'signing' })).certPem;
        o.status = 'valid';
        return [200, this.#order(id), json];
      }
      case 'cert':
        return [200, o.cert ?? '', { 'content-type': 'application/pem-certificate-chain' }];
    }
    return [404, ''];
  }

  #order(id: string) {
    const o = this.orders.get(id)!;
    return {
      status: o.status === 'processing' ? 'pending' : o.status,
      identifiers: [{ type: 'email', value: o.email }],
      authorizations: [`${this.url}/authz/${id}`],
      finalize: `${this.url}/finalize/${id}`,
      ...(o.cert ? { certificate: `${this.url}/cert/${id}` } : {}),
    };
  }
}
