import { FunctionOutputObserver, OBSERVED_EVENT } from '../../../lib/local/scenario-observer';

const FN = 'tenang-dev-payment-consumer';

function emf(service: string, metrics: Record<string, number | number[]>): string {
  return JSON.stringify({
    _aws: {
      Timestamp: 0,
      CloudWatchMetrics: [
        {
          Namespace: 'tenang',
          Dimensions: [['service']],
          Metrics: Object.keys(metrics).map((Name) => ({ Name, Unit: 'Count' })),
        },
      ],
    },
    service,
    ...metrics,
  });
}

describe('Class: FunctionOutputObserver', () => {
  describe('Method: onLine', () => {
    it('when functions print EMF documents, it sums each metric per service, arrays included', () => {
      // Prepare
      const observer = new FunctionOutputObserver();

      // Act
      observer.onLine(emf('payment-consumer', { JobSucceeded: 1, JobRetried: [1, 1] }), FN);
      observer.onLine(emf('payment-consumer', { JobSucceeded: 2 }), FN);
      observer.onLine(emf('order-reader', { CacheHit: 1 }), 'tenang-dev-order-reader');

      // Assess
      expect(observer.snapshot()).toEqual({
        'payment-consumer': { JobSucceeded: 3, JobRetried: 2 },
        'order-reader': { CacheHit: 1 },
      });
    });

    it('when a line is cut in two by the pipe, neither half counts and nothing throws', () => {
      // Prepare
      const observer = new FunctionOutputObserver();
      const line = emf('payment-consumer', { JobSucceeded: 1 });

      // Act
      observer.onLine(line.slice(0, 40), FN);
      observer.onLine(line.slice(40), FN);

      // Assess
      expect(observer.snapshot()).toEqual({});
    });

    it("when a consumer logs that a provider's circuit is open, it counts the deferral whatever the provider", () => {
      // Prepare
      const observer = new FunctionOutputObserver();
      const log = (message: string): string => JSON.stringify({ level: 'WARN', message });

      // Act
      observer.onLine(log('messaging provider circuit is open; deferring'), FN);
      observer.onLine(log('invoicing provider circuit is open; deferring'), FN);
      observer.onLine(log('the circuit is opening soon'), FN);

      // Assess
      expect(observer.eventCount(OBSERVED_EVENT.circuitOpen)).toBe(2);
    });

    it('when the outbox relay enqueues follow-ups, it counts them per job type', () => {
      // Prepare
      const observer = new FunctionOutputObserver();
      const log = (jobType: string): string =>
        JSON.stringify({ level: 'INFO', message: 'follow-up enqueued', jobType });

      // Act
      observer.onLine(log('notification.send'), 'tenang-dev-outbox-relay');
      observer.onLine(log('inventory.reserve'), 'tenang-dev-outbox-relay');
      observer.onLine(log('inventory.reserve'), 'tenang-dev-outbox-relay');

      // Assess
      expect(observer.eventCount(`${OBSERVED_EVENT.followUpPrefix}notification.send`)).toBe(1);
      expect(observer.eventCount(`${OBSERVED_EVENT.followUpPrefix}inventory.reserve`)).toBe(2);
    });

    it('when the crash hook fires, listeners hear it with the function name', () => {
      // Prepare
      const observer = new FunctionOutputObserver();
      const heard: string[] = [];
      observer.onEvent((e) => heard.push(`${e.key}:${e.functionName}`));

      // Act
      observer.onLine('[tenang] injected crash at after-side-effect', FN);

      // Assess
      expect(heard).toEqual([`${OBSERVED_EVENT.crash}:${FN}`]);
    });

    it('when a stream consumer logs sequence numbers, it keeps the highest, compared as numbers', () => {
      // Prepare
      const observer = new FunctionOutputObserver();
      const fn = 'tenang-dev-cache-invalidator';
      const log = (sequenceNumber: string): string =>
        JSON.stringify({ level: 'INFO', message: 'cache keys invalidated', sequenceNumber });

      // Act
      for (const s of ['1100000000017454423069', '1100000000017454423100', '99']) observer.onLine(log(s), fn);

      // Assess
      expect(observer.highestSequence(fn)).toBe(1100000000017454423100n);
      expect(observer.highestSequence('tenang-dev-outbox-relay')).toBeUndefined();
    });
  });
});
