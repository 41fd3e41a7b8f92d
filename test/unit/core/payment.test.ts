import fc from 'fast-check';
import { InMemoryOrderStore } from '../../../lib/adapters/fakes/memory-order-store';
import { makeEnvelope, type JobEnvelope, type PaymentCapturePayload } from '../../../lib/core/envelope';
import { IllegalTransitionError, PermanentError, TransientError } from '../../../lib/core/errors';
import type { Order } from '../../../lib/core/order';
import {
  capturePayment,
  OrderNotFoundError,
  paymentCaptureKey,
  PaymentMismatchError,
  type Charge,
  type ChargeRequest,
  type PaymentPorts,
  type PaymentProvider,
  type SideEffectPoint,
  type StagedTransition,
} from '../../../lib/core/payment';
import { ORDER_STATES, type OrderState } from '../../../lib/core/state-machine';

const NOW = new Date('2030-06-01T12:00:00.000Z');

function order(overrides: Partial<Order> = {}): Order {
  return {
    orderId: 'order-1',
    state: 'PENDING',
    version: 0,
    customerEmail: 'ana@example.com',
    lines: [{ sku: 'sku-1', quantity: 2 }],
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: NOW.toISOString(),
    updatedAt: NOW.toISOString(),
    ...overrides,
  };
}

function job(payload: Partial<PaymentCapturePayload> = {}): JobEnvelope<'payment.capture'> {
  const full = { orderId: 'order-1', paymentId: 'pay-1', amountMinor: 1250, currency: 'EUR', ...payload };
  return makeEnvelope('payment.capture', full, {
    idempotencyKey: paymentCaptureKey(full.paymentId),
    correlationId: 'corr-1',
    now: NOW,
  });
}

/** A provider that records its calls and answers a fixed charge, or throws `failWith`. */
class RecordingProvider implements PaymentProvider {
  public readonly calls: { request: ChargeRequest; idempotencyKey: string; correlationId: string }[] = [];
  public failWith: Error | undefined;

  public capture(
    request: ChargeRequest,
    opts: { idempotencyKey: string; correlationId: string },
  ): Promise<Charge> {
    this.calls.push({ request, ...opts });
    if (this.failWith !== undefined) return Promise.reject(this.failWith);
    return Promise.resolve({ chargeId: `ch_${this.calls.length}`, replayed: false });
  }
}

interface Harness {
  readonly orders: InMemoryOrderStore;
  readonly provider: RecordingProvider;
  readonly staged: StagedTransition[];
  /** Crash points reached and provider calls, in order. */
  readonly trail: string[];
  readonly ports: PaymentPorts;
}

/** A harness over an orders table holding `stored` (null: no order). */
function harness(stored: Order | null = order()): Harness {
  const orders = new InMemoryOrderStore(() => NOW);
  if (stored !== null) orders.orders.set(stored.orderId, stored);
  const provider = new RecordingProvider();
  const staged: StagedTransition[] = [];
  const trail: string[] = [];
  const recordingProvider: PaymentProvider = {
    capture: (request, opts) => {
      trail.push('provider');
      return provider.capture(request, opts);
    },
  };
  return {
    orders,
    provider,
    staged,
    trail,
    ports: {
      orders,
      provider: recordingProvider,
      stageTransition: (t) => staged.push(t),
      crash: (point: SideEffectPoint) => trail.push(point),
      clock: () => NOW,
    },
  };
}

