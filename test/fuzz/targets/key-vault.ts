// The key vault's decoders (Spec: Key vault, Limits): the request shapes of lib/keys/shapes.ts (base64
// sizes, KDF strength, wraps), the PKCS#10 reader lib/pki parseCsr (the enrolment's encryptionCsr),
// all refused with api-106; and lib/keys/validate.ts checkFoundCertificate, which reads a
// certificate another server returned and answers {ok: false, reason} — it never throws.
// Input: one byte choosing the decoder, then its text.
import { parseOrThrow } from '../../../lib/errors/index.js';
import { parse as parseQuery } from 'node:querystring';
import fc from 'fast-check';
import { loadConfig } from '../../../lib/config/index.js';
import { addWrapSchema, enrolSchema, removeWrapQuery, wrapSchema } from '../../../lib/keys/shapes.js';
import { checkFoundCertificate } from '../../../lib/keys/validate.js';
import { parseCsr } from '../../../lib/pki/index.js';
import { address, numberText, text } from '../grammar.js';
import { check, clientError, type FuzzTarget } from '../target.js';

const config = loadConfig({ env: { NODE_ENV: 'test' } });
const schemas = [enrolSchema(config), addWrapSchema(config), wrapSchema(config)];

const b64 = fc.oneof(
  { arbitrary: fc.uint8Array({ maxLength: 220 }).map((u) => Buffer.from(u).toString('base64')), weight: 6 },
  {
    arbitrary: fc
      .constantFrom(12, 16, 32, 48, 60, 76, 91, 216)
      .chain((n) => fc.uint8Array({ minLength: n, maxLength: n }))
      .map((u) => Buffer.from(u).toString('base64')),
    weight: 4,
  },
  { arbitrary: fc.uint8Array({ maxLength: 64 }).map((u) => Buffer.from(u).toString('base64url')), weight: 1 },
  { arbitrary: fc.constantFrom('', '=', '====', 'AA=A', 'A'.repeat(11000), '\u0000', 'Zm9v\n'), weight: 1 },
);
const gcm = fc.record({ iv: b64, ciphertext: b64 });
const kdf = fc.record({
  name: fc.constantFrom('argon2id', 'argon2i', 'pbkdf2'),
  salt: b64,
  memoryKiB: fc.oneof(fc.integer(), fc.constantFrom(19456, 65536, 4194304, 4194305)),
  iterations: fc.integer({ min: -1, max: 100 }),
  parallelism: fc.integer({ min: 0, max: 20 }),
});
const wrap = fc.oneof(
  fc.tuple(gcm, kdf).map(([g, k]) => ({ method: 'password', mailboxUid: 'mbx', ...g, kdf: k })),
  fc
    .array(fc.tuple(b64, gcm), { maxLength: 9 })
    .map((codes) => ({ method: 'recovery codes', mailboxUid: 'mbx', codes: codes.map(([salt, g]) => ({ salt, ...g })) })),
  fc.tuple(gcm, b64, b64, fc.option(text(20), { nil: undefined })).map(([g, cred, prf, label]) => ({
    method: 'passkey',
    mailboxUid: 'mbx',
    ...g,
    credentialId: cred.replace(/=+$/, ''),
    prfSalt: prf,
    label,
  })),
  b64.map((envelope) => ({ method: 'escrow', mailboxUid: 'mbx', scopeUid: 's1', envelope })),
  fc.jsonValue({ maxDepth: 2 }),
);
const generation = fc.oneof(fc.nat(), fc.integer(), fc.constantFrom(2 ** 31, 2 ** 31 + 1, -1, 0.5));
const bodies = [
  fc.record({
    expectedMasterKeyGeneration: generation,
    signingPublicKey: b64,
    encryptionCsr: fc.oneof(b64, text(200)),
    sealedSigningKey: gcm,
    sealedEncryptionKey: gcm,
    wraps: fc.array(wrap, { maxLength: 3 }),
  }),
  fc.record({ expectedMasterKeyGeneration: generation, wrap }),
  wrap,
];
const input = fc.oneof(
  fc
    .tuple(fc.nat(2), fc.nat(2))
    .chain(([mode, which]) => bodies[which].map((b) => Buffer.concat([Buffer.from([mode]), Buffer.from(JSON.stringify(b))]))),
  fc
    .tuple(fc.constant(3), numberText)
    .map(([m, n]) => Buffer.concat([Buffer.from([m]), Buffer.from(`expectedMasterKeyGeneration=${encodeURIComponent(n)}`)])),
  fc
    .tuple(fc.constant(4), address, b64)
    .map(([m, a, der]) =>
      Buffer.concat([Buffer.from([m]), Buffer.from(`${a}\n-----BEGIN CERTIFICATE-----\n${der}\n-----END CERTIFICATE-----\n`)]),
    ),
  fc.tuple(fc.constant(5), b64).map(([m, der]) => Buffer.concat([Buffer.from([m]), Buffer.from(der)])),
);

const target: FuzzTarget = {
  name: 'key-vault',
  expected: clientError('api-106'),
  generate: input,
  dictionary: [
    '"method":"password"',
    '"kdf":{',
    '"wraps":[',
    '-----BEGIN CERTIFICATE-----\n',
    '-----END CERTIFICATE-----',
    '-----BEGIN CERTIFICATE REQUEST-----\n',
    'MII',
    '==',
    '\u0030\u0082',
  ],
  maxLength: 32 * 1024,
  async fuzz(data) {
    if (!data.length) return;
    const mode = data[0] % 6;
    const body = data.subarray(1).toString('utf8');
    if (mode <= 2) {
      let doc: unknown;
      try {
        doc = JSON.parse(body);
      } catch {
        return; // the JSON body parser answers 400 first
      }
      parseOrThrow(schemas[mode], doc, 'body');
    } else if (mode === 3) {
      parseOrThrow(removeWrapQuery, parseQuery(body), 'query');
    } else if (mode === 4) {
      const nl = body.indexOf('\n');
      const r = await checkFoundCertificate(nl < 0 ? body : body.slice(nl + 1), nl < 0 ? '' : body.slice(0, nl));
      check(r.ok ? r.fingerprint.length > 0 : r.reason.length > 0, 'an answer with a fingerprint or a reason');
    } else {
      const csr = await parseCsr(body, 'encryptionCsr');
      check(csr.publicKey.rawData.byteLength > 0, 'a parsed request has a key');
    }
  },
};
export default target;
