// The reference client of the key vault and S/MIME. Runs in Node and browsers: WebCrypto, pkijs,
// hash-wasm's WASM Argon2id. The server never sees what this code keeps in memory.
export * from './format.js';
export * from './bytes.js';
export * from './vault.js';
export { envelope, openEnvelope, sign, verify, kdfX963, parseCertificate, emailsOfCert, type Verified } from './cms.js';
export * from './smime.js';
export * from './session.js';
