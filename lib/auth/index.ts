export * from './principal.js';
export { TokenVerifier } from './verify.js';
export { authenticate, cookiesOf, devAutoLoginActive, devPrincipal, tokenSecret } from './middleware.js';
export { signToken, type SignOptions } from './sign.js';
