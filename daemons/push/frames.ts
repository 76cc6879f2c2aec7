import { z } from 'zod';

/**
 * Client frames (Spec: Events 2 and Carrying the token 3). SUBSCRIBE adds channels; UNSUBSCRIBE
 * (our addition) drops some; LOGIN carries the token as data and may be sent again to renew it.
 */
export const clientFrame = z.discriminatedUnion('type', [
  z.object({ id: z.number().int().optional(), type: z.literal('LOGIN'), data: z.string().min(1).max(8192) }),
  z.object({ id: z.number().int(), type: z.literal('SUBSCRIBE'), data: z.array(z.string().min(1).max(200)).max(1000) }),
  z.object({ id: z.number().int(), type: z.literal('UNSUBSCRIBE'), data: z.array(z.string().min(1).max(200)).max(1000) }),
]);
export type ClientFrame = z.infer<typeof clientFrame>;

/** WebSocket close codes of /push: the application range mirrors the HTTP statuses. */
export const CLOSE = {
  /** No token within mail:push:login_timeout_ms, a bad LOGIN token, or the token expired. */
  signInRequired: 4401,
  /** Access to a subscribed channel was lost (recheck). */
  accessLost: 4403,
  /** A frame that is not JSON or not one of the client frames. */
  badFrame: 4400,
  /** Back-pressure: the client did not read fast enough (mail:push:max_buffered_bytes). */
  tooSlow: 4508,
  /** The daemon is stopping; reconnect (to another copy). */
  goingAway: 1001,
} as const;

export function errorFrame(id: number | undefined, code: string, message: string): string {
  return JSON.stringify({ ...(id !== undefined ? { id } : {}), type: 'ERROR', data: { code, message } });
}
