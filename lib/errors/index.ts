// Errors: the catalogue of the spec's codes, the one error type lib/ throws, and its HTTP mapping.
export { catalogue, type ErrorCode, type ErrorDef } from './catalogue.js';
export { ApiError, conflict, denied, invalid, isApiError, notFound, type ErrorDetail } from './api-error.js';
export { errorHandler, notFoundHandler } from './http.js';
export { parseOrThrow } from './parse.js';
