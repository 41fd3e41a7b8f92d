import { notificationKey, paymentCaptureKey } from '../../../../examples/reference/domain';
import type { DlqEntry, InvariantResult } from '../../../../lib/local/report-model';
import { checkJobInvariants } from '../../../../lib/local/scenario-invariants';
import {
  checkOrderFlowInvariants,
  type InvariantFacts,
} from '../../../../examples/reference/local/order-invariants';
import type { AcceptedPayment } from '../../../../examples/reference/local/traffic';

/** What the scenario judges a run of the order flow with: the flow's invariants, then any app's. */
function checkInvariants(facts: InvariantFacts): InvariantResult[] {
  return [...checkOrderFlowInvariants(facts), ...checkJobInvariants(facts)];
}

const TYPES = {
  payment: 'payment.capture',
  notification: 'notification.send',
  inventory: 'inventory.reserve',
};

function payment(n: number, lines = [{ sku: 'sku-1', quantity: 2 }]): AcceptedPayment {
  return {
    orderId: `order-${n}`,
    paymentId: `pay-${n}`,
    requestKey: `key-${n}`,
    lines,
    amountMinor: 1000,
    currency: 'EUR',
    via: 'api',
    acceptedAtMs: n,
  };
}

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:tenang-dev-alarms';

/** Facts of a healthy run with `n` payments of one line each on sku-1. */
function healthy(n = 3): InvariantFacts {
  const accepted = Array.from({ length: n }, (_, i) => payment(i + 1));
  return {
    jobTypes: TYPES,
    accepted,
    charges: accepted.map((p) => ({ idempotencyKey: paymentCaptureKey(p.paymentId) })),
    messages: accepted.map((p) => ({ idempotencyKey: notificationKey(p.orderId, 'order-paid') })),
    orderStates: new Map(accepted.map((p) => [p.orderId, 'PAID'])),
    stock: new Map([
      [
        'sku-1',
        {
          seeded: 100,
          available: 100 - 2 * n,
          reservations: Object.fromEntries(accepted.map((p) => [p.orderId, 2])),
        },
      ],
    ]),
    dlq: [],
    poison: [],
    leftInQueues: { 'payment.capture': 0, 'notification.send': 0, 'inventory.reserve': 0 },
    alarmNotifications: {
      owed: 1,
      deliveries: [
        {
          alarm: 'tenang-dev-payment-consumer-dlq',
          target: TOPIC,
          outcome: 'delivered',
          fanOut: {
            subscribers: [{ endpoint: 'alarms@tenang.localhost', outcome: 'recorded' }],
            pending: [],
          },
        },
      ],
    },
    stream: {
      records: ['101', '102', '103'].map((sequence, i) => ({
        sequence,
        eventName: 'MODIFY',
        at: `2026-11-29T10:00:0${i}.000Z`,
        orderId: `order-${i + 1}`,
      })),
      consumers: [{ consumer: 'cache-invalidator', highestSeen: 103n }],
    },
  };
}

function verdicts(facts: InvariantFacts): Record<string, boolean> {
  return Object.fromEntries(checkInvariants(facts).map((i) => [i.name, i.holds]));
}

function failing(facts: InvariantFacts): string[] {
  return checkInvariants(facts)
    .filter((i) => !i.holds)
    .map((i) => i.name);
}

function deadLetter(source: string, overrides: Partial<DlqEntry> = {}): DlqEntry {
  return {
    queue: `${source}-dlq`,
    source,
    errorClass: 'InsufficientStockError',
    errorKind: 'permanent',
    body: '{}',
    sentAt: '',
    ...overrides,
  };
}

