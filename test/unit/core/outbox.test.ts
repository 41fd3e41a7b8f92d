import { InMemoryDedupStore } from '../../../harness/fakes/memory-dedup-store';
import type { Criticality } from '../../../lib/config/schema';
import { DEGRADE_DEFER } from '../../../lib/core/deferral';
import { type JobEnvelope } from '../../../lib/core/envelope';
import { type JobTypeName, parseReferenceEnvelope } from '../../../examples/reference/domain/payloads';
import { ClaimInFlightError, classifyError } from '../../../lib/core/errors';
import type { Order } from '../../../examples/reference/domain/order';
import { relayFollowUps, type OutboxDeps } from '../../../lib/core/outbox';
import { becamePaid, followUpsForOrderChange } from '../../../examples/reference/domain/order-follow-ups';
import { manualClock } from '../../helpers/manual-clock';

const NOW = new Date('2030-06-01T12:00:00.000Z');

function paidOrder(overrides: Partial<Order> = {}): Order {
  return {
    orderId: 'ord-1',
    state: 'PAID',
    version: 3,
    customerEmail: 'buyer@example.com',
    lines: [
      { sku: 'sku-a', quantity: 2 },
      { sku: 'sku-b', quantity: 1 },
    ],
    amountMinor: 1250,
    currency: 'EUR',
    paymentId: 'pay-1',
    createdAt: '2030-06-01T11:00:00.000Z',
    updatedAt: '2030-06-01T11:59:00.000Z',
    ...overrides,
  };
}

const CRITICALITY: Record<JobTypeName, Criticality> = {
  'payment.capture': 'critical',
  'notification.send': 'sheddable',
  'inventory.reserve': 'deferrable',
};

function deps(
  overrides: Partial<OutboxDeps> & { sent?: Array<{ envelope: JobEnvelope; delaySeconds: number }> } = {},
): OutboxDeps {
  const sent = overrides.sent ?? [];
  return {
    dedup: new InMemoryDedupStore(() => NOW),
    enqueue: (envelope, delaySeconds) => {
      sent.push({ envelope, delaySeconds });
      return Promise.resolve();
    },
    criticalityOf: (type) => CRITICALITY[type as JobTypeName],
    degraded: false,
    random: () => 0,
    inFlightClaimSeconds: 15,
    sentClaimSeconds: 172_800,
    ...overrides,
  };
}

describe('Function: becamePaid', () => {
  it.each([
    ['PENDING', 'PAID', true],
    [undefined, 'PAID', true],
    ['PAID', 'PAID', false],
    ['PAID', 'RESERVED', false],
    ['PENDING', 'PAYMENT_FAILED', false],
    ['PAID', undefined, false],
  ] as const)('when the state goes from %s to %s, it returns %s', (from, to, expected) => {
    // Act
    const result = becamePaid(from, to);

    // Assess
    expect(result).toBe(expected);
  });
});

describe('Function: followUpsForOrderChange', () => {
  it('when an order becomes PAID, it plans one order-paid notification and one reservation per line', () => {
    // Act
    const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);

    // Assess
    expect(followUps.map((f) => f.envelope.type)).toEqual([
      'notification.send',
      'inventory.reserve',
      'inventory.reserve',
    ]);
    expect(followUps.map((f) => f.envelope.payload)).toEqual([
      { orderId: 'ord-1', template: 'order-paid', recipient: 'buyer@example.com', orderVersion: 3 },
      { orderId: 'ord-1', sku: 'sku-a', quantity: 2 },
      { orderId: 'ord-1', sku: 'sku-b', quantity: 1 },
    ]);
  });

  it('when planned, every envelope parses as its job type, carries the order as correlation id and a key per order, version and job', () => {
    // Act
    const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);

    // Assess
    for (const { envelope, dedupKey } of followUps) {
      expect(parseReferenceEnvelope(JSON.stringify(envelope), envelope.type as JobTypeName)).toEqual(
        envelope,
      );
      expect(envelope.correlationId).toBe('ord-1');
      expect(envelope.idempotencyKey.startsWith('order:ord-1:v3:')).toBe(true);
      expect(dedupKey).toBe(`outbox:${envelope.idempotencyKey}`);
      expect(envelope.enqueuedAt).toBe(NOW.toISOString());
    }
    expect(new Set(followUps.map((f) => f.dedupKey)).size).toBe(followUps.length);
  });

  it('when two lines have the same SKU, they are two reservations with distinct keys', () => {
    // Prepare
    const order = paidOrder({
      lines: [
        { sku: 'sku-a', quantity: 1 },
        { sku: 'sku-a', quantity: 4 },
      ],
    });

    // Act
    const followUps = followUpsForOrderChange('PENDING', order, NOW).filter(
      (f) => f.envelope.type === 'inventory.reserve',
    );

    // Assess
    expect(followUps).toHaveLength(2);
    expect(followUps[0]?.dedupKey).not.toBe(followUps[1]?.dedupKey);
  });

  it('when the change is not into PAID, it plans nothing', () => {
    // Act
    const modifiedPaid = followUpsForOrderChange('PAID', paidOrder(), NOW);
    const reserved = followUpsForOrderChange('PAID', paidOrder({ state: 'RESERVED', version: 4 }), NOW);
    const removed = followUpsForOrderChange('PAID', undefined, NOW);

    // Assess
    expect([modifiedPaid, reserved, removed]).toEqual([[], [], []]);
  });
});

