import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import {
  CorruptOrderError,
  DynamoDbOrderStore,
} from '../../../../examples/reference/domain/dynamodb-order-store';
import {
  ConcurrentUpdateError,
  IllegalTransitionError,
  TransientError,
  TransitionAlreadyDoneError,
} from '../../../../lib/core/errors';
import type { Order } from '../../../../examples/reference/domain/order';
import {
  OrderAlreadyPaidError,
  OrderNotFoundError,
  PaymentMismatchError,
  type CaptureGuard,
} from '../../../../examples/reference/domain/payment';

const TABLE = 'tenang-test-orders';
const NOW = new Date('2030-06-01T12:00:00.000Z');
const LATER = new Date('2030-06-01T12:05:00.000Z');

const docMock = mockClient(DynamoDBDocumentClient);

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

const GUARD: CaptureGuard = { orderId: 'order-1', state: 'PENDING', amountMinor: 1250, currency: 'EUR' };

const conditionFailed = (): ConditionalCheckFailedException =>
  new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

function store(): DynamoDbOrderStore {
  return new DynamoDbOrderStore(new DynamoDBClient({ region: 'eu-west-1' }), TABLE, () => LATER);
}

async function thrownBy(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

beforeEach(() => {
  docMock.reset();
});

describe('Class: DynamoDbOrderStore', () => {
  describe('Method: create', () => {
    it('when the id is free, it puts the order only if no item has the id, and answers true', async () => {
      // Prepare
      docMock.on(PutCommand).resolves({});

      // Act
      const created = await store().create(order());

      // Assess
      expect(created).toBe(true);
      expect(docMock).toHaveReceivedCommandWith(PutCommand, {
        TableName: TABLE,
        Item: order(),
        ConditionExpression: 'attribute_not_exists(#k)',
        ExpressionAttributeNames: { '#k': 'orderId' },
      });
    });

    it('when an order has the id already, it answers false', async () => {
      // Prepare
      docMock.on(PutCommand).rejects(conditionFailed());

      // Act
      const created = await store().create(order());

      // Assess
      expect(created).toBe(false);
    });

    it('when a field is undefined, it leaves it out of the item', async () => {
      // Prepare
      docMock.on(PutCommand).resolves({});

      // Act
      await store().create({ ...order(), chargeId: undefined });

      // Assess
      const item = docMock.commandCalls(PutCommand)[0]?.args[0].input.Item ?? {};
      expect(Object.keys(item)).not.toContain('chargeId');
    });
  });

  describe('Method: get', () => {
    it('when the order exists, it reads it with strong consistency and returns it', async () => {
      // Prepare
      docMock.on(GetCommand).resolves({ Item: order({ state: 'PAID', version: 1 }) });

      // Act
      const found = await store().get('order-1');

      // Assess
      expect(found).toEqual(order({ state: 'PAID', version: 1 }));
      expect(docMock).toHaveReceivedCommandWith(GetCommand, {
        TableName: TABLE,
        Key: { orderId: 'order-1' },
        ConsistentRead: true,
      });
    });

    it('when there is no such order, it returns undefined', async () => {
      // Prepare
      docMock.on(GetCommand).resolves({});

      // Act
      const found = await store().get('order-404');

      // Assess
      expect(found).toBeUndefined();
    });

    it('when the stored item is not a valid order, it throws CorruptOrderError naming the fields', async () => {
      // Prepare
      docMock.on(GetCommand).resolves({ Item: { ...order(), state: 'LOST', version: -1 } });

      // Act
      const error = await thrownBy(() => store().get('order-1'));

      // Assess
      expect(error).toBeInstanceOf(CorruptOrderError);
      expect((error as Error).message).toMatch(/state: .*version: /s);
    });
  });

  describe('Method: transition', () => {
    it('when the order is in the expected state and version, it writes the new state, version + 1 and the changes', async () => {
      // Prepare
      const next = order({ state: 'PAID', version: 4, chargeId: 'ch_1', updatedAt: LATER.toISOString() });
      docMock.on(UpdateCommand).resolves({ Attributes: next });

      // Act
      const result = await store().transition('order-1', 'PENDING', 'PAID', 3, { chargeId: 'ch_1' });

      // Assess
      expect(result).toEqual(next);
      expect(docMock).toHaveReceivedCommandWith(UpdateCommand, {
        TableName: TABLE,
        Key: { orderId: 'order-1' },
        UpdateExpression: 'SET #state = :to, #version = :next, #updatedAt = :at, #c0 = :c0',
        ConditionExpression: '#state = :from AND #version = :expected',
        ExpressionAttributeNames: {
          '#state': 'state',
          '#version': 'version',
          '#updatedAt': 'updatedAt',
          '#c0': 'chargeId',
        },
        ExpressionAttributeValues: {
          ':from': 'PENDING',
          ':to': 'PAID',
          ':expected': 3,
          ':next': 4,
          ':at': LATER.toISOString(),
          ':c0': 'ch_1',
        },
        ReturnValues: 'ALL_NEW',
      });
    });

    it('when the changes name a field the transition owns, it ignores that field', async () => {
      // Prepare
      docMock.on(UpdateCommand).resolves({ Attributes: order({ state: 'PAID', version: 1 }) });

      // Act
      await store().transition('order-1', 'PENDING', 'PAID', 0, {
        state: 'CANCELLED',
        version: 99,
        paymentId: 'p',
      });

      // Assess
      const input = docMock.commandCalls(UpdateCommand)[0]?.args[0].input;
      expect(Object.values(input?.ExpressionAttributeNames ?? {})).toEqual([
        'state',
        'version',
        'updatedAt',
        'paymentId',
      ]);
    });

    it.each([
      { label: 'PAID', now: order({ state: 'PAID', version: 1 }), expected: TransitionAlreadyDoneError },
      {
        label: 'RESERVED',
        now: order({ state: 'RESERVED', version: 2 }),
        expected: TransitionAlreadyDoneError,
      },
      {
        label: 'CANCELLED',
        now: order({ state: 'CANCELLED', version: 1 }),
        expected: IllegalTransitionError,
      },
      {
        label: 'PENDING at another version',
        now: order({ state: 'PENDING', version: 1 }),
        expected: ConcurrentUpdateError,
      },
      { label: 'gone', now: undefined, expected: IllegalTransitionError },
    ])(
      'when the condition fails and the order is now $label, it re-reads it and throws $expected.name with the failure as cause',
      async ({ now, expected }) => {
        // Prepare
        const failure = conditionFailed();
        docMock.on(UpdateCommand).rejects(failure);
        docMock.on(GetCommand).resolves({ Item: now });

        // Act
        const error = await thrownBy(() => store().transition('order-1', 'PENDING', 'PAID', 0));

        // Assess
        expect(error).toBeInstanceOf(expected);
        expect((error as Error).cause).toBe(failure);
        expect(docMock).toHaveReceivedCommandTimes(GetCommand, 1);
      },
    );

    it('when the order changed but kept its state, the error is transient (a retry reads it again)', async () => {
      // Prepare
      docMock.on(UpdateCommand).rejects(conditionFailed());
      docMock.on(GetCommand).resolves({ Item: order({ version: 7 }) });

      // Act
      const error = await thrownBy(() => store().transition('order-1', 'PENDING', 'PAID', 6));

      // Assess
      expect(error).toBeInstanceOf(TransientError);
    });

    it('when the write fails otherwise, it rethrows the SDK error without reading', async () => {
      // Prepare
      const failure = Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
      docMock.on(UpdateCommand).rejects(failure);

      // Act
      const error = await thrownBy(() => store().transition('order-1', 'PENDING', 'PAID', 0));

      // Assess
      expect(error).toBe(failure);
      expect(docMock).toHaveReceivedCommandTimes(GetCommand, 0);
    });
  });

  describe('Method: stagedTransition', () => {
    it('when built, it is the same conditional update as transition, as a transact item', () => {
      // Act
      const staged = store().stagedTransition({
        orderId: 'order-1',
        from: 'PENDING',
        to: 'PAID',
        expectedVersion: 0,
        changes: { paymentId: 'pay-1', chargeId: 'ch_1' },
        at: NOW,
      });

      // Assess
      expect(staged.item).toEqual({
        Update: {
          TableName: TABLE,
          Key: { orderId: 'order-1' },
          UpdateExpression: 'SET #state = :to, #version = :next, #updatedAt = :at, #c0 = :c0, #c1 = :c1',
          ConditionExpression: '#state = :from AND #version = :expected',
          ExpressionAttributeNames: {
            '#state': 'state',
            '#version': 'version',
            '#updatedAt': 'updatedAt',
            '#c0': 'paymentId',
            '#c1': 'chargeId',
          },
          ExpressionAttributeValues: {
            ':from': 'PENDING',
            ':to': 'PAID',
            ':expected': 0,
            ':next': 1,
            ':at': NOW.toISOString(),
            ':c0': 'pay-1',
            ':c1': 'ch_1',
          },
        },
      });
    });

    it('when its condition is rejected, it explains the rejection from the order as it is now', async () => {
      // Prepare
      docMock.on(GetCommand).resolves({ Item: order({ state: 'PAID', version: 1 }) });
      const staged = store().stagedTransition({
        orderId: 'order-1',
        from: 'PENDING',
        to: 'PAID',
        expectedVersion: 0,
        changes: {},
        at: NOW,
      });
      const cause = new Error('TransactionCanceledException');

      // Act
      const error = await staged.rejected(cause);

      // Assess
      expect(error).toBeInstanceOf(TransitionAlreadyDoneError);
      expect(error.cause).toBe(cause);
    });

    it('when built without an expected version, it conditions on the state only and raises the stored version by one', () => {
      // Act
      const staged = store().stagedTransition({
        orderId: 'order-1',
        from: 'PENDING',
        to: 'PAID',
        changes: { chargeId: 'ch_1' },
        at: NOW,
      });

      // Assess
      expect(staged.item).toEqual({
        Update: {
          TableName: TABLE,
          Key: { orderId: 'order-1' },
          UpdateExpression: 'SET #state = :to, #version = #version + :one, #updatedAt = :at, #c0 = :c0',
          ConditionExpression: '#state = :from',
          ExpressionAttributeNames: {
            '#state': 'state',
            '#version': 'version',
            '#updatedAt': 'updatedAt',
            '#c0': 'chargeId',
          },
          ExpressionAttributeValues: {
            ':from': 'PENDING',
            ':to': 'PAID',
            ':one': 1,
            ':at': NOW.toISOString(),
            ':c0': 'ch_1',
          },
        },
      });
    });

    it.each([
      {
        label: 'CANCELLED',
        now: order({ state: 'CANCELLED', version: 1 }),
        expected: IllegalTransitionError,
      },
      { label: 'still PENDING', now: order({ version: 1 }), expected: ConcurrentUpdateError },
    ])(
      'when its unversioned condition is rejected and the order is $label, it throws $expected.name',
      async ({ now, expected }) => {
        // Prepare
        docMock.on(GetCommand).resolves({ Item: now });
        const staged = store().stagedTransition({
          orderId: 'order-1',
          from: 'PENDING',
          to: 'PAID',
          changes: {},
          at: NOW,
        });

        // Act
        const error = await staged.rejected(new Error('TransactionCanceledException'));

        // Assess
        expect(error).toBeInstanceOf(expected);
      },
    );
  });

  describe('Method: captureGuardCheck', () => {
    it('when built, it is a ConditionCheck on the state, amount and currency that returns the order when it fails', () => {
      // Act
      const check = store().captureGuardCheck(GUARD);

      // Assess
      expect(check.item).toEqual({
        ConditionCheck: {
          TableName: TABLE,
          Key: { orderId: 'order-1' },
          ConditionExpression: '#state = :state AND #amountMinor = :amountMinor AND #currency = :currency',
          ExpressionAttributeNames: {
            '#state': 'state',
            '#amountMinor': 'amountMinor',
            '#currency': 'currency',
          },
          ExpressionAttributeValues: { ':state': 'PENDING', ':amountMinor': 1250, ':currency': 'EUR' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      });
    });

    it.each([
      { label: 'PAID', current: order({ state: 'PAID', version: 1 }), expected: OrderAlreadyPaidError },
      {
        label: 'CANCELLED',
        current: order({ state: 'CANCELLED', version: 1 }),
        expected: IllegalTransitionError,
      },
      { label: 'PENDING for 9.99', current: order({ amountMinor: 999 }), expected: PaymentMismatchError },
    ])(
      'when the check fails on a $label order, it explains it from the returned order without reading',
      async ({ current, expected }) => {
        // Prepare
        const cause = new Error('TransactionCanceledException');

        // Act
        const error = await store()
          .captureGuardCheck(GUARD)
          .rejected({ ...current }, cause);

        // Assess
        expect(error).toBeInstanceOf(expected);
        expect(error.cause).toBe(cause);
        expect(docMock).toHaveReceivedCommandTimes(GetCommand, 0);
      },
    );

    it('when the check fails and returned no order, it reads it once and, when there is none, throws OrderNotFoundError', async () => {
      // Prepare
      docMock.on(GetCommand).resolves({});

      // Act
      const error = await store().captureGuardCheck(GUARD).rejected(undefined, new Error('cancelled'));

      // Assess
      expect(error).toBeInstanceOf(OrderNotFoundError);
      expect(docMock).toHaveReceivedCommandTimes(GetCommand, 1);
    });

    it('when the check fails and the order exists and satisfies the guard when read, the error is transient', async () => {
      // Prepare
      docMock.on(GetCommand).resolves({ Item: order() });

      // Act
      const error = await store().captureGuardCheck(GUARD).rejected(undefined, new Error('cancelled'));

      // Assess
      expect(error).toBeInstanceOf(TransientError);
    });

    it('when the returned order is not a valid order, it throws CorruptOrderError', async () => {
      // Act
      const error = await thrownBy(() =>
        store()
          .captureGuardCheck(GUARD)
          .rejected({ ...order(), state: 'LOST' }, new Error('cancelled')),
      );

      // Assess
      expect(error).toBeInstanceOf(CorruptOrderError);
    });
  });
});