describe('Module: order-invariants', () => {
  describe('Function: checkOrderFlowInvariants (with the generic ones after it)', () => {
    it('when every payment was charged once, paid, notified and reserved, every invariant holds', () => {
      // Act
      const results = verdicts(healthy());

      // Assess
      expect(Object.values(results).every(Boolean)).toBe(true);
      expect(Object.keys(results)).toHaveLength(12);
    });

    it('when one payment key was charged twice, the charge invariant fails and names the key', () => {
      // Prepare
      const facts = healthy();
      const charges = [...facts.charges, { idempotencyKey: paymentCaptureKey('pay-2') }];

      // Act
      const results = checkInvariants({ ...facts, charges });

      // Assess
      const charge = results[0];
      expect(charge?.holds).toBe(false);
      expect(charge?.violations).toEqual([`${paymentCaptureKey('pay-2')}: charged 2 times`]);
    });

    it('when a charge exists for a payment nobody accepted, the charge invariant fails', () => {
      // Prepare
      const facts = healthy();

      // Act
      const names = failing({
        ...facts,
        charges: [...facts.charges, { idempotencyKey: 'payment:ghost:capture' }],
      });

      // Assess
      expect(names).toEqual(['exactly one charge per payment key (provider ledger)']);
    });

    it('when the client gave up on a payment unanswered (a 503 after the send), one charge of it holds and two fail', () => {
      // Prepare: pay-9 was answered 503 by a timed-out ingress whose send had gone through.
      const facts = { ...healthy(), unsettled: ['pay-9'] };
      const ghost = { idempotencyKey: paymentCaptureKey('pay-9') };

      // Act
      const once = failing({ ...facts, charges: [...facts.charges, ghost] });
      const none = failing(facts);
      const twice = failing({ ...facts, charges: [...facts.charges, ghost, ghost] });

      // Assess
      expect(once).toEqual([]);
      expect(none).toEqual([]);
      expect(twice).toEqual(['exactly one charge per payment key (provider ledger)']);
    });

    it('when the same payment was accepted twice (a repeated request), it still needs one charge only', () => {
      // Prepare
      const facts = healthy();
      const repeat = { ...payment(1), requestKey: 'key-1-again' };

      // Act
      const names = failing({ ...facts, accepted: [...facts.accepted, repeat] });

      // Assess
      expect(names).toEqual([]);
    });

    it('when an accepted payment is still PENDING, "ends PAID" fails and its follow-ups are not required', () => {
      // Prepare
      const facts = healthy();
      const orderStates = new Map(facts.orderStates).set('order-3', 'PENDING');
      const messages = facts.messages.slice(0, 2);

      // Act
      const names = failing({ ...facts, orderStates, messages });

      // Assess
      expect(names).toEqual(['every accepted payment ends PAID']);
    });

    it('when a PAID order has no notification and no DLQ entry, the notification invariant fails', () => {
      // Prepare
      const facts = healthy();

      // Act
      const names = failing({ ...facts, messages: facts.messages.slice(1) });

      // Assess
      expect(names).toEqual(['every PAID order got its notification or a DLQ entry explaining why']);
    });

    it('when a PAID order has no notification but its job is in the DLQ, the invariant holds and counts it as explained', () => {
      // Prepare
      const facts = healthy();
      const dlq = [
        deadLetter('notification.send', {
          payloadFields: { orderId: 'order-1' },
          errorClass: 'ProviderRejectedError',
        }),
      ];

      // Act
      const results = checkInvariants({ ...facts, messages: facts.messages.slice(1), dlq });

      // Assess
      const notified = results.find((r) => r.name.startsWith('every PAID order got its notification'));
      expect(notified?.holds).toBe(true);
      expect(notified?.detail).toContain('1 explained by a DLQ entry');
    });

    it('when one line of a PAID order has no reservation, only a DLQ entry for that order and SKU explains it', () => {
      // Prepare
      const facts = {
        ...healthy(1),
        accepted: [
          payment(1, [
            { sku: 'sku-1', quantity: 2 },
            { sku: 'sku-2', quantity: 1 },
          ]),
        ],
      };
      const wrongSku = [
        deadLetter('inventory.reserve', { payloadFields: { orderId: 'order-1', sku: 'sku-3' } }),
      ];
      const rightSku = [
        deadLetter('inventory.reserve', { payloadFields: { orderId: 'order-1', sku: 'sku-2' } }),
      ];

      // Act
      const unexplained = failing({ ...facts, dlq: wrongSku });
      const explained = failing({ ...facts, dlq: rightSku });

      // Assess
      expect(unexplained).toEqual(['every PAID order got its reservations or a DLQ entry explaining why']);
      expect(explained).toEqual([]);
    });

    it('when the stock that left does not match the reservations (a double decrement), stock conservation fails', () => {
      // Prepare
      const facts = healthy();
      const stock = new Map(facts.stock);
      const sku = stock.get('sku-1');
      if (sku === undefined) throw new Error('fixture');
      stock.set('sku-1', { ...sku, available: sku.available - 2 });

      // Act
      const names = failing({ ...facts, stock });

      // Assess
      expect(names).toEqual(['stock conserved (no double decrement)']);
    });

    it('when a poison message is missing from its DLQ or was dead-lettered as transient, the poison invariant fails', () => {
      // Prepare
      const facts = { ...healthy(), poison: [{ jobType: 'payment.capture', body: 'not json' }] };
      const transient = [deadLetter('payment.capture', { body: 'not json', errorKind: 'transient' })];
      const permanent = [deadLetter('payment.capture', { body: 'not json', errorKind: 'permanent' })];

      // Act
      const missing = failing(facts);
      const wrongKind = failing({ ...facts, dlq: transient });
      const right = failing({ ...facts, dlq: permanent });

      // Assess
      expect(missing).toEqual(['poison messages dead-lettered at once as permanent errors']);
      expect(wrongKind).toEqual(['poison messages dead-lettered at once as permanent errors']);
      expect(right).toEqual([]);
    });

    it('when a message is still in flight at the end, "nothing stuck" fails naming the job type', () => {
      // Prepare
      const facts = healthy();

      // Act
      const results = checkInvariants({
        ...facts,
        leftInQueues: { ...facts.leftInQueues, 'payment.capture': 1 },
      });

      // Assess
      const stuck = results.find((r) => r.name.startsWith('nothing stuck'));
      expect(stuck?.holds).toBe(false);
      expect(stuck?.violations).toEqual(['payment.capture: 1 message(s) still queued or in flight']);
    });

    it('when the stream holds records past the last one a consumer received, the stream invariant names where it stopped', () => {
      // Prepare: the consumer's iterator went stale after 101 (moto's TransactWriteItems rollback does that).
      const facts = healthy();
      const stream = { ...facts.stream, consumers: [{ consumer: 'cache-invalidator', highestSeen: 101n }] };

      // Act
      const results = checkInvariants({ ...facts, stream });

      // Assess
      const delivered = results.find((r) => r.name.startsWith('every order change reached'));
      expect(delivered?.holds).toBe(false);
      expect(delivered?.violations).toEqual([
        'cache-invalidator: 2 of 3 record(s) never received, from sequence 102 (MODIFY of order order-2 at 2026-11-29T10:00:01.000Z) on',
      ]);
    });

    it('when a consumer logged no record at all, every stream record counts as missed', () => {
      // Prepare
      const facts = healthy();

      // Act
      const names = failing({
        ...facts,
        stream: { ...facts.stream, consumers: [{ consumer: 'cache-invalidator', highestSeen: undefined }] },
      });

      // Assess
      expect(names).toEqual(['every order change reached the stream consumers (stream read back)']);
    });

    it('when there are more violations than listed, the list ends with how many more there are', () => {
      // Prepare
      const facts = healthy(25);

      // Act
      const results = checkInvariants({ ...facts, messages: [] });

      // Assess
      const notified = results.find((r) => r.name.startsWith('every PAID order got its notification'));
      expect(notified?.violations).toHaveLength(21);
      expect(notified?.violations[20]).toBe('… and 5 more');
    });
  });
});
