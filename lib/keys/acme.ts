import { createPrivateKey, generateKeyPairSync, createPublicKey, createHash, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { calculateJwkThumbprint, exportJWK, FlattenedSign, type JWK } from 'jose';
import type { Config } from '../config/index.js';
import { checkedRequest, OutboundRefused, systemHostResolver } from '../http/index.js';

// A small ACME (RFC 8555) client for S/MIME certificates (RFC 8823, challenge type email-reply-00).

const ACME_TIMEOUT_MS = 30_000;
const ACME_MAX_BYTES = 1_048_576;
const NULL_BODY = new Set([204, 205, 304]);

export interface AcmeOrder {
  url: string;
  status: string;
  authorizations: string[];
  finalize: string;
  certificate?: string;
}

export interface EmailChallenge {
  url: string;
  status: string;
  /** token-part2 (base64url), from the challenge object. */
  token: string;
  /** The address the CA sends the challenge message from. */
  from: string;
}

/** The account key: P-256, PKCS#8 PEM, 0600; made on first use. */
export function loadAccountKey(file: string): KeyObject {
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return createPrivateKey(readFileSync(file));
}

/** RFC 8823 §3.1: base64url(SHA-256(token-part1 || token-part2 "." thumbprint)). */
export function emailReplyDigest(tokenPart1: string, tokenPart2: string, thumbprint: string): string {
  return createHash('sha256').update(`${tokenPart1}${tokenPart2}.${thumbprint}`).digest('base64url');
}

export class AcmeClient {
  #nonce: string | null = null;
  #kid: string | null = null;
  #dir: Record<string, string> | null = null;
  #jwk: JWK | null = null;

  /**
   * `config` gives the outbound check for URLs the CA names on another origin than its directory
   * (see #fetch); without it such URLs are refused.
   */
  constructor(
    readonly directoryUrl: string,
    readonly key: KeyObject,
    readonly contact = '',
    readonly config?: Config,
  ) {}

  /**
   * The directory is the administrator's; the URLs in its answers are the CA's. One on the
   * directory's origin is fetched as configured; one elsewhere is a target a remote party chose, so
   * it passes the outbound check (lib/http/outbound.ts). No redirects either way.
   */
  async #fetch(
    url: string,
    init: { method?: 'GET' | 'POST' | 'HEAD'; headers?: Record<string, string>; body?: string } = {},
  ): Promise<Response> {
    const target = new URL(url);
    if (target.origin === new URL(this.directoryUrl).origin)
      return fetch(target, { ...init, redirect: 'error', signal: AbortSignal.timeout(ACME_TIMEOUT_MS) });
    if (!this.config) throw new OutboundRefused(`the ACME server named ${target.origin}, another origin than its directory`);
    const answer = await checkedRequest(url, {
      ...init,
      config: this.config,
      resolve: systemHostResolver,
      timeoutMs: ACME_TIMEOUT_MS,
      maxBytes: ACME_MAX_BYTES,
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(answer.headers)) for (const one of [v ?? []].flat()) headers.append(k, one);
    return new Response(NULL_BODY.has(answer.status) ? null : new Uint8Array(answer.body), { status: answer.status, headers });
  }

  async thumbprint(): Promise<string> {
    return calculateJwkThumbprint(await this.#publicJwk());
  }

  async #publicJwk(): Promise<JWK> {
    this.#jwk ??= await exportJWK(createPublicKey(this.key));
    return this.#jwk;
  }

  async #directory(): Promise<Record<string, string>> {
    if (!this.#dir) {
      const res = await this.#fetch(this.directoryUrl);
      if (!res.ok) throw new Error(`ACME directory answered HTTP ${res.status}`);
      this.#dir = (await res.json()) as Record<string, string>;
    }
    return this.#dir;
  }

  async #freshNonce(): Promise<string> {
    if (this.#nonce) {
      const n = this.#nonce;
      this.#nonce = null;
      return n;
    }
    const res = await this.#fetch((await this.#directory()).newNonce!, { method: 'HEAD' });
    const n = res.headers.get('replay-nonce');
    if (!n) throw new Error('ACME server gave no nonce');
    return n;
  }

  /** A JWS POST (payload undefined: POST-as-GET). */
  async post(url: string, payload: unknown, useJwk = false): Promise<{ status: number; headers: Headers; body: unknown }> {
    const header: Record<string, unknown> = { alg: 'ES256', nonce: await this.#freshNonce(), url };
    if (useJwk) header.jwk = await this.#publicJwk();
    else header.kid = this.#kid ?? (await this.account());
    const jws = await new FlattenedSign(new TextEncoder().encode(payload === undefined ? '' : JSON.stringify(payload)))
      .setProtectedHeader(header as never)
      .sign(this.key);
    const res = await this.#fetch(url, { method: 'POST', headers: { 'content-type': 'application/jose+json' }, body: JSON.stringify(jws) });
    this.#nonce = res.headers.get('replay-nonce');
    const text = await res.text();
    const body = res.headers.get('content-type')?.includes('json') && text ? JSON.parse(text) : text;
    if (res.status >= 400) throw new Error(`ACME ${url} answered HTTP ${res.status}: ${JSON.stringify(body).slice(0, 200)}`);
    return { status: res.status, headers: res.headers, body };
  }

  async account(): Promise<string> {
    if (this.#kid) return this.#kid;
    const r = await this.post(
      (await this.#directory()).newAccount!,
      { termsOfServiceAgreed: true, ...(this.contact ? { contact: [this.contact] } : {}) },
      true,
    );
    this.#kid = r.headers.get('location');
    if (!this.#kid) throw new Error('ACME account without a location');
    return this.#kid;
  }

  async newOrder(email: string): Promise<AcmeOrder> {
    const r = await this.post((await this.#directory()).newOrder!, { identifiers: [{ type: 'email', value: email }] });
    return { ...(r.body as Omit<AcmeOrder, 'url'>), url: r.headers.get('location')! };
  }

  async order(url: string): Promise<AcmeOrder> {
    return { ...((await this.post(url, undefined)).body as Omit<AcmeOrder, 'url'>), url };
  }

  async emailChallenge(authzUrl: string): Promise<EmailChallenge> {
    const authz = (await this.post(authzUrl, undefined)).body as { challenges: Array<EmailChallenge & { type: string }> };
    const ch = authz.challenges.find((c) => c.type === 'email-reply-00');
    if (!ch) throw new Error('the CA offers no email-reply-00 challenge');
    return { url: ch.url, status: ch.status, token: ch.token, from: ch.from };
  }

  async respond(challengeUrl: string): Promise<void> {
    await this.post(challengeUrl, {});
  }

  async finalize(order: AcmeOrder, csrDer: Buffer): Promise<AcmeOrder> {
    const r = await this.post(order.finalize, { csr: csrDer.toString('base64url') });
    return { ...(r.body as Omit<AcmeOrder, 'url'>), url: order.url };
  }

  async certificate(url: string): Promise<string> {
    return String((await this.post(url, undefined)).body);
  }
}

/** The ACME client of the configured CA (mail:signing:acme:*), or null when none is configured. */
export function acmeClientFromConfig(config: Config): AcmeClient | null {
  const dir = config.get('mail:signing:acme:directory_url');
  if (!dir) return null;
  const file = config.get('mail:signing:acme:account_key_file') || `${config.get('data_dir').replace(/\/$/, '')}/pki/acme-account.key`;
  return new AcmeClient(dir, loadAccountKey(file), config.get('mail:signing:acme:contact'), config);
}