async function thrownBy(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('Function: paymentCaptureKey', () => {
  it('when given a payment id, it builds the business key payment:{paymentId}:capture', () => {
    // Act
    const key = paymentCaptureKey('pay-42');

    // Assess
    expect(key).toBe('payment:pay-42:capture');
  });
});

describe('Function: capturePayment', () => {
  describe('when the order is PENDING and the job matches it', () => {
    it('charges once with the business idempotency key and stages PENDING → PAID at the version read', async () => {
      // Prepare
      const h = harness(order({ version: 3 }));

      // Act
      const result = await capturePayment(job(), h.ports);

      // Assess
      expect(h.provider.calls).toEqual([
        {
          request: { orderId: 'order-1', paymentId: 'pay-1', amountMinor: 1250, currency: 'EUR' },
          idempotencyKey: 'payment:pay-1:capture',
          correlationId: 'corr-1',
        },
      ]);
      expect(h.staged).toEqual([
        {
          orderId: 'order-1',
          from: 'PENDING',
          to: 'PAID',
          expectedVersion: 3,
          changes: { paymentId: 'pay-1', chargeId: 'ch_1' },
          at: NOW,
        },
      ]);
      expect(result).toEqual({
        outcome: 'captured',
        orderId: 'order-1',
        paymentId: 'pay-1',
        chargeId: 'ch_1',
        orderVersion: 4,
      });
    });

    it('calls the crash hook just before and just after the side effect', async () => {
      // Prepare
      const h = harness();

      // Act
      await capturePayment(job(), h.ports);

      // Assess
      expect(h.trail).toEqual(['before-side-effect', 'provider', 'after-side-effect']);
    });

    it('writes nothing to the order itself: the transition is only staged', async () => {
      // Prepare
      const h = harness();

      // Act
      await capturePayment(job(), h.ports);

      // Assess
      expect(h.orders.orders.get('order-1')).toMatchObject({ state: 'PENDING', version: 0 });
    });
  });

  describe.each<OrderState>(['PAID', 'RESERVED'])('when the order is already %s', (state) => {
    it('reports duplicate_ignored with no provider call, no crash point and nothing staged', async () => {
      // Prepare
      const h = harness(order({ state, version: 2, chargeId: 'ch_first' }));

      // Act
      const result = await capturePayment(job(), h.ports);

      // Assess
      expect(result).toEqual({ outcome: 'duplicate_ignored', orderId: 'order-1', state });
      expect(h.trail).toEqual([]);
      expect(h.staged).toEqual([]);
    });
  });

  describe.each<OrderState>(['CANCELLED', 'PAYMENT_FAILED'])('when the order is %s', (state) => {
    it('throws IllegalTransitionError (permanent) without charging', async () => {
      // Prepare
      const h = harness(order({ state }));

      // Act
      const error = await thrownBy(() => capturePayment(job(), h.ports));

      // Assess
      expect(error).toBeInstanceOf(IllegalTransitionError);
      expect(h.provider.calls).toHaveLength(0);
    });
  });

  describe('when the order does not exist', () => {
    it('throws OrderNotFoundError, a permanent error, without charging', async () => {
      // Prepare
      const h = harness(null);

      // Act
      const error = await thrownBy(() => capturePayment(job(), h.ports));

      // Assess
      expect(error).toBeInstanceOf(OrderNotFoundError);
      expect(error).toBeInstanceOf(PermanentError);
      expect(h.provider.calls).toHaveLength(0);
    });
  });

  describe('when the job does not match the order', () => {
    it.each([
      { payload: { amountMinor: 999 }, problem: 'amountMinor: the job says 999, the order 1250' },
      { payload: { currency: 'USD' }, problem: 'currency: the job says USD, the order EUR' },
    ])('when $problem, it throws PaymentMismatchError without charging', async ({ payload, problem }) => {
      // Prepare
      const h = harness();

      // Act
      const error = await thrownBy(() => capturePayment(job(payload), h.ports));

      // Assess
      expect(error).toBeInstanceOf(PaymentMismatchError);
      expect(error).toBeInstanceOf(PermanentError);
      expect((error as Error).message).toContain(problem);
      expect(h.provider.calls).toHaveLength(0);
      expect(h.trail).toEqual([]);
    });
  });

  describe('when the provider fails', () => {
    it('rethrows its error, stages nothing and never reaches the after-side-effect point', async () => {
      // Prepare
      const h = harness();
      const failure = new TransientError('provider answered 503');
      h.provider.failWith = failure;

      // Act
      const error = await thrownBy(() => capturePayment(job(), h.ports));

      // Assess
      expect(error).toBe(failure);
      expect(h.staged).toEqual([]);
      expect(h.trail).toEqual(['before-side-effect', 'provider']);
    });
  });

  describe('Property: charging', () => {
    it('when run on any order state and any job amounts, it charges iff the order is PENDING and matches, and at most once', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...ORDER_STATES),
          fc.integer({ min: 1, max: 5_000 }),
          fc.integer({ min: 1, max: 5_000 }),
          fc.constantFrom('EUR', 'USD'),
          async (state, orderAmount, jobAmount, currency) => {
            // Prepare
            const h = harness(order({ state, amountMinor: orderAmount }));

            // Act
            const outcome = await capturePayment(job({ amountMinor: jobAmount, currency }), h.ports).catch(
              (error: unknown) => error,
            );

            // Assess
            const shouldCharge = state === 'PENDING' && orderAmount === jobAmount && currency === 'EUR';
            expect(h.provider.calls).toHaveLength(shouldCharge ? 1 : 0);
            expect(h.staged).toHaveLength(shouldCharge ? 1 : 0);
            if (state === 'PAID' || state === 'RESERVED') {
              expect(outcome).toMatchObject({ outcome: 'duplicate_ignored' });
            }
          },
        ),
      );
    });
  });
});
