import type { z } from 'zod';
import { invalid, type ErrorDetail } from './api-error.js';

/** Parse with a schema or throw 400 api-106 naming every problem (`what` says which part of the request). */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const res = schema.safeParse(value);
  if (res.success) return res.data;
  const details: ErrorDetail[] = res.error.issues.map((i) => ({ path: i.path.join('.') || '(body)', message: i.message }));
  throw invalid(`${what}: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, details);
}
