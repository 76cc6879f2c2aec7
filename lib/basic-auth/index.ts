// App passwords over HTTP Basic on mail:basic_auth:paths: checked with the sign-in service, throttled.
// Above lib/mail in the layer order: a mailbox address signs in as its owner.
export { basicAuth, isBasicAuthPath, type BasicAuthDeps } from './basic.js';
