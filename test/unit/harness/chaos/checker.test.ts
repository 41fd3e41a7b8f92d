import {
  checkChaos,
  describeViolations,
  type ChaosFacts,
  type EnqueuedJob,
} from '../../../../harness/chaos/checker';
import { notificationKey } from '../../../../examples/reference/domain/notification';
import { paymentCaptureKey } from '../../../../examples/reference/domain/payment';

const payment: EnqueuedJob = {
  id: 'j1',
  type: 'payment.capture',
  sku: 'sku-a',
  orderId: 'o1',
  quantity: 2,
  paymentId: 'p1',
  copies: 2,
};
const notification: EnqueuedJob = {
  id: 'j2',
  type: 'notification.send',
  sku: 'sku-a',
  orderId: 'o2',
  quantity: 1,
  copies: 3,
};
const reserve: EnqueuedJob = {
  id: 'j3',
  type: 'inventory.reserve',
  sku: 'sku-a',
  orderId: 'o3',
  quantity: 1,
  copies: 1,
};
const poisonBody = 'poison: not JSON';

/** A history where every job happened exactly once. */
function goodHistory(): ChaosFacts {
  return {
    jobs: [payment, notification, reserve],
    charges: [{ idempotencyKey: paymentCaptureKey('p1') }],
    messages: [
      { idempotencyKey: notificationKey('o1', 'order-paid') },
      { idempotencyKey: notificationKey('o2', 'order-shipped') },
    ],
    orders: new Map([['o1', { state: 'PAID', version: 1 }]]),
    stock: new Map([
      [
        'sku-a',
        {
          seeded: 100,
          available: 97,
          fence: 12,
          lockFence: 12,
          reservations: { o1: { quantity: 2, fence: 11 }, o3: { quantity: 1, fence: 12 } },
        },
      ],
    ]),
    dlq: [
      {
        queue: 'dlq',
        source: 'notification.send',
        errorClass: 'ValidationError',
        errorKind: 'permanent',
        body: poisonBody,
        sentAt: '',
      },
    ],
    poison: [{ jobType: 'notification.send', body: poisonBody }],
    cache: new Map([['o1', { kind: 'value', version: 1, value: {} }]]),
    lockTraces: [
      { op: 'acquire', resource: 'inventory:sku-a', owner: 't1', ok: true, start: 1, at: 1 },
      { op: 'release', resource: 'inventory:sku-a', owner: 't1', ok: true, start: 2, at: 2 },
      { op: 'acquire', resource: 'inventory:sku-a', owner: 't2', ok: true, start: 3, at: 3 },
      { op: 'release', resource: 'inventory:sku-a', owner: 't2', ok: true, start: 4, at: 4 },
    ],
    acceptedWrites: [
      { sku: 'sku-a', orderId: 'o1', fence: 11, at: 1 },
      { sku: 'sku-a', orderId: 'o3', fence: 12, at: 3 },
    ],
  };
}

