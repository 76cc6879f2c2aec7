// The error type lib/ throws and its shorthands; the HTTP mapping is in ./http.ts.
import { catalogue, type ErrorCode } from './catalogue.js';

export interface ErrorDetail {
  path: string;
  message: string;
}

/** The one error type lib/ throws. The edge (HTTP, CLI, WebSocket) maps it to its own form. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message?: string, opts: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(message ?? catalogue[code].message);
    this.name = 'ApiError';
    this.code = code;
    this.status = catalogue[code].status;
    this.details = opts.details;
    this.headers = opts.headers;
  }

  /** The spec's error body: code, status, message (plus details for validation errors). */
  toBody(): { code: ErrorCode; status: number; message: string; details?: ErrorDetail[] } {
    return this.details
      ? { code: this.code, status: this.status, message: this.message, details: this.details }
      : { code: this.code, status: this.status, message: this.message };
  }
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;

export const notFound = (what = 'Not found'): ApiError => new ApiError('api-107', what);
export const invalid = (message: string, details?: ErrorDetail[]): ApiError => new ApiError('api-106', message, { details });
export const conflict = (message?: string): ApiError => new ApiError('api-108', message);
export const denied = (message?: string): ApiError => new ApiError('api-102', message);
