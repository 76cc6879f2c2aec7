import type { z } from 'zod';
import { invalid, type ErrorDetail } from './api-error.js';

/** Parse with a schema or throw 400 api-106 naming every problem (`what` says which part of the request). */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const res = schema.safeParse(value);
  if (res.success) return res.data;
  // A problem with the whole value (a wrong type, an unknown key) is named by the part of the request.
  const root = what === 'query' || what === 'path' ? `(${what})` : '(body)';
  const details: ErrorDetail[] = res.error.issues.map((i) => ({ path: i.path.join('.') || root, message: i.message }));
  throw invalid(`${what}: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, details);
}
