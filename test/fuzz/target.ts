import type fc from 'fast-check';
import { isApiError } from '../../lib/errors/index.js';

/**
 * One fuzz target: a parser or decoder of the product fed arbitrary bytes. `fuzz(data)` has the
 * shape a Jazzer.js target exports (see README.md for why the engine here is not Jazzer.js), so a
 * target runs unchanged under either.
 */
export interface FuzzTarget {
  name: string;
  /** What the code is designed to throw for bad input; any other exception is a finding. */
  expected: (e: unknown) => boolean;
  /** Structure-aware inputs (the grammar the parser reads), valid and nearly valid. */
  generate: fc.Arbitrary<Buffer>;
  /** Tokens the mutator splices into seeds and generated inputs. */
  dictionary: string[];
  /** Inputs are cut to this length (bytes). */
  maxLength?: number;
  setup?: () => Promise<void>;
  teardown?: () => Promise<void>;
  fuzz: (data: Buffer) => void | Promise<void>;
}

/** A validation error of the catalogue (api-106 and its 4xx kin): what every parser here may answer. */
export const clientError =
  (...codes: string[]) =>
  (e: unknown): boolean =>
    isApiError(e) && e.status >= 400 && e.status < 500 && (!codes.length || codes.includes(e.code));

/** An invariant of the parsed result that does not hold: a finding like a crash. */
export function check(cond: unknown, what: string): asserts cond {
  if (!cond) throw new InvariantError(what);
}

export class InvariantError extends Error {
  override name = 'InvariantError';
}

export const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');
