import {
  HANDLER_TIME_OVER_PEER_TARGET,
  handlerTimeOverPeer,
  handlerTimeSection,
  handlerTimeTargetMet,
  type HandlerTimeResults,
  type HandlerVariant,
  type JobTypeHandlerTime,
  type TimeFigure,
  type VariantFigure,
} from '../../../bench/handler-time';

/** A figure whose p50 and p99 are the given values. */
function times(p50: number, p99: number): TimeFigure {
  return { count: 100, p50, p99, max: p99 };
}

/** A job type whose variants' handler times are the given p50 / p99 pairs. */
function jobOf(handler: Partial<Record<HandlerVariant, [number, number]>>): JobTypeHandlerTime {
  return {
    jobType: 'payment.capture',
    queueKind: 'fifo',
    batchSize: 10,
    variants: Object.entries(handler).map(([variant, [p50, p99]]): VariantFigure => ({
      variant: variant as HandlerVariant,
      host: times(p50 + 1, p99 + 1),
      hostShare: times(1, 1),
      handler: times(p50, p99),
      handlerCpu: times(p50 / 4, p99 / 4),
      requestsPerBatch: variant === 'bare' ? {} : { 'DynamoDB_20120810.UpdateItem': 20 },
      requestMsPerBatch: variant === 'bare' ? {} : { 'DynamoDB_20120810.UpdateItem': 200 },
    })),
  };
}

describe('Module: bench/handler-time', () => {
  describe('Function: handlerTimeTargetMet', () => {
    it('when tenang is within the target at p50 and at p99, it is met', () => {
      // Prepare
      const job = jobOf({ tenang: [80, 160], peer: [100, 200], bare: [0, 0] });

      // Act
      const met = handlerTimeTargetMet(job);

      // Assess
      expect(handlerTimeOverPeer(job)).toEqual({ p50: 0.8, p99: 0.8 });
      expect(met).toBe(true);
    });

    it.each([
      ['p50', [81, 100]],
      ['p99', [50, 161]],
    ] as const)('when tenang is over the target at %s only, it is not met', (_at, tenang) => {
      // Prepare
      const job = jobOf({ tenang: [...tenang], peer: [100, 200] });

      // Act
      const met = handlerTimeTargetMet(job);

      // Assess
      expect(met).toBe(false);
    });

    it('when a job type has no peer figures, it is not judged met', () => {
      // Prepare
      const job = jobOf({ tenang: [10, 20], bare: [0, 0] });

      // Act
      const ratio = handlerTimeOverPeer(job);

      // Assess
      expect(ratio).toBeUndefined();
      expect(handlerTimeTargetMet(job)).toBe(false);
    });
  });

  describe('Function: handlerTimeSection', () => {
    it('when rendered, it has a row per job type and variant, the verdict on tenang’s row and the count of job types met', () => {
      // Prepare
      const results: HandlerTimeResults = {
        sizes: { warmupRounds: 1, rounds: 100 },
        jobs: [
          jobOf({ tenang: [80, 150], peer: [100, 200], bare: [0, 0] }),
          { ...jobOf({ tenang: [300, 600], peer: [100, 200], bare: [0, 0] }), jobType: 'notification.send' },
        ],
        unmeasuredJobTypes: ['invoice.issue'],
        wallSeconds: 60,
      };

      // Act
      const section = handlerTimeSection(results).join('\n');

      // Assess
      const rows = section.split('\n').filter((l) => /^\| (payment|notification)/.test(l));
      expect(rows).toHaveLength(6);
      expect(rows.filter((r) => r.endsWith('| met |'))).toHaveLength(1);
      expect(rows.filter((r) => r.endsWith('| **not met** |'))).toHaveLength(1);
      expect(section).toContain(`≤ ${HANDLER_TIME_OVER_PEER_TARGET} × the peer's`);
      expect(section).toContain('**met by 1 of 2** job types');
      expect(section).toContain('Not measured (no by-the-book peer): invoice.issue');
      expect(section).toContain('UpdateItem 20');
      expect(section).not.toMatch(/NaN|undefined/);
    });
  });
});
