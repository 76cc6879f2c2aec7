// The shared body of the authorization-matrix test files: each drives one slice of the operations
// on every backend (SQL; MongoDB when SVCMAIL_TEST_MONGO_URL names a replica set; the document adapter over the in-memory stand-in) and asserts on the tally.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeBackends } from '../../helpers/databases.js';
import { LEAK_ALLOWANCES } from './leaks.js';
import type { ApiOperation, Target } from './operations.js';
import { PLACEHOLDER_PARAMS } from './requests.js';
import { openMatrix, runMatrix, SKIPPED, type Matrix } from './run.js';

const backends = await storeBackends({ standIn: true });

export function matrixSuite(slice: string, pick: (op: ApiOperation, t: Target) => boolean, floor: { operations: number }): void {
  describe.each(backends)(`authorization matrix: ${slice} ($name)`, (backend) => {
    let m: Matrix;
    beforeAll(async () => {
      m = await openMatrix(backend);
    }, 120_000);
    afterAll(async () => m?.close());

    it("every operation answers every kind of caller as its declaration says; no answer shows the owner's data to anyone else", async () => {
      // The exceptions stay few and explained (a growing list would hollow the matrix out).
      expect(SKIPPED.length).toBeLessThanOrEqual(2);
      expect(Object.keys(PLACEHOLDER_PARAMS).length).toBeLessThanOrEqual(4);
      expect(LEAK_ALLOWANCES.length).toBeLessThanOrEqual(10);
      const t = await runMatrix(m, pick);
      expect(t.failures, t.failures.slice(0, 25).join('\n')).toEqual([]);
      expect(t.unaimed, "mailbox-scoped routes not aimed at the owner's data").toEqual([]);
      expect(t.skipped).toBeLessThanOrEqual(10);
      expect(t.operations).toBeGreaterThanOrEqual(floor.operations);
      // Fewer denials than the declarations imply means some route was not really exercised.
      expect(t.denials).toBeGreaterThanOrEqual(t.minimumDenials);
      expect(t.leaks).toBe(0);
      process.stdout.write(
        `authorization matrix (${slice}, ${backend.name}): ${t.operations} operations, ${t.requests} requests, ${t.denials} denials checked (declared floor ${t.minimumDenials}), ${t.stateChecks} stored-state checks, ${t.skipped} skipped, ${t.leaks} leaks\n`,
      );
    }, 300_000);
  });
}