describe('Function: checkChaos', () => {
  it('when every job happened once, it classifies all ok and the verdict is valid', () => {
    const verdict = checkChaos(goodHistory());
    expect(verdict.counts).toEqual({ ok: 5, lost: 0, duplicated: 0, unexpected: 0 });
    expect(verdict.valid).toBe(true);
  });

  it('when a payment never charged, it classifies the job lost', () => {
    const facts = {
      ...goodHistory(),
      charges: [],
      orders: new Map([['o1', { state: 'PENDING', version: 0 }]]),
    };
    const verdict = checkChaos(facts);
    expect(verdict.classified.find((c) => c.id === 'j1')?.outcome).toBe('lost');
    expect(verdict.valid).toBe(false);
  });

  it('when a payment charged but the order stayed PENDING, it classifies the job lost', () => {
    const facts = { ...goodHistory(), orders: new Map([['o1', { state: 'PENDING', version: 0 }]]) };
    expect(checkChaos(facts).classified.find((c) => c.id === 'j1')?.outcome).toBe('lost');
  });

  it('when a paid order got no outbox notification, it classifies the follow-up lost', () => {
    const facts = {
      ...goodHistory(),
      messages: [{ idempotencyKey: notificationKey('o2', 'order-shipped') }],
    };
    expect(checkChaos(facts).classified.find((c) => c.id === 'j1/notify')?.outcome).toBe('lost');
  });

  it('when a key was charged twice, it classifies the job duplicated', () => {
    const good = goodHistory();
    const verdict = checkChaos({ ...good, charges: [...good.charges, ...good.charges] });
    expect(verdict.classified.find((c) => c.id === 'j1')?.outcome).toBe('duplicated');
    expect(verdict.counts.duplicated).toBe(1);
  });

  it('when stock was decremented twice for one reservation, it counts a duplicated side effect', () => {
    const good = goodHistory();
    const sku = good.stock.get('sku-a');
    if (sku === undefined) throw new Error('fixture');
    const verdict = checkChaos({ ...good, stock: new Map([['sku-a', { ...sku, available: 96 }]]) });
    expect(verdict.stock.holds).toBe(false);
    expect(verdict.counts.duplicated).toBe(1);
  });

  it('when a charge or a reservation no job asked for exists, it counts it unexpected', () => {
    const good = goodHistory();
    const sku = good.stock.get('sku-a');
    if (sku === undefined) throw new Error('fixture');
    const verdict = checkChaos({
      ...good,
      charges: [...good.charges, { idempotencyKey: paymentCaptureKey('ghost') }],
      stock: new Map([
        [
          'sku-a',
          {
            ...sku,
            available: 96,
            reservations: { ...sku.reservations, ghost: { quantity: 1, fence: 13 } },
            fence: 13,
            lockFence: 13,
          },
        ],
      ]),
    });
    expect(verdict.counts.unexpected).toBe(2);
    expect(verdict.valid).toBe(false);
  });

  it('when a poison message was dead-lettered twice, the DLQ rule still holds', () => {
    const good = goodHistory();
    expect(checkChaos({ ...good, dlq: [...good.dlq, ...good.dlq] }).dlq.holds).toBe(true);
  });

  it('when SQS redrove a copy of poison the runner had dead-lettered as permanent, the DLQ rule holds; when SQS alone moved it, it fails', () => {
    const good = goodHistory();
    const redriven = {
      ...good.dlq[0],
      errorClass: 'redriven by SQS (maxReceiveCount)',
      errorKind: undefined,
    } as (typeof good.dlq)[number];
    expect(checkChaos({ ...good, dlq: [...good.dlq, redriven] }).dlq.holds).toBe(true);
    const onlyRedriven = checkChaos({ ...good, dlq: [redriven] }).dlq;
    expect(onlyRedriven.holds).toBe(false);
    expect(onlyRedriven.violations.join('\n')).toMatch(/redriven by SQS.*not permanent/);
    // A copy classified as something other than permanent still fails beside a permanent one.
    const transient = {
      ...good.dlq[0],
      errorClass: 'TransientError',
      errorKind: 'transient',
    } as (typeof good.dlq)[number];
    expect(checkChaos({ ...good, dlq: [...good.dlq, transient] }).dlq.holds).toBe(false);
  });

  it('when a dead letter is not injected poison, or the poison is missing, the DLQ rule fails', () => {
    const good = goodHistory();
    const extra = {
      ...good.dlq[0],
      body: 'a real job',
      errorClass: 'TransientError',
    } as (typeof good.dlq)[number];
    expect(checkChaos({ ...good, dlq: [...good.dlq, extra] }).dlq.holds).toBe(false);
    expect(checkChaos({ ...good, dlq: [] }).dlq.holds).toBe(false);
  });

  it('when the cache holds an older version than the table, the cache rule fails; a tombstone passes', () => {
    const good = goodHistory();
    expect(
      checkChaos({ ...good, cache: new Map([['o1', { kind: 'value', version: 0, value: {} }]]) }).cache.holds,
    ).toBe(false);
    expect(
      checkChaos({ ...good, cache: new Map([['o1', { kind: 'tombstone', version: 0 }]]) }).cache.holds,
    ).toBe(true);
  });

  it('when a write was accepted with a stale fence, the fence rule fails', () => {
    const good = goodHistory();
    const sku = good.stock.get('sku-a');
    if (sku === undefined) throw new Error('fixture');
    // o1 (fence 11) accepted after o3 (fence 12): the item's fence went back to 11.
    const stale = { ...good, stock: new Map([['sku-a', { ...sku, fence: 11 }]]) };
    expect(checkChaos(stale).fences.holds).toBe(false);
    const shared = {
      ...good,
      stock: new Map([
        [
          'sku-a',
          { ...sku, reservations: { o1: { quantity: 2, fence: 12 }, o3: { quantity: 1, fence: 12 } } },
        ],
      ]),
    };
    expect(checkChaos(shared).fences.holds).toBe(false);
  });

  it('when a lease is released by an owner whose lease was taken over, the lock rule fails', () => {
    const good = goodHistory();
    const verdict = checkChaos({
      ...good,
      lockTraces: [
        { op: 'acquire', resource: 'inventory:sku-a', owner: 't1', ok: true, start: 1, at: 1 },
        { op: 'acquire', resource: 'inventory:sku-a', owner: 't2', ok: true, start: 5, at: 5 },
        { op: 'release', resource: 'inventory:sku-a', owner: 't1', ok: true, start: 6, at: 6 },
      ],
    });
    expect(verdict.locks.holds).toBe(false);
    expect(verdict.locks.violations[0]).toContain('after t2 had acquired it');
  });

  describe('when the app declares a job type beyond the reference', () => {
    const invoice: EnqueuedJob = {
      id: 'j4',
      type: 'invoice.issue',
      sku: 'sku-a',
      orderId: 'o4',
      quantity: 1,
      idempotencyKey: 'j4:invoice.issue',
      copies: 3,
    };
    const withInvoice = (calls: readonly string[], done: boolean): ChaosFacts => ({
      ...goodHistory(),
      jobs: [...goodHistory().jobs, invoice],
      declaredJobs: [
        {
          jobType: 'invoice.issue',
          idempotencyKey: 'j4:invoice.issue',
          correlationId: 'j4',
          done,
          evidence: undefined,
        },
      ],
      declaredCalls: calls.map((idempotencyKey) => ({ provider: 'invoicing', idempotencyKey })),
      declaredProviders: { 'invoice.issue': ['invoicing'] },
    });

    it('when its job called its provider once and left its record, it classifies the job ok', () => {
      // Act
      const v = checkChaos(withInvoice(['j4:invoice.issue'], true));

      // Assess
      expect(v.classified.find((c) => c.id === 'j4')).toMatchObject({ kind: 'invoice.issue', outcome: 'ok' });
      expect(v.valid).toBe(true);
    });

    it('when its job was done twice, it classifies the job duplicated', () => {
      // Act
      const v = checkChaos(withInvoice(['j4:invoice.issue', 'j4:invoice.issue'], true));

      // Assess
      expect(v.classified.find((c) => c.id === 'j4')?.outcome).toBe('duplicated');
      expect(v.counts.duplicated).toBe(1);
      expect(v.valid).toBe(false);
    });

    it('when its job was never done, it classifies the job lost and the declared rule fails', () => {
      // Act
      const v = checkChaos(withInvoice([], false));

      // Assess
      expect(v.classified.find((c) => c.id === 'j4')?.outcome).toBe('lost');
      expect(v.declared.holds).toBe(false);
      expect(describeViolations(v)).toEqual(
        expect.arrayContaining([expect.stringContaining('lost: invoice.issue j4')]),
      );
    });

    it('when its provider recorded a key no job asked for, it counts it unexpected', () => {
      // Act
      const v = checkChaos(withInvoice(['j4:invoice.issue', 'stray-key'], true));

      // Assess
      expect(v.unexpected).toEqual(['invoicing call stray-key no job asked for']);
      expect(v.valid).toBe(false);
    });
  });
});