describe('Function: relayFollowUps', () => {
  it('when not degraded, it enqueues every follow-up at once and confirms each claim for sentClaimSeconds', async () => {
    // Prepare
    const sent: Array<{ envelope: JobEnvelope; delaySeconds: number }> = [];
    const dedup = new InMemoryDedupStore(() => NOW);
    const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);

    // Act
    const outcomes = await relayFollowUps(followUps, deps({ sent, dedup }));

    // Assess
    expect(outcomes.map((o) => o.kind)).toEqual(['enqueued', 'enqueued', 'enqueued']);
    expect(sent.map((s) => s.delaySeconds)).toEqual([0, 0, 0]);
    const nowEpoch = Math.floor(NOW.getTime() / 1000);
    for (const f of followUps) {
      expect(dedup.claims.get(f.dedupKey)).toEqual({ status: 'done', expiration: nowEpoch + 172_800 });
    }
  });

  it('when the same change is relayed twice, the second relay enqueues nothing', async () => {
    // Prepare
    const sent: Array<{ envelope: JobEnvelope; delaySeconds: number }> = [];
    const shared = deps({ sent });
    const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);
    await relayFollowUps(followUps, shared);

    // Act
    const again = await relayFollowUps(followUpsForOrderChange('PENDING', paidOrder(), NOW), shared);

    // Assess
    expect(again.map((o) => o.kind)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(sent).toHaveLength(3);
  });

  it('when degraded, it sheds the notification without claiming it and defers each reservation by the degrade delay', async () => {
    // Prepare
    const sent: Array<{ envelope: JobEnvelope; delaySeconds: number }> = [];
    const dedup = new InMemoryDedupStore(() => NOW);
    const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);

    // Act
    const outcomes = await relayFollowUps(followUps, deps({ sent, dedup, degraded: true, random: () => 0 }));

    // Assess
    expect(outcomes.map((o) => o.kind)).toEqual(['shed', 'enqueued', 'enqueued']);
    expect(sent.map((s) => [s.envelope.type, s.delaySeconds])).toEqual([
      ['inventory.reserve', DEGRADE_DEFER.baseSeconds],
      ['inventory.reserve', DEGRADE_DEFER.baseSeconds],
    ]);
    expect(dedup.claims.has(followUps[0]?.dedupKey ?? '')).toBe(false);
  });

  it('when an enqueue fails, it gives the claim back and throws, and a retry enqueues only what is missing', async () => {
    // Prepare
    const sent: Array<{ envelope: JobEnvelope; delaySeconds: number }> = [];
    const dedup = new InMemoryDedupStore(() => NOW);
    let calls = 0;
    const flaky = deps({
      dedup,
      enqueue: (envelope, delaySeconds) => {
        calls += 1;
        if (calls === 2) return Promise.reject(new Error('SQS throttled'));
        sent.push({ envelope, delaySeconds });
        return Promise.resolve();
      },
    });
    const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);

    // Act
    const first = relayFollowUps(followUps, flaky);
    await expect(first).rejects.toThrow('SQS throttled');
    const retry = await relayFollowUps(followUps, flaky);

    // Assess
    expect(retry.map((o) => o.kind)).toEqual(['duplicate', 'enqueued', 'enqueued']);
    expect(sent.map((s) => s.envelope.idempotencyKey)).toEqual(
      followUps.map((f) => f.envelope.idempotencyKey),
    );
  });

  it.each([
    [
      'its process stops after the claim (the send never returns)',
      (): Partial<OutboxDeps> => ({ enqueue: () => new Promise<void>(() => undefined) }),
    ],
    [
      'its send fails and the claim cannot be given back',
      (dedup: InMemoryDedupStore): Partial<OutboxDeps> => {
        jest.spyOn(dedup, 'release').mockRejectedValueOnce(new Error('DynamoDB unreachable'));
        return { enqueue: () => Promise.reject(new Error('SQS unreachable')) };
      },
    ],
  ])(
    'when an attempt dies between claim and send (%s), a retry within the claim fails transiently and one after it sends every follow-up exactly once',
    async (_label, crash) => {
      // Prepare: the dead attempt claimed the first follow-up (for 15 s) and sent nothing.
      const clock = manualClock(NOW);
      const dedup = new InMemoryDedupStore(clock);
      const sent: Array<{ envelope: JobEnvelope; delaySeconds: number }> = [];
      const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);
      void relayFollowUps(followUps, deps({ dedup, ...crash(dedup) })).catch(() => undefined);
      await new Promise((resolve) => setImmediate(resolve));
      expect(dedup.claims.get(followUps[0]?.dedupKey ?? '')?.status).toBe('in-flight');

      // Act
      clock.advance(10_000);
      const early = await relayFollowUps(followUps, deps({ dedup, sent })).catch((e: unknown) => e);
      clock.advance(6_000);
      const late = await relayFollowUps(followUps, deps({ dedup, sent }));
      const again = await relayFollowUps(followUps, deps({ dedup, sent }));

      // Assess
      expect(early).toBeInstanceOf(ClaimInFlightError);
      expect(classifyError(early)).toBe('transient');
      expect((early as ClaimInFlightError).key).toBe(followUps[0]?.dedupKey);
      expect(late.map((o) => o.kind)).toEqual(['enqueued', 'enqueued', 'enqueued']);
      expect(again.map((o) => o.kind)).toEqual(['duplicate', 'duplicate', 'duplicate']);
      expect(sent.map((s) => s.envelope.idempotencyKey)).toEqual(
        followUps.map((f) => f.envelope.idempotencyKey),
      );
    },
  );

  it('when the same change comes back after its attempt died between claim and send, the redelivery takes its claim over and sends every follow-up once, at once', async () => {
    // Prepare: the dead attempt of stream record 42 claimed the first follow-up (for 15 s).
    const clock = manualClock(NOW);
    const dedup = new InMemoryDedupStore(clock);
    const sent: Array<{ envelope: JobEnvelope; delaySeconds: number }> = [];
    const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);
    void relayFollowUps(
      followUps,
      deps({ dedup, claimOwner: 'stream-record:42', enqueue: () => new Promise<void>(() => undefined) }),
    ).catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));

    // Act: the immediate retry of record 42, well within the claim; then another record of it.
    clock.advance(1_000);
    const retry = await relayFollowUps(followUps, deps({ dedup, sent, claimOwner: 'stream-record:42' }));
    const other = await relayFollowUps(followUps, deps({ dedup, sent, claimOwner: 'stream-record:43' }));

    // Assess
    expect(retry.map((o) => o.kind)).toEqual(['enqueued', 'enqueued', 'enqueued']);
    expect(other.map((o) => o.kind)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(sent.map((s) => s.envelope.idempotencyKey)).toEqual(
      followUps.map((f) => f.envelope.idempotencyKey),
    );
  });

  it('when a claim in flight belongs to another stream record, the change waits for it (transient failure) instead of taking it over', async () => {
    // Prepare
    const dedup = new InMemoryDedupStore(() => NOW);
    const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);
    await dedup.claim(followUps[0]?.dedupKey ?? '', 15, 'stream-record:41');

    // Act
    const error = await relayFollowUps(followUps, deps({ dedup, claimOwner: 'stream-record:42' })).catch(
      (e: unknown) => e,
    );

    // Assess
    expect(error).toBeInstanceOf(ClaimInFlightError);
    expect(dedup.claims.get(followUps[0]?.dedupKey ?? '')?.owner).toBe('stream-record:41');
  });

  it('when another attempt is enqueueing a later follow-up, the ones before it are enqueued and the record is retried', async () => {
    // Prepare
    const dedup = new InMemoryDedupStore(() => NOW);
    const sent: Array<{ envelope: JobEnvelope; delaySeconds: number }> = [];
    const followUps = followUpsForOrderChange('PENDING', paidOrder(), NOW);
    await dedup.claim(followUps[1]?.dedupKey ?? '', 15);

    // Act
    const error = await relayFollowUps(followUps, deps({ dedup, sent })).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(ClaimInFlightError);
    expect(sent.map((s) => s.envelope.idempotencyKey)).toEqual([followUps[0]?.envelope.idempotencyKey]);
    expect(dedup.claims.get(followUps[0]?.dedupKey ?? '')?.status).toBe('done');
    expect(dedup.claims.has(followUps[2]?.dedupKey ?? '')).toBe(false);
  });

  it('when confirming a claim fails, the follow-up still counts as enqueued and the failure is reported', async () => {
    // Prepare
    const dedup = new InMemoryDedupStore(() => NOW);
    jest.spyOn(dedup, 'confirm').mockRejectedValue(new Error('dynamodb down'));
    const failures: string[] = [];

    // Act
    const outcomes = await relayFollowUps(
      followUpsForOrderChange('PENDING', paidOrder({ lines: [{ sku: 'sku-a', quantity: 1 }] }), NOW),
      deps({ dedup, onDedupFailure: (step, key) => failures.push(`${step} ${key}`) }),
    );

    // Assess
    expect(outcomes.map((o) => o.kind)).toEqual(['enqueued', 'enqueued']);
    expect(failures).toHaveLength(2);
    expect(failures[0]).toMatch(/^confirm outbox:order:ord-1:v3:/);
  });
});
