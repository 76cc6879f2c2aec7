/** Spec: Mail transport send request — raw, envelopeFrom, envelopeTo; reports accepted and refused recipients. */
export interface TransportRequest {
  raw: Buffer;
  envelopeFrom: string;
  envelopeTo: string[];
  /** Idempotency key: providers that can deduplicate get it (the cloud API as Idempotency-Key). */
  id?: string;
}

export interface Refusal {
  rcpt: string;
  reason: string;
  /** false: try again later (EX_TEMPFAIL, timeouts, 5xx); true: refused outright. */
  permanent: boolean;
  /**
   * The hand-off may or may not have happened (a sendmail command killed after it read the whole
   * message): sending again could duplicate, so the send job never retries it blind.
   */
  ambiguous?: boolean;
}

export interface TransportResult {
  accepted: string[];
  refused: Refusal[];
}

export interface Transport {
  readonly name: string;
  send(req: TransportRequest): Promise<TransportResult>;
  /** Throws with a fix hint when the transport cannot work (svcmail doctor). */
  check(): Promise<void>;
}

export const allRefused = (rcpts: readonly string[], reason: string, permanent: boolean): TransportResult => ({
  accepted: [],
  refused: rcpts.map((rcpt) => ({ rcpt, reason, permanent })),
});
