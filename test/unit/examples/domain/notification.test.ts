import { InMemoryDedupStore } from '../../../../harness/fakes/memory-dedup-store';
import { CircuitBreaker } from '../../../../lib/core/circuit-breaker';
import type { NotificationSendPayload } from '../../../../examples/reference/domain/payloads';
import { CircuitOpenError, PermanentError, TransientError } from '../../../../lib/core/errors';
import {
  notificationKey,
  sendNotification,
  type DedupBookkeepingFailure,
  type MessagingProvider,
  type OutgoingMessage,
  type SendNotificationDeps,
} from '../../../../examples/reference/domain/notification';
import { TokenBucket, type TakeResult } from '../../../../lib/core/token-bucket';
import type { RateLimit } from '../../../../lib/core/fleet-rate-limit';
import { manualClock, type ManualClock } from '../../../helpers/manual-clock';

const PAYLOAD: NotificationSendPayload = {
  orderId: 'order-7',
  template: 'order-paid',
  recipient: 'ayu@example.com',
  orderVersion: 3,
};
const KEY = 'notification:order-7:order-paid';
const IN_FLIGHT_S = 40;
const SENT_S = 1_209_600;

/** A provider port that records calls and answers as told. */
class ScriptedProvider implements MessagingProvider {
  public readonly calls: { message: OutgoingMessage; idempotencyKey: string; correlationId: string }[] = [];
  public next: () => Promise<{ messageId: string }> = () => Promise.resolve({ messageId: 'msg-1' });

  public send(
    message: OutgoingMessage,
    opts: { idempotencyKey: string; correlationId: string },
  ): Promise<{ messageId: string }> {
    this.calls.push({ message, ...opts });
    return this.next();
  }
}

interface Fixture {
  readonly clock: ManualClock;
  readonly dedup: InMemoryDedupStore;
  readonly provider: ScriptedProvider;
  readonly breaker: CircuitBreaker;
  readonly bucket: TokenBucket;
  readonly sleeps: number[];
  readonly failures: DedupBookkeepingFailure[];
  readonly deps: SendNotificationDeps;
}

function fixture(bucket: { rate: number; burst: number } = { rate: 10, burst: 5 }): Fixture {
  const clock = manualClock();
  const dedup = new InMemoryDedupStore(clock);
  const provider = new ScriptedProvider();
  const breaker = new CircuitBreaker({
    name: 'messaging-provider',
    failureThreshold: 2,
    windowMs: 10_000,
    coolDownMs: 20_000,
    clock,
  });
  const tokens = new TokenBucket({ ratePerSecond: bucket.rate, burst: bucket.burst, clock });
  const sleeps: number[] = [];
  const failures: DedupBookkeepingFailure[] = [];
  return {
    clock,
    dedup,
    provider,
    breaker,
    bucket: tokens,
    sleeps,
    failures,
    deps: {
      dedup,
      provider,
      breaker,
      rate: tokens,
      random: () => 0,
      sleep: (ms) => {
        sleeps.push(ms);
        clock.advance(ms);
        return Promise.resolve();
      },
      maxRateWaitMs: 1_000,
      inFlightClaimSeconds: IN_FLIGHT_S,
      sentClaimSeconds: SENT_S,
      onDedupFailure: (f) => failures.push(f),
    },
  };
}

describe('Function: notificationKey', () => {
  it('when given an order and a template, it builds the business key the brief names', () => {
    // Act
    const key = notificationKey('order-7', 'order-paid');

    // Assess
    expect(key).toBe(KEY);
  });
});

