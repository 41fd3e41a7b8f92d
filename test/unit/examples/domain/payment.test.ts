import fc from 'fast-check';
import { makeEnvelope, type JobEnvelope } from '../../../../lib/core/envelope';
import { type PaymentCapturePayload } from '../../../../examples/reference/domain/payloads';
import {
  ConcurrentUpdateError,
  IllegalTransitionError,
  PermanentError,
  TransientError,
  TransitionAlreadyDoneError,
} from '../../../../lib/core/errors';
import type { Order } from '../../../../examples/reference/domain/order';
import {
  captureGuard,
  capturePayment,
  explainFailedGuard,
  OrderAlreadyPaidError,
  OrderNotFoundError,
  paymentCaptureKey,
  PaymentMismatchError,
  satisfiesGuard,
  type Charge,
  type ChargeRequest,
  type PaymentPorts,
  type PaymentProvider,
  type SideEffectPoint,
  type StagedTransition,
} from '../../../../examples/reference/domain/payment';
import { ORDER_STATES, type OrderState } from '../../../../examples/reference/domain/state-machine';

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

function job(payload: Partial<PaymentCapturePayload> = {}): JobEnvelope<PaymentCapturePayload> {
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
  readonly provider: RecordingProvider;
  readonly staged: StagedTransition[];
  /** Crash points reached and provider calls, in order. */
  readonly trail: string[];
  readonly ports: PaymentPorts;
}

function harness(): Harness {
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
    provider,
    staged,
    trail,
    ports: {
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

describe('Function: captureGuard', () => {
  it('when given a job, it asks the order to be PENDING with the job’s amount and currency', () => {
    // Act
    const guard = captureGuard(job({ amountMinor: 990, currency: 'USD' }));

    // Assess
    expect(guard).toEqual({ orderId: 'order-1', state: 'PENDING', amountMinor: 990, currency: 'USD' });
  });
});

describe('Function: satisfiesGuard', () => {
  it.each([
    { label: 'a PENDING order with the job’s sum', stored: order(), expected: true },
    { label: 'a PAID order', stored: order({ state: 'PAID' }), expected: false },
    { label: 'another amount', stored: order({ amountMinor: 999 }), expected: false },
    { label: 'another currency', stored: order({ currency: 'USD' }), expected: false },
    { label: 'no order', stored: undefined, expected: false },
  ])('when given $label, it answers $expected', ({ stored, expected }) => {
    // Act
    const satisfied = satisfiesGuard(captureGuard(job()), stored);

    // Assess
    expect(satisfied).toBe(expected);
  });
});

describe('Function: explainFailedGuard', () => {
  const cause = new Error('TransactionCanceledException');

  describe.each<OrderState>(['PAID', 'RESERVED'])('when the order is already %s', (state) => {
    it('answers OrderAlreadyPaidError (a duplicate found before any charge) with the state and cause', () => {
      // Act
      const error = explainFailedGuard(captureGuard(job()), order({ state }), { cause });

      // Assess
      expect(error).toBeInstanceOf(OrderAlreadyPaidError);
      expect(error).toBeInstanceOf(TransitionAlreadyDoneError);
      expect(error).toMatchObject({ orderId: 'order-1', state, cause });
    });
  });

  describe.each<OrderState>(['CANCELLED', 'PAYMENT_FAILED'])('when the order is %s', (state) => {
    it('answers IllegalTransitionError (permanent), and not a duplicate', () => {
      // Act
      const error = explainFailedGuard(captureGuard(job()), order({ state }), { cause });

      // Assess
      expect(error).toBeInstanceOf(IllegalTransitionError);
      expect(error).not.toBeInstanceOf(TransitionAlreadyDoneError);
      expect(error.message).toContain(`order-1 is ${state}`);
      expect(error.cause).toBe(cause);
    });
  });

  describe('when the order does not exist', () => {
    it('answers OrderNotFoundError, a permanent error', () => {
      // Act
      const error = explainFailedGuard(captureGuard(job()), undefined, { cause });

      // Assess
      expect(error).toBeInstanceOf(OrderNotFoundError);
      expect(error).toBeInstanceOf(PermanentError);
      expect(error.cause).toBe(cause);
    });
  });

  describe('when the order is PENDING but asks for another sum', () => {
    it.each([
      { payload: { amountMinor: 999 }, problem: 'amountMinor: the job says 999, the order 1250' },
      { payload: { currency: 'USD' }, problem: 'currency: the job says USD, the order EUR' },
    ])('when $problem, it answers PaymentMismatchError naming it', ({ payload, problem }) => {
      // Act
      const error = explainFailedGuard(captureGuard(job(payload)), order(), { cause });

      // Assess
      expect(error).toBeInstanceOf(PaymentMismatchError);
      expect(error).toBeInstanceOf(PermanentError);
      expect(error.message).toContain(problem);
    });

    it('when the order is already PAID and the sum differs too, it answers the duplicate (state first)', () => {
      // Act
      const error = explainFailedGuard(captureGuard(job({ amountMinor: 999 })), order({ state: 'PAID' }));

      // Assess
      expect(error).toBeInstanceOf(OrderAlreadyPaidError);
    });
  });

  describe('when the order satisfies the guard now', () => {
    it('answers ConcurrentUpdateError: it changed since the check, a retry checks again', () => {
      // Act
      const error = explainFailedGuard(captureGuard(job()), order(), { cause });

      // Assess
      expect(error).toBeInstanceOf(ConcurrentUpdateError);
      expect(error).toBeInstanceOf(TransientError);
    });
  });

  describe('Property: a failed guard', () => {
    it('when explained for any order state and job sum, it is a duplicate iff the order is PAID or RESERVED, and transient iff the guard holds', () => {
      fc.assert(
        fc.property(
          fc.constantFrom(...ORDER_STATES),
          fc.integer({ min: 1, max: 5_000 }),
          fc.integer({ min: 1, max: 5_000 }),
          fc.constantFrom('EUR', 'USD'),
          (state, orderAmount, jobAmount, currency) => {
            // Prepare
            const guard = captureGuard(job({ amountMinor: jobAmount, currency }));
            const stored = order({ state, amountMinor: orderAmount });

            // Act
            const error = explainFailedGuard(guard, stored);

            // Assess
            expect(error instanceof OrderAlreadyPaidError).toBe(state === 'PAID' || state === 'RESERVED');
            expect(error instanceof TransientError).toBe(satisfiesGuard(guard, stored));
          },
        ),
      );
    });
  });
});

describe('Function: capturePayment', () => {
  describe('when called for a claimed job (its guard held)', () => {
    it('charges once with the business idempotency key and stages PENDING → PAID with no version read', async () => {
      // Prepare
      const h = harness();

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
          changes: { paymentId: 'pay-1', chargeId: 'ch_1' },
          at: NOW,
        },
      ]);
      expect(h.staged[0]).not.toHaveProperty('expectedVersion');
      expect(result).toEqual({
        outcome: 'captured',
        orderId: 'order-1',
        paymentId: 'pay-1',
        chargeId: 'ch_1',
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
});
