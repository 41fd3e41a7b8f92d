import {
  buildReport,
  deriveSeries,
  perInterval,
  REPORT_SCHEMA_VERSION,
  summarizeDlq,
} from '../../../lib/local/report-model';
import {
  JOB_TYPES,
  STREAM_CONSUMERS,
  syntheticInput,
  syntheticSamples,
} from '../../fixtures/synthetic-report';
import { cacheHitRatioSeries, cacheTotals } from '../../../examples/reference/local/scenario-order-flow';

describe('Module: report-model', () => {
  describe('Function: perInterval', () => {
    it('when counters grow, it returns the growth per interval with 0 first', () => {
      // Act
      const deltas = perInterval([0, 2, 5, 5, 9]);

      // Assess
      expect(deltas).toEqual([0, 2, 3, 0, 4]);
    });

    it('when a counter goes back (a reset), it counts that interval as 0, never negative', () => {
      // Act
      const deltas = perInterval([4, 6, 1, 3]);

      // Assess
      expect(deltas).toEqual([0, 2, 0, 2]);
    });
  });

  describe('Function: deriveSeries', () => {
    it('when samples come once a second, every series is aligned on their times', () => {
      // Prepare
      const samples = syntheticSamples(40);

      // Act
      const series = deriveSeries(samples, JOB_TYPES, STREAM_CONSUMERS);

      // Assess
      expect(series.tSeconds).toHaveLength(41);
      expect(series.tSeconds[0]).toBe(0);
      expect(series.tSeconds[40]).toBe(40);
      for (const record of [series.depth, series.inFlight, series.oldestAgeSeconds]) {
        expect(Object.keys(record)).toEqual(JOB_TYPES.map((j) => j.name));
        for (const values of Object.values(record)) expect(values).toHaveLength(41);
      }
      expect(Object.keys(series.dlq)).toEqual([...JOB_TYPES.map((j) => j.name), ...STREAM_CONSUMERS]);
      expect(Object.keys(series.retries)).toEqual([...JOB_TYPES.map((j) => j.name), ...STREAM_CONSUMERS]);
    });

    it('when a consumer retries, its retries series holds the retries of each interval', () => {
      // Prepare: payment-consumer's JobRetried grows by 3 per second from 10 s to 19 s.
      const samples = syntheticSamples(40);

      // Act
      const series = deriveSeries(samples, JOB_TYPES, STREAM_CONSUMERS);

      // Assess
      const retries = series.retries['payment.capture'] ?? [];
      expect(retries.slice(9, 13)).toEqual([0, 3, 3, 3]);
      expect(retries.reduce((a, b) => a + b, 0)).toBe(30);
      expect(series.retries['cache-invalidator']?.[22]).toBe(12);
    });

    it('when an interval has reads, its hit ratio is hits over reads; without reads it is null', () => {
      // Prepare: 3 hits and 1 miss per second, then a second without reads.
      const samples = syntheticSamples(3);
      const quiet = { ...samples[3], atMs: 4_000 } as (typeof samples)[number];
      samples.push(quiet);

      // Act: the reference's order flow's series (its report section).
      const ratio = cacheHitRatioSeries(samples);

      // Assess
      expect(ratio).toEqual([null, 0.75, 0.75, 0.75, null]);
    });

    it('when a sample lacks a queue (the emulator did not answer), that point is 0', () => {
      // Prepare
      const samples = syntheticSamples(2);
      const gap = { ...samples[1], queues: {} } as (typeof samples)[number];
      samples[1] = gap;

      // Act
      const series = deriveSeries(samples, JOB_TYPES, STREAM_CONSUMERS);

      // Assess
      expect(series.inFlight['payment.capture']).toEqual([1, 0, 1]);
    });
  });

  describe('Function: summarizeDlq', () => {
    it('when dead letters of several classes arrive, it counts them per queue and class, queues in the given order', () => {
      // Prepare
      const input = syntheticInput();

      // Act
      const summary = summarizeDlq(input.dlqQueues, input.dlqEntries);

      // Assess
      expect(summary.map((s) => [s.queue, s.total])).toEqual([
        ['tenang-dev-payment-capture-dlq.fifo', 1],
        ['tenang-dev-notification-send-dlq', 1],
        ['tenang-dev-inventory-reserve-dlq', 0],
        ['tenang-dev-cache-invalidator-failures', 3],
      ]);
      expect(summary[3]?.byErrorClass).toEqual({ PartialBatchFailure: 2, RetryAttemptsExhausted: 1 });
      expect(summary[2]?.byErrorClass).toEqual({});
    });
  });

  describe('Function: cacheTotals', () => {
    it('when nothing was read, the hit ratio is null rather than 0 or NaN', () => {
      // Act
      const totals = cacheTotals([]);

      // Assess
      expect(totals).toEqual({ hits: 0, misses: 0, bypasses: 0, hitRatio: null });
    });
  });

  describe('Function: buildReport', () => {
    it('when every invariant holds and every incident was injected, the report is ok', () => {
      // Act
      const report = buildReport(syntheticInput());

      // Assess
      expect(report.ok).toBe(true);
      expect(report.schemaVersion).toBe(REPORT_SCHEMA_VERSION);
    });

    it('when it is built, jobs in and out come from the last sample, the DLQs and the jobs put in', () => {
      // Act
      const report = buildReport(syntheticInput());

      // Assess
      expect(report.jobs.find((j) => j.jobType === 'payment.capture')).toEqual({
        jobType: 'payment.capture',
        in: 82,
        succeeded: 80,
        duplicatesIgnored: 1,
        deadLettered: 1,
        retried: 30,
        deferred: 0,
        leftInQueue: 1,
      });
      expect(report.jobs.find((j) => j.jobType === 'notification.send')?.deferred).toBe(10);
    });

    it('when duplicates were absorbed at the ingress, the consumers and the outbox, the total adds them up', () => {
      // Act
      const report = buildReport(syntheticInput());

      // Assess
      expect(report.duplicatesPrevented).toEqual({
        consumerDuplicatesIgnored: 1,
        flow: [
          { where: 'ingress: repeated Idempotency-Key answered with the first job (202)', count: 9 },
          { where: 'ingress: repeat while the first was in flight (409)', count: 1 },
          { where: 'outbox relay: follow-up already enqueued', count: 2 },
        ],
        total: 13,
      });
    });

    it('when the cache was read, the totals come from the order-reader counters', () => {
      // Act: the reference's order flow's totals (its report section).
      const totals = cacheTotals(syntheticInput().samples);

      // Assess
      expect(totals).toEqual({ hits: 120, misses: 40, bypasses: 2, hitRatio: 0.75 });
    });

    it('when an invariant is violated, the report is not ok', () => {
      // Prepare
      const input = syntheticInput();
      const invariants = [...input.invariants, { name: 'x', holds: false, detail: '', violations: ['lost'] }];

      // Act
      const report = buildReport({ ...input, invariants });

      // Assess
      expect(report.ok).toBe(false);
    });

    it('when an incident could not be injected, the report is not ok', () => {
      // Prepare
      const input = syntheticInput();
      const incidents = [
        ...input.incidents,
        {
          kind: 'redis-down',
          title: 'Redis down',
          startMs: 0,
          endMs: 0,
          how: '',
          observed: [],
          injected: false,
        },
      ];

      // Act
      const report = buildReport({ ...input, incidents });

      // Assess
      expect(report.ok).toBe(false);
    });

    it('when no invariant was checked (nothing to judge), the report is not ok', () => {
      // Act
      const report = buildReport(syntheticInput({ invariants: [] }));

      // Assess
      expect(report.ok).toBe(false);
    });

    it('when there are no samples, it still builds a report with empty series', () => {
      // Act
      const report = buildReport(syntheticInput({ samples: [] }));

      // Assess
      expect(report.series.tSeconds).toEqual([]);
      expect(report.jobs.every((j) => j.succeeded === 0 && j.leftInQueue === 0)).toBe(true);
    });

    it('when written as JSON and read back, the report is unchanged (no Map, Date or undefined-only fields)', () => {
      // Prepare
      const report = buildReport(syntheticInput());

      // Act
      const roundTrip: unknown = JSON.parse(JSON.stringify(report));

      // Assess
      expect(roundTrip).toEqual(JSON.parse(JSON.stringify(report)));
      expect(roundTrip).toMatchObject({ series: { tSeconds: report.series.tSeconds } });
    });
  });
});