describe('Function: sendNotification', () => {
  it('when the notification is new, it sends it once with the idempotency key and keeps the claim long', async () => {
    // Prepare
    const { deps, provider, dedup, clock } = fixture();

    // Act
    const outcome = await sendNotification(deps, PAYLOAD, 'corr-1');

    // Assess
    expect(outcome).toEqual({ kind: 'sent', messageId: 'msg-1' });
    expect(provider.calls).toEqual([
      {
        message: { to: 'ayu@example.com', template: 'order-paid', orderId: 'order-7', orderVersion: 3 },
        idempotencyKey: KEY,
        correlationId: 'corr-1',
      },
    ]);
    expect(dedup.claims.get(KEY)).toEqual({
      status: 'done',
      expiration: Math.floor(clock.ms() / 1000) + SENT_S,
    });
  });

  it('when the same notification comes again, it reports a duplicate and does not call the provider', async () => {
    // Prepare
    const { deps, provider } = fixture();
    await sendNotification(deps, PAYLOAD, 'corr-1');

    // Act
    const second = await sendNotification(deps, { ...PAYLOAD, orderVersion: 4 }, 'corr-2');

    // Assess
    expect(second).toEqual({ kind: 'duplicate' });
    expect(provider.calls).toHaveLength(1);
  });

  it('when another delivery is sending it right now, it defers for the in-flight claim instead of dropping it', async () => {
    // Prepare
    const { deps, dedup, provider } = fixture();
    await dedup.claim(KEY, IN_FLIGHT_S);

    // Act
    const outcome = await sendNotification(deps, PAYLOAD, 'corr-1');

    // Assess
    expect(outcome).toEqual({ kind: 'deferred', reason: 'in-flight', deferSeconds: IN_FLIGHT_S });
    expect(provider.calls).toHaveLength(0);
    expect(dedup.claims.get(KEY)?.status).toBe('in-flight');
  });

  it('when the delivery it waited for fails and gives the claim back, the deferred copy sends', async () => {
    // Prepare: the other delivery holds the claim, then its provider call fails.
    const { deps, dedup, clock, provider } = fixture();
    await dedup.claim(KEY, IN_FLIGHT_S);
    const waited = await sendNotification(deps, PAYLOAD, 'corr-2');
    await dedup.release(KEY);

    // Act
    clock.advance(waited.kind === 'deferred' ? waited.deferSeconds * 1000 : 0);
    const outcome = await sendNotification(deps, PAYLOAD, 'corr-2');

    // Assess
    expect(waited.kind).toBe('deferred');
    expect(outcome.kind).toBe('sent');
    expect(provider.calls).toHaveLength(1);
  });

  it('when an earlier attempt crashed after claiming, the claim has expired by the time the message returns', async () => {
    // Prepare
    const { deps, dedup, clock, provider } = fixture();
    await dedup.claim(KEY, IN_FLIGHT_S);
    clock.advance((IN_FLIGHT_S + 1) * 1000);

    // Act
    const outcome = await sendNotification(deps, PAYLOAD, 'corr-1');

    // Assess
    expect(outcome.kind).toBe('sent');
    expect(provider.calls).toHaveLength(1);
  });

  it('when the provider fails transiently, it gives the claim back and rethrows so the retry can send', async () => {
    // Prepare
    const { deps, provider, dedup } = fixture();
    const unavailable = new TransientError('HTTP 503');
    provider.next = () => Promise.reject(unavailable);

    // Act
    const error = await sendNotification(deps, PAYLOAD, 'corr-1').catch((e: unknown) => e);
    provider.next = () => Promise.resolve({ messageId: 'msg-2' });
    const retry = await sendNotification(deps, PAYLOAD, 'corr-1');

    // Assess
    expect(error).toBe(unavailable);
    expect(retry).toEqual({ kind: 'sent', messageId: 'msg-2' });
    expect(dedup.claims.has(KEY)).toBe(true);
  });

  it('when the provider refuses the request, it gives the claim back (nothing was sent) and rethrows', async () => {
    // Prepare
    const { deps, provider, dedup } = fixture();
    const refused = new PermanentError('HTTP 400 bad recipient');
    provider.next = () => Promise.reject(refused);

    // Act
    const error = await sendNotification(deps, PAYLOAD, 'corr-1').catch((e: unknown) => e);

    // Assess
    expect(error).toBe(refused);
    expect(dedup.claims.has(KEY)).toBe(false);
  });

  it('when the circuit is open, it defers for the cool-down without claiming or calling the provider', async () => {
    // Prepare
    const { deps, provider, dedup, breaker } = fixture();
    for (let i = 0; i < 2; i += 1) {
      await breaker.execute(() => Promise.reject(new TransientError('down'))).catch(() => undefined);
    }

    // Act
    const outcome = await sendNotification(deps, PAYLOAD, 'corr-1');

    // Assess
    expect(outcome).toEqual({ kind: 'deferred', reason: 'circuit-open', deferSeconds: 20 });
    expect(provider.calls).toHaveLength(0);
    expect(dedup.claims.size).toBe(0);
  });

  it('when the provider keeps failing, it opens the circuit and then defers instead of calling again', async () => {
    // Prepare
    const { deps, provider } = fixture();
    provider.next = () => Promise.reject(new TransientError('HTTP 503'));

    // Act
    const outcomes: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const outcome = await sendNotification(deps, { ...PAYLOAD, orderId: `order-${i}` }, 'c').catch(
        () => 'failed',
      );
      outcomes.push(typeof outcome === 'string' ? outcome : outcome.kind);
    }

    // Assess
    expect(outcomes).toEqual(['failed', 'failed', 'deferred', 'deferred', 'deferred', 'deferred']);
    expect(provider.calls).toHaveLength(2);
  });

  it('when the half-open probe is taken by a concurrent call, it gives the claim back and defers', async () => {
    // Prepare
    const { deps, provider, dedup, breaker } = fixture();
    jest.spyOn(breaker, 'execute').mockRejectedValueOnce(new CircuitOpenError('probe in flight'));

    // Act
    const outcome = await sendNotification(deps, PAYLOAD, 'corr-1');

    // Assess
    expect(outcome).toMatchObject({ kind: 'deferred', reason: 'circuit-open' });
    expect(provider.calls).toHaveLength(0);
    expect(dedup.claims.has(KEY)).toBe(false);
  });

  it('when the rate is spent for longer than the caller waits, it defers without claiming', async () => {
    // Prepare
    const { deps, provider, dedup } = fixture({ rate: 0.5, burst: 1 });
    await sendNotification(deps, PAYLOAD, 'corr-1');

    // Act
    const outcome = await sendNotification(deps, { ...PAYLOAD, orderId: 'order-8' }, 'corr-2');

    // Assess
    expect(outcome).toEqual({ kind: 'deferred', reason: 'rate-limited', deferSeconds: 2 });
    expect(provider.calls).toHaveLength(1);
    expect(dedup.claims.size).toBe(1);
  });

  it('when a token frees up within the wait the caller accepts, it waits in process and sends', async () => {
    // Prepare
    const { deps, sleeps } = fixture({ rate: 4, burst: 1 });
    await sendNotification(deps, PAYLOAD, 'corr-1');

    // Act
    const outcome = await sendNotification(deps, { ...PAYLOAD, orderId: 'order-8' }, 'corr-2');

    // Assess
    expect(outcome.kind).toBe('sent');
    expect(sleeps).toEqual([250]);
  });

  describe('with a limit answered by a request (the fleet\'s)', () => {
    /** A shared limit that answers when told, and says whether it knows it is spent. */
    function sharedLimit(answer: TakeResult, spent = false): {
      rate: RateLimit;
      events: string[];
      answer: () => void;
    } {
      const events: string[] = [];
      let settle: (r: TakeResult) => void = () => undefined;
      return {
        events,
        answer: () => {
          events.push('token answered');
          settle(answer);
        },
        rate: {
          take: () => new Promise<TakeResult>((resolve) => (settle = resolve)),
          knownSpent: () => spent,
        },
      };
    }

    it('when the token is granted, the claim was taken beside its request and the notification sends', async () => {
      // Prepare
      const { deps, dedup, provider } = fixture();
      const limit = sharedLimit({ granted: true, waitMs: 0 });
      const claim = dedup.claim.bind(dedup);
      jest.spyOn(dedup, 'claim').mockImplementation((...args) => {
        limit.events.push('claim');
        return claim(...args);
      });

      // Act
      const sending = sendNotification({ ...deps, rate: limit.rate }, PAYLOAD, 'corr-1');
      await new Promise(setImmediate);
      limit.answer();
      const outcome = await sending;

      // Assess
      expect(limit.events).toEqual(['claim', 'token answered']);
      expect(outcome.kind).toBe('sent');
      expect(provider.calls).toHaveLength(1);
      expect(dedup.claims.get(KEY)?.status).toBe('done');
    });

    it('when the token is refused after the claim was taken, it gives the claim back and defers without calling the provider', async () => {
      // Prepare
      const { deps, dedup, provider } = fixture();
      const limit = sharedLimit({ granted: false, retryAfterMs: 3_000 });

      // Act
      const sending = sendNotification({ ...deps, rate: limit.rate }, PAYLOAD, 'corr-1');
      await new Promise(setImmediate);
      limit.answer();
      const outcome = await sending;

      // Assess
      expect(outcome).toEqual({ kind: 'deferred', reason: 'rate-limited', deferSeconds: 3 });
      expect(provider.calls).toHaveLength(0);
      expect(dedup.claims.has(KEY)).toBe(false);
    });

    it('when the token is refused but the notification was sent already, it reports the duplicate rather than deferring it', async () => {
      // Prepare
      const { deps, dedup, provider } = fixture();
      await dedup.claim(KEY, IN_FLIGHT_S);
      await dedup.confirm(KEY, SENT_S);
      const limit = sharedLimit({ granted: false, retryAfterMs: 3_000 });

      // Act
      const sending = sendNotification({ ...deps, rate: limit.rate }, PAYLOAD, 'corr-1');
      await new Promise(setImmediate);
      limit.answer();
      const outcome = await sending;

      // Assess
      expect(outcome).toEqual({ kind: 'duplicate' });
      expect(provider.calls).toHaveLength(0);
      expect(dedup.claims.get(KEY)?.status).toBe('done');
    });

    it('when the limit is known to be spent, it waits for the refusal and never claims', async () => {
      // Prepare
      const { deps, dedup } = fixture();
      const limit = sharedLimit({ granted: false, retryAfterMs: 2_000 }, true);
      const claim = jest.spyOn(dedup, 'claim');

      // Act
      const sending = sendNotification({ ...deps, rate: limit.rate }, PAYLOAD, 'corr-1');
      await new Promise(setImmediate);
      limit.answer();
      const outcome = await sending;

      // Assess
      expect(outcome).toEqual({ kind: 'deferred', reason: 'rate-limited', deferSeconds: 2 });
      expect(claim).not.toHaveBeenCalled();
    });
  });

  it('when confirming the claim fails after the send, it still reports sent and tells about the failure', async () => {
    // Prepare
    const { deps, dedup, failures } = fixture();
    const outage = new Error('DynamoDB unreachable');
    jest.spyOn(dedup, 'confirm').mockRejectedValueOnce(outage);

    // Act
    const outcome = await sendNotification(deps, PAYLOAD, 'corr-1');

    // Assess
    expect(outcome.kind).toBe('sent');
    expect(failures).toEqual([{ step: 'confirm', key: KEY, error: outage }]);
  });

  it('when giving the claim back fails, it rethrows the provider error, not the bookkeeping one', async () => {
    // Prepare
    const { deps, dedup, provider, failures } = fixture();
    const unavailable = new TransientError('HTTP 503');
    provider.next = () => Promise.reject(unavailable);
    jest.spyOn(dedup, 'release').mockRejectedValueOnce(new Error('DynamoDB unreachable'));

    // Act
    const error = await sendNotification(deps, PAYLOAD, 'corr-1').catch((e: unknown) => e);

    // Assess
    expect(error).toBe(unavailable);
    expect(failures.map((f) => f.step)).toEqual(['release']);
  });
});
