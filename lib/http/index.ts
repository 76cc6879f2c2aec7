// HTTP plumbing shared by every router: the call context, middleware, rate limits, the OpenAPI
// registry, checked outbound requests and the upgrade limits of the WebSocket endpoints.
import './types.js'; // the Express Request fields (principal, requestId, log) this layer adds
export * from './context.js';
export * from './define-route.js';
export * from './failure-counters.js';
export * from './middleware.js';
export * from './openapi.js';
export * from './outbound.js';
export * from './rate-limit.js';
export * from './compose.js';
export * from './upgrade-limit.js';
export * from './well-known.js';
export * from './session.js';
