import { createHash } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type AttributeValue,
  DynamoDBClient,
  PutItemCommand,
  TransactionCanceledException,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyPersistenceLayerError,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import {
  CLAIM_ATTR,
  GUARDED_ITEM_RECORD_ATTR,
  TransactionalDynamoDBPersistenceLayer,
  type StagedPrecondition,
  type StagedWrite,
  type TransactItem,
  type WarningSink,
} from '../../../lib/adapters/aws/transactional-persistence';
import { IllegalTransitionError, TransientError, TransitionAlreadyDoneError } from '../../../lib/core/errors';
import { lambdaContext } from '../../helpers/sqs-events';

const TABLE = 'tenang-test-idempotency';
const PREFIX = 'payment.capture';
const KEY = 'payment:pay-1:capture';
const PAYLOAD = { orderId: 'order-1', paymentId: 'pay-1', amountMinor: 1250, currency: 'EUR' };
const REQUEST = { idempotencyKey: KEY, payload: PAYLOAD };

const md5 = (text: string): string => createHash('md5').update(text).digest('base64');
/** Powertools' record key: prefix#md5(JSON of the key expression's value). */
const HASHED_KEY = `${PREFIX}#${md5(JSON.stringify(KEY))}`;
/** Powertools' payload hash: md5 of the JSON of the validated part, keys sorted. */
const PAYLOAD_HASH = md5(
  JSON.stringify(Object.fromEntries(Object.entries(PAYLOAD).sort(([a], [b]) => a.localeCompare(b)))),
);

const ddbMock = mockClient(DynamoDBClient);
const docMock = mockClient(DynamoDBDocumentClient);

/** The business write a handler would stage (its content is opaque to the layer). */
function businessWrite(
  rejected: Error = new TransitionAlreadyDoneError('order is already PAID'),
): StagedWrite {
  return {
    item: {
      Update: {
        TableName: 'orders',
        Key: { orderId: 'order-1' },
        UpdateExpression: 'SET #state = :to',
        ConditionExpression: '#state = :from',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':to': 'PAID', ':from': 'PENDING' },
      },
    },
    rejected: (cause) => {
      Object.assign(rejected, { cause });
      return Promise.resolve(rejected);
    },
  };
}

/** A precondition on the order (its content is opaque to the layer); `rejected` records what it saw. */
function orderPrecondition(
  rejected: Error = new IllegalTransitionError('order is CANCELLED'),
): StagedPrecondition & {
  readonly seen: { current: Record<string, unknown> | undefined; cause: unknown }[];
} {
  const seen: { current: Record<string, unknown> | undefined; cause: unknown }[] = [];
  return {
    seen,
    item: {
      ConditionCheck: {
        TableName: 'orders',
        Key: { orderId: 'order-1' },
        ConditionExpression: '#state = :pending',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':pending': 'PENDING' },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    rejected: (current, cause) => {
      seen.push({ current, cause });
      return Promise.resolve(rejected);
    },
  };
}

interface Setup {
  readonly layer: TransactionalDynamoDBPersistenceLayer;
  readonly warnings: jest.Mocked<WarningSink>;
  /**
   * Calls the idempotent function; `body` runs inside it (it may stage). With `precondition`, it
   * is staged before the call and released after, as the payment consumer does.
   */
  readonly run: (
    body: (layer: TransactionalDynamoDBPersistenceLayer) => unknown,
    precondition?: StagedPrecondition,
  ) => Promise<unknown>;
}

function setup(options: { readonly guardedItemRecordAttr?: string } = {}): Setup {
  const warnings = { warn: jest.fn() };
  const layer = new TransactionalDynamoDBPersistenceLayer({
    tableName: TABLE,
    awsSdkV3Client: new DynamoDBClient({ region: 'eu-west-1' }),
    warnings,
    ...options,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'idempotencyKey',
    payloadValidationJmesPath: 'payload',
    throwOnNoIdempotencyKey: true,
  });
  config.registerLambdaContext(lambdaContext(20_000));
  layer.configure({ config, keyPrefix: PREFIX });
  let body: (layer: TransactionalDynamoDBPersistenceLayer) => unknown = () => ({});
  const idempotent = makeIdempotent(
    async (request: typeof REQUEST) => {
      void request;
      return await body(layer);
    },
    { persistenceStore: layer, config, keyPrefix: PREFIX },
  );
  return {
    layer,
    warnings,
    run: async (b, precondition) => {
      body = b;
      const release = precondition === undefined ? undefined : layer.stagePrecondition(REQUEST, precondition);
      try {
        return await idempotent(REQUEST);
      } finally {
        release?.();
      }
    },
  };
}

/** A stored idempotency record as DynamoDB returns it (AttributeValues). */
function storedRecord(
  status: 'COMPLETED' | 'INPROGRESS',
  data?: Record<string, unknown>,
): Record<string, AttributeValue> {
  return marshall({
    id: HASHED_KEY,
    status,
    expiration: Math.floor(Date.now() / 1000) + 3600,
    in_progress_expiration: Date.now() + 20_000,
    validation: PAYLOAD_HASH,
    ...(data === undefined ? {} : { data }),
  });
}

/** The order a failed ConditionCheck returns (AttributeValues). */
const CANCELLED_ORDER: Record<string, AttributeValue> = marshall({
  orderId: 'order-1',
  state: 'CANCELLED',
  version: 2,
});

async function thrownBy(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const cancelled = (...codes: string[]): TransactionCanceledException =>
  new TransactionCanceledException({
    message: `Transaction cancelled [${codes.join(', ')}]`,
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

/** A cancellation whose reasons carry the items DynamoDB returns with ALL_OLD. */
const cancelledWith = (
  ...reasons: { Code: string; Item?: Record<string, AttributeValue> }[]
): TransactionCanceledException =>
  new TransactionCanceledException({
    message: `Transaction cancelled [${reasons.map((r) => r.Code).join(', ')}]`,
    $metadata: {},
    CancellationReasons: reasons,
  });

/** The TransactItems of the n-th TransactWriteItems sent. */
const transactItems = (n: number) =>
  docMock.commandCalls(TransactWriteCommand)[n]?.args[0].input.TransactItems ?? [];

beforeEach(() => {
  ddbMock.reset();
  docMock.reset();
  ddbMock.on(PutItemCommand).resolves({});
  ddbMock.on(UpdateItemCommand).resolves({});
  ddbMock.on(DeleteItemCommand).resolves({});
  docMock.on(TransactWriteCommand).resolves({});
  docMock.on(DeleteCommand).resolves({});
  docMock.on(UpdateCommand).resolves({});
  // The record a cancelled completion reads back: still the INPROGRESS one this job put.
  docMock.on(GetCommand).resolves({ Item: { status: 'INPROGRESS' } });
});

describe('Class: TransactionalDynamoDBPersistenceLayer', () => {
  describe('Method: _updateRecord', () => {
    it('when a write is staged, it commits the write and the COMPLETED record in one TransactWriteItems and sends no UpdateItem', async () => {
      // Prepare
      const { run } = setup();
      const staged = businessWrite();

      // Act
      const result = await run((layer) => {
        layer.stage(REQUEST, staged);
        return { outcome: 'captured', chargeId: 'ch_1' };
      });

      // Assess
      expect(result).toEqual({ outcome: 'captured', chargeId: 'ch_1' });
      expect(ddbMock).toHaveReceivedCommandTimes(PutItemCommand, 1);
      expect(ddbMock).toHaveReceivedCommandTimes(UpdateItemCommand, 0);
      expect(docMock).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
      expect(docMock).toHaveReceivedCommandWith(TransactWriteCommand, {
        TransactItems: [
          staged.item,
          {
            Update: {
              TableName: TABLE,
              Key: { id: HASHED_KEY },
              UpdateExpression:
                'SET #expiry = :expiry, #status = :status, #response_data = :response_data, #validation_key = :validation_key',
              ExpressionAttributeNames: {
                '#expiry': 'expiration',
                '#status': 'status',
                '#response_data': 'data',
                '#validation_key': 'validation',
              },
              ExpressionAttributeValues: {
                ':expiry': expect.any(Number) as unknown,
                ':status': 'COMPLETED',
                ':response_data': { outcome: 'captured', chargeId: 'ch_1' },
                ':validation_key': PAYLOAD_HASH,
              },
            },
          },
        ],
      });
    });

    it('when a write is staged, the INPROGRESS record it completes is the one Powertools put', async () => {
      // Prepare
      const { run } = setup();

      // Act
      await run((layer) => layer.stage(REQUEST, businessWrite()));

      // Assess
      const put = ddbMock.commandCalls(PutItemCommand)[0]?.args[0].input;
      expect(put?.Item?.id).toEqual({ S: HASHED_KEY });
      expect(put?.Item?.status).toEqual({ S: 'INPROGRESS' });
      expect(put?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    });

    it('when nothing is staged, it completes the record with Powertools’ own UpdateItem', async () => {
      // Prepare
      const { run } = setup();

      // Act
      await run(() => ({ outcome: 'duplicate_ignored' }));

      // Assess
      expect(ddbMock).toHaveReceivedCommandTimes(UpdateItemCommand, 1);
      expect(docMock).toHaveReceivedCommandTimes(TransactWriteCommand, 0);
    });

    it('when the business condition cancels the transaction, it releases the INPROGRESS record and throws the write’s domain error', async () => {
      // Prepare
      const { run, layer } = setup();
      const failure = cancelled('ConditionalCheckFailed', 'None');
      docMock.on(TransactWriteCommand).rejects(failure);

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, businessWrite())));

      // Assess: Powertools wraps what its persistence layer throws; the domain error is the cause.
      expect(error).toBeInstanceOf(IdempotencyPersistenceLayerError);
      const cause = (error as Error).cause;
      expect(cause).toBeInstanceOf(TransitionAlreadyDoneError);
      expect((cause as Error).cause).toBe(failure);
      expect(docMock).toHaveReceivedCommandWith(DeleteCommand, {
        TableName: TABLE,
        Key: { id: HASHED_KEY },
        ConditionExpression: '#status = :inprogress',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':inprogress': 'INPROGRESS' },
      });
      expect(layer.stagedCount).toBe(0);
    });

    it('when the business condition cancels a resent transaction that had committed (its answer lost), the record is COMPLETED and the job succeeds', async () => {
      // Prepare: the first attempt committed, its answer was lost; the SDK's resend finds PAID.
      const { run, layer } = setup();
      docMock.on(TransactWriteCommand).rejects(cancelled('ConditionalCheckFailed', 'None'));
      docMock.on(GetCommand).resolves({ Item: { status: 'COMPLETED' } });

      // Act
      const result = await run((l) => {
        l.stage(REQUEST, businessWrite());
        return { outcome: 'captured' };
      });

      // Assess: one strongly consistent read of the record, no release, no error.
      expect(result).toEqual({ outcome: 'captured' });
      expect(docMock).toHaveReceivedCommandWith(GetCommand, {
        TableName: TABLE,
        Key: { id: HASHED_KEY },
        ConsistentRead: true,
      });
      expect(docMock).toHaveReceivedCommandTimes(DeleteCommand, 0);
      expect(layer.stagedCount).toBe(0);
    });

    it('when the business condition cancels it and the record cannot be read, it warns and the domain error still surfaces', async () => {
      // Prepare
      const { run, warnings } = setup();
      docMock.on(TransactWriteCommand).rejects(cancelled('ConditionalCheckFailed', 'None'));
      const unreachable = Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
      docMock.on(GetCommand).rejects(unreachable);

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, businessWrite())));

      // Assess: not knowing, the job is refused (DLQ); a safe replay skips it once COMPLETED.
      expect((error as Error).cause).toBeInstanceOf(TransitionAlreadyDoneError);
      expect(warnings.warn).toHaveBeenCalledWith(
        'could not read the idempotency record after a cancelled completion',
        { error: unreachable, idempotencyKey: HASHED_KEY },
      );
      expect(docMock).toHaveReceivedCommandTimes(DeleteCommand, 1);
    });

    it('when a conflicting transaction cancels it, it throws a TransientError without reading the record', async () => {
      // Prepare
      const { run } = setup();
      docMock.on(TransactWriteCommand).rejects(cancelled('None', 'TransactionConflict'));

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, businessWrite())));

      // Assess
      expect((error as Error).cause).toBeInstanceOf(TransientError);
      expect(docMock).toHaveReceivedCommandTimes(DeleteCommand, 1);
      expect(docMock).toHaveReceivedCommandTimes(GetCommand, 0);
    });

    it('when the INPROGRESS record is no longer ours, the release fails quietly and the domain error still surfaces', async () => {
      // Prepare
      const { run, warnings } = setup();
      docMock.on(TransactWriteCommand).rejects(cancelled('ConditionalCheckFailed', 'None'));
      docMock
        .on(DeleteCommand)
        .rejects(
          new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} }),
        );

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, businessWrite())));

      // Assess
      expect((error as Error).cause).toBeInstanceOf(TransitionAlreadyDoneError);
      expect(warnings.warn).not.toHaveBeenCalled();
    });

    it('when the release cannot reach DynamoDB, it reports a warning and the domain error still surfaces', async () => {
      // Prepare
      const { run, warnings } = setup();
      docMock.on(TransactWriteCommand).rejects(cancelled('ConditionalCheckFailed', 'None'));
      const unreachable = Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
      docMock.on(DeleteCommand).rejects(unreachable);

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, businessWrite())));

      // Assess
      expect((error as Error).cause).toBeInstanceOf(TransitionAlreadyDoneError);
      expect(warnings.warn).toHaveBeenCalledWith('could not release the INPROGRESS idempotency record', {
        error: unreachable,
        idempotencyKey: HASHED_KEY,
      });
    });

    it('when the transaction fails without a cancellation (network), it rethrows and keeps the record for its expiry', async () => {
      // Prepare
      const { run } = setup();
      const failure = Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
      docMock.on(TransactWriteCommand).rejects(failure);

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, businessWrite())));

      // Assess: it may have committed; only the record's expiry or the business condition can tell.
      expect((error as Error).cause).toBe(failure);
      expect(docMock).toHaveReceivedCommandTimes(DeleteCommand, 0);
    });
  });

  describe('Method: _putRecord (Powertools)', () => {
    it('when the record exists and is COMPLETED, it answers the stored result with one DynamoDB call and never runs the function', async () => {
      // Prepare
      const { run } = setup();
      ddbMock.on(PutItemCommand).rejects(
        new ConditionalCheckFailedException({
          message: 'The conditional request failed',
          $metadata: {},
          Item: {
            id: { S: HASHED_KEY },
            status: { S: 'COMPLETED' },
            expiration: { N: String(Math.floor(Date.now() / 1000) + 3600) },
            data: { M: { outcome: { S: 'captured' }, chargeId: { S: 'ch_1' } } },
            validation: { S: PAYLOAD_HASH },
          },
        }),
      );
      const body = jest.fn();

      // Act
      const result = await run(body);

      // Assess
      expect(result).toEqual({ outcome: 'captured', chargeId: 'ch_1' });
      expect(body).not.toHaveBeenCalled();
      expect(ddbMock.calls()).toHaveLength(1);
      expect(docMock.calls()).toHaveLength(0);
    });
  });

  describe('Method: _deleteRecord', () => {
    it('when the function throws after staging, the staged write is dropped with the record', async () => {
      // Prepare
      const { run, layer } = setup();

      // Act
      await thrownBy(() =>
        run((l) => {
          l.stage(REQUEST, businessWrite());
          throw new TransientError('provider answered 503');
        }),
      );

      // Assess
      expect(ddbMock).toHaveReceivedCommandTimes(DeleteItemCommand, 1);
      expect(docMock).toHaveReceivedCommandTimes(TransactWriteCommand, 0);
      expect(layer.stagedCount).toBe(0);
    });
  });

  describe('Method: stage', () => {
    it('when a write is already staged for the key, it throws (the function fails and nothing commits)', async () => {
      // Prepare
      const { run, layer } = setup();

      // Act
      const error = await thrownBy(() =>
        run((l) => {
          l.stage(REQUEST, businessWrite());
          l.stage(REQUEST, businessWrite());
        }),
      );

      // Assess
      expect((error as Error).message).toContain('a write is already staged');
      expect(docMock).toHaveReceivedCommandTimes(TransactWriteCommand, 0);
      expect(layer.stagedCount).toBe(0);
    });
  });

  describe('Method: _putRecord (with a precondition)', () => {
    it('when a precondition is staged, it claims the job in ONE TransactWriteItems: Powertools’ INPROGRESS put and the check', async () => {
      // Prepare
      const { run } = setup();
      const precondition = orderPrecondition();
      const body = jest.fn((layer: TransactionalDynamoDBPersistenceLayer) => layer.preconditionHeld(REQUEST));

      // Act
      const held = await run(body, precondition);

      // Assess
      expect(held).toBe(true);
      expect(ddbMock).toHaveReceivedCommandTimes(PutItemCommand, 0);
      const [put, check] = transactItems(0);
      expect(check).toEqual(precondition.item);
      expect(put?.Put).toMatchObject({
        TableName: TABLE,
        Item: {
          id: HASHED_KEY,
          status: 'INPROGRESS',
          expiration: expect.any(Number) as unknown,
          in_progress_expiration: expect.any(Number) as unknown,
          validation: PAYLOAD_HASH,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    });

    it('when a precondition is staged, the put is the one Powertools would send (same item, condition, names and values), plus its claim token', async () => {
      // Prepare: Powertools' own PutItem first (nothing staged), then ours.
      const plain = setup();
      await plain.run(() => ({}));
      const powertools = ddbMock.commandCalls(PutItemCommand)[0]?.args[0].input;
      const { run } = setup();

      // Act
      await run(() => ({}), orderPrecondition());

      // Assess
      const ours = transactItems(0)[0]?.Put;
      const expressionValues = (values: Record<string, unknown> | undefined) =>
        Object.keys(values ?? {}).sort();
      expect(Object.keys(ours?.Item ?? {}).sort()).toEqual(
        [...Object.keys(unmarshall(powertools?.Item ?? {})), CLAIM_ATTR].sort(),
      );
      expect(ours?.Item?.[CLAIM_ATTR]).toMatch(/^[0-9a-f-]{36}$/);
      expect(ours?.ConditionExpression).toBe(powertools?.ConditionExpression);
      expect(ours?.ExpressionAttributeNames).toEqual(powertools?.ExpressionAttributeNames);
      expect(expressionValues(ours?.ExpressionAttributeValues)).toEqual(
        expressionValues(powertools?.ExpressionAttributeValues),
      );
      expect(ours?.ExpressionAttributeValues?.[':inprogress']).toBe('INPROGRESS');
    });

    it('when the record exists and is COMPLETED, it answers the stored result with one call, whatever the precondition says', async () => {
      // Prepare
      const { run } = setup();
      const precondition = orderPrecondition();
      docMock
        .on(TransactWriteCommand)
        .rejectsOnce(
          cancelledWith(
            { Code: 'ConditionalCheckFailed', Item: storedRecord('COMPLETED', { outcome: 'captured' }) },
            { Code: 'ConditionalCheckFailed', Item: CANCELLED_ORDER },
          ),
        );
      const body = jest.fn();

      // Act
      const result = await run(body, precondition);

      // Assess
      expect(result).toEqual({ outcome: 'captured' });
      expect(body).not.toHaveBeenCalled();
      expect(precondition.seen).toEqual([]);
      expect(docMock.calls()).toHaveLength(1);
      expect(ddbMock.calls()).toHaveLength(0);
    });

    it('when the record exists and is INPROGRESS, it raises Powertools’ in-progress error with one call', async () => {
      // Prepare
      const { run } = setup();
      docMock
        .on(TransactWriteCommand)
        .rejectsOnce(
          cancelledWith(
            { Code: 'ConditionalCheckFailed', Item: storedRecord('INPROGRESS') },
            { Code: 'None' },
          ),
        );
      const body = jest.fn();

      // Act
      const error = await thrownBy(() => run(body, orderPrecondition()));

      // Assess
      expect(error).toBeInstanceOf(IdempotencyAlreadyInProgressError);
      expect(body).not.toHaveBeenCalled();
      expect(docMock.calls()).toHaveLength(1);
    });

    it('when a resent claim finds the INPROGRESS record its own earlier attempt wrote (same claim token), the job is claimed and runs', async () => {
      // Prepare: the first attempt committed and its answer was lost; the resend finds its record.
      const { run, layer } = setup();
      docMock.on(TransactWriteCommand).callsFakeOnce((input: { TransactItems: TransactItem[] }) => {
        const written = input.TransactItems[0]?.Put?.Item ?? {};
        throw cancelledWith(
          {
            Code: 'ConditionalCheckFailed',
            Item: marshall({ ...unmarshall(storedRecord('INPROGRESS')), [CLAIM_ATTR]: written[CLAIM_ATTR] }),
          },
          { Code: 'None' },
        );
      });
      const body = jest.fn(() => {
        expect(layer.preconditionHeld(REQUEST)).toBe(true);
        return { outcome: 'captured' };
      });

      // Act
      const result = await run(body, orderPrecondition());

      // Assess
      expect(result).toEqual({ outcome: 'captured' });
      expect(body).toHaveBeenCalledTimes(1);
      expect(docMock).toHaveReceivedCommandTimes(DeleteCommand, 0);
    });

    it('when only the precondition fails, it throws its domain error from the returned item, writes nothing and never runs the function', async () => {
      // Prepare
      const { run, layer } = setup();
      const domain = new IllegalTransitionError('order is CANCELLED');
      const precondition = orderPrecondition(domain);
      const failure = cancelledWith(
        { Code: 'None' },
        { Code: 'ConditionalCheckFailed', Item: CANCELLED_ORDER },
      );
      docMock.on(TransactWriteCommand).rejectsOnce(failure);
      const body = jest.fn();

      // Act
      const error = await thrownBy(() => run(body, precondition));

      // Assess: Powertools wraps what its persistence layer throws; the domain error is the cause.
      expect(error).toBeInstanceOf(IdempotencyPersistenceLayerError);
      expect((error as Error).cause).toBe(domain);
      expect(precondition.seen).toEqual([
        { current: { orderId: 'order-1', state: 'CANCELLED', version: 2 }, cause: failure },
      ]);
      expect(body).not.toHaveBeenCalled();
      // Nothing to delete: the cancelled transaction wrote no INPROGRESS record.
      expect(docMock.calls()).toHaveLength(1);
      expect(ddbMock.calls()).toHaveLength(0);
      expect(layer.stagedCount).toBe(0);
    });

    it('when the precondition fails on an item that does not exist, it hands the precondition no item', async () => {
      // Prepare
      const { run } = setup();
      const precondition = orderPrecondition();
      docMock.on(TransactWriteCommand).rejectsOnce(cancelled('None', 'ConditionalCheckFailed'));

      // Act
      await thrownBy(() => run(() => ({}), precondition));

      // Assess
      expect(precondition.seen.map((s) => s.current)).toEqual([undefined]);
    });

    it('when a conflicting transaction cancels the claim, it throws a TransientError', async () => {
      // Prepare
      const { run } = setup();
      docMock.on(TransactWriteCommand).rejectsOnce(cancelled('None', 'TransactionConflict'));

      // Act
      const error = await thrownBy(() => run(() => ({}), orderPrecondition()));

      // Assess
      expect((error as Error).cause).toBeInstanceOf(TransientError);
    });

    it('when the claim fails without a cancellation (network), it rethrows the SDK error', async () => {
      // Prepare
      const { run } = setup();
      const failure = Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
      docMock.on(TransactWriteCommand).rejectsOnce(failure);

      // Act
      const error = await thrownBy(() => run(() => ({}), orderPrecondition()));

      // Assess
      expect((error as Error).cause).toBe(failure);
    });

    it('when a precondition and a write are staged, the whole job costs two TransactWriteItems and nothing else', async () => {
      // Prepare
      const { run, layer } = setup();
      const staged = businessWrite();

      // Act
      await run((l) => l.stage(REQUEST, staged), orderPrecondition());

      // Assess
      expect(docMock).toHaveReceivedCommandTimes(TransactWriteCommand, 2);
      expect(transactItems(1)[0]).toEqual(staged.item);
      expect(ddbMock.calls()).toHaveLength(0);
      expect(layer.stagedCount).toBe(0);
    });
  });

  describe('Method: stagePrecondition', () => {
    it('when the layer is not configured yet, it throws: the key would not be the one Powertools hashes', () => {
      // Prepare
      const layer = new TransactionalDynamoDBPersistenceLayer({
        tableName: TABLE,
        awsSdkV3Client: new DynamoDBClient({ region: 'eu-west-1' }),
      });

      // Act
      const stage = () => layer.stagePrecondition(REQUEST, orderPrecondition());

      // Assess
      expect(stage).toThrow('configure the persistence layer before staging a precondition');
    });

    it('when a job with the same key is in flight, it throws a TransientError and leaves that job’s staging alone', () => {
      // Prepare
      const { layer } = setup();
      const first = layer.stagePrecondition(REQUEST, orderPrecondition());

      // Act
      const error = (() => {
        try {
          layer.stagePrecondition(REQUEST, orderPrecondition());
        } catch (thrown) {
          return thrown;
        }
        throw new Error('expected a throw');
      })();

      // Assess
      expect(error).toBeInstanceOf(TransientError);
      expect(layer.stagedCount).toBe(1);
      first();
      expect(layer.stagedCount).toBe(0);
    });

    it('when released twice or after another job took the key, the release drops only its own staging', () => {
      // Prepare
      const { layer } = setup();
      const first = layer.stagePrecondition(REQUEST, orderPrecondition());
      first();
      layer.stagePrecondition(REQUEST, orderPrecondition());

      // Act
      first();

      // Assess
      expect(layer.stagedCount).toBe(1);
    });
  });

  describe('Method: preconditionHeld', () => {
    it('when nothing was staged for the job, it answers false (the claim was Powertools’ plain PutItem)', async () => {
      // Prepare
      const { run } = setup();

      // Act
      const held = await run((layer) => layer.preconditionHeld(REQUEST));

      // Assess
      expect(held).toBe(false);
      expect(ddbMock).toHaveReceivedCommandTimes(PutItemCommand, 1);
    });
  });

  describe('Option: guardedItemRecordAttr (the record on the guarded item)', () => {
    const ATTR = GUARDED_ITEM_RECORD_ATTR;
    /** The order the precondition guards, as stored. */
    const PENDING_ORDER = { orderId: 'order-1', state: 'PENDING', version: 0 };
    const onItem = (): Setup => setup({ guardedItemRecordAttr: ATTR });
    /** The n-th UpdateItem sent (document client form). */
    const update = (n: number): UpdateCommandInput | undefined =>
      docMock.commandCalls(UpdateCommand)[n]?.args[0].input;
    /** The failure of a conditional UpdateItem, with the item it returns (ALL_OLD). */
    const conditionFailed = (item?: Record<string, unknown>): ConditionalCheckFailedException =>
      new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: {},
        ...(item === undefined ? {} : { Item: marshall(item) }),
      });
    /** A record as it sits in the order's map attribute. */
    const recordOnOrder = (
      status: 'COMPLETED' | 'INPROGRESS',
      extra: Record<string, unknown> = {},
    ): Record<string, unknown> => ({ ...unmarshall(storedRecord(status)), ...extra });

    it('when a precondition is staged, it claims with ONE UpdateItem of the guarded item: the guard AND Powertools’ put condition on the record map', async () => {
      // Prepare
      const { run } = onItem();
      const precondition = orderPrecondition();

      // Act
      const held = await run((layer) => layer.preconditionHeld(REQUEST), precondition);

      // Assess
      expect(held).toBe(true);
      const claim = update(0);
      expect(claim).toMatchObject({
        TableName: 'orders',
        Key: { orderId: 'order-1' },
        UpdateExpression: 'SET #idem = :idem_record',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
      expect(claim?.ConditionExpression).toBe(
        'attribute_exists(#idem_item_key) AND (#g0 = :g0) AND (attribute_not_exists(#idem) OR #idem.#idem_expiry < :idem_now OR ' +
          '(#idem.#idem_status = :idem_inprogress AND attribute_exists(#idem.#idem_in_progress_expiry) AND #idem.#idem_in_progress_expiry < :idem_now_in_millis) OR ' +
          '(#idem.#idem_key <> :idem_key AND #idem.#idem_status <> :idem_inprogress))',
      );
      expect(claim?.ExpressionAttributeNames).toEqual({
        '#g0': 'state',
        '#idem_item_key': 'orderId',
        '#idem': ATTR,
        '#idem_key': 'id',
        '#idem_status': 'status',
        '#idem_expiry': 'expiration',
        '#idem_in_progress_expiry': 'in_progress_expiration',
      });
      expect(claim?.ExpressionAttributeValues).toMatchObject({
        ':g0': 'PENDING',
        ':idem_key': HASHED_KEY,
        ':idem_inprogress': 'INPROGRESS',
        ':idem_record': {
          id: HASHED_KEY,
          status: 'INPROGRESS',
          expiration: expect.any(Number) as unknown,
          in_progress_expiration: expect.any(Number) as unknown,
          validation: PAYLOAD_HASH,
          [CLAIM_ATTR]: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
        },
      });
      expect(docMock).toHaveReceivedCommandTimes(TransactWriteCommand, 0);
      expect(ddbMock.calls()).toHaveLength(0);
    });

    it('when a write of the same item is staged, the completion is ONE UpdateItem: the write’s SET and condition merged with the record’s completion, on condition it is still this claim’s INPROGRESS one', async () => {
      // Prepare
      const { run, layer } = onItem();
      const staged = businessWrite();

      // Act
      const result = await run((l) => {
        l.stage(REQUEST, staged);
        return { outcome: 'captured', chargeId: 'ch_1' };
      }, orderPrecondition());

      // Assess: two calls in all, each a single-item write.
      expect(result).toEqual({ outcome: 'captured', chargeId: 'ch_1' });
      expect(docMock.calls()).toHaveLength(2);
      expect(ddbMock.calls()).toHaveLength(0);
      const claimed = update(0)?.ExpressionAttributeValues?.[':idem_record'] as Record<string, unknown>;
      expect(update(1)).toEqual({
        TableName: 'orders',
        Key: { orderId: 'order-1' },
        UpdateExpression: 'SET #w0 = :w0, #idem = :idem_record',
        ConditionExpression:
          '(#w0 = :w1) AND #idem.#idem_claim = :idem_claim AND #idem.#idem_status = :idem_inprogress',
        ExpressionAttributeNames: {
          '#w0': 'state',
          '#idem': ATTR,
          '#idem_claim': CLAIM_ATTR,
          '#idem_status': 'status',
        },
        ExpressionAttributeValues: {
          ':w0': 'PAID',
          ':w1': 'PENDING',
          ':idem_record': {
            id: HASHED_KEY,
            status: 'COMPLETED',
            expiration: expect.any(Number) as unknown,
            data: { outcome: 'captured', chargeId: 'ch_1' },
            validation: PAYLOAD_HASH,
            [CLAIM_ATTR]: claimed[CLAIM_ATTR],
          },
          ':idem_claim': claimed[CLAIM_ATTR],
          ':idem_inprogress': 'INPROGRESS',
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
      expect(layer.stagedCount).toBe(0);
    });

    it('when the staged write’s placeholders are the record’s own names, the merge renames them and keeps both', async () => {
      // Prepare: a write that uses #idem, :idem_record and a REMOVE clause.
      const { run } = onItem();
      const staged: StagedWrite = {
        item: {
          Update: {
            TableName: 'orders',
            Key: { orderId: 'order-1' },
            UpdateExpression: 'SET #idem = :idem_record REMOVE #gone',
            ConditionExpression: 'attribute_exists(#idem)',
            ExpressionAttributeNames: { '#idem': 'note', '#gone': 'draft' },
            ExpressionAttributeValues: { ':idem_record': 'paid' },
          },
        },
        rejected: () => Promise.resolve(new Error('unused')),
      };

      // Act
      await run((l) => l.stage(REQUEST, staged), orderPrecondition());

      // Assess
      const completion = update(1);
      expect(completion?.UpdateExpression).toBe('SET #w0 = :w0, #idem = :idem_record REMOVE #w1');
      expect(completion?.ConditionExpression).toBe(
        '(attribute_exists(#w0)) AND #idem.#idem_claim = :idem_claim AND #idem.#idem_status = :idem_inprogress',
      );
      expect(completion?.ExpressionAttributeNames).toMatchObject({
        '#w0': 'note',
        '#w1': 'draft',
        '#idem': ATTR,
      });
      expect(completion?.ExpressionAttributeValues).toMatchObject({
        ':w0': 'paid',
        ':idem_record': expect.objectContaining({ status: 'COMPLETED' }) as unknown,
      });
    });

    it('when the record on the item is this key’s and COMPLETED, it answers the stored result with one call, whatever the guard says', async () => {
      // Prepare: the order is PAID (the guard would fail), the record is the capture's.
      const { run } = onItem();
      const precondition = orderPrecondition();
      docMock.on(UpdateCommand).rejectsOnce(
        conditionFailed({
          ...PENDING_ORDER,
          state: 'PAID',
          version: 1,
          [ATTR]: recordOnOrder('COMPLETED', { data: { outcome: 'captured' }, [CLAIM_ATTR]: 'earlier' }),
        }),
      );
      const body = jest.fn();

      // Act
      const result = await run(body, precondition);

      // Assess
      expect(result).toEqual({ outcome: 'captured' });
      expect(body).not.toHaveBeenCalled();
      expect(precondition.seen).toEqual([]);
      expect(docMock.calls()).toHaveLength(1);
      expect(ddbMock.calls()).toHaveLength(0);
    });

    it('when the record on the item is this key’s with another payload, Powertools’ validation refuses the job', async () => {
      // Prepare
      const { run } = onItem();
      docMock.on(UpdateCommand).rejectsOnce(
        conditionFailed({
          ...PENDING_ORDER,
          [ATTR]: recordOnOrder('COMPLETED', { validation: 'another-payload-hash', data: {} }),
        }),
      );
      const body = jest.fn();

      // Act
      const error = await thrownBy(() => run(body, orderPrecondition()));

      // Assess
      expect(error).toBeInstanceOf(IdempotencyValidationError);
      expect(body).not.toHaveBeenCalled();
    });

    it('when the record on the item is this key’s and INPROGRESS, it raises Powertools’ in-progress error with one call and tells its in-progress expiry', async () => {
      // Prepare
      const { layer, run } = onItem();
      const record = recordOnOrder('INPROGRESS', { [CLAIM_ATTR]: 'another-delivery' });
      docMock.on(UpdateCommand).rejectsOnce(conditionFailed({ ...PENDING_ORDER, [ATTR]: record }));
      // Staged by hand: the runner asks for the expiry before it releases the staging.
      const release = layer.stagePrecondition(REQUEST, orderPrecondition());

      // Act
      const error = await thrownBy(() => run(() => ({})));
      const until = layer.inProgressExpiryOf(REQUEST);
      release();

      // Assess
      expect(error).toBeInstanceOf(IdempotencyAlreadyInProgressError);
      expect(until).toBe(record.in_progress_expiration);
      expect(docMock.calls()).toHaveLength(1);
    });

    it('when another key’s live INPROGRESS record holds the item (another payment of the order), it is answered in progress, never overwritten', async () => {
      // Prepare
      const { layer, run } = onItem();
      const precondition = orderPrecondition();
      const otherExpiry = Date.now() + 7_000;
      docMock.on(UpdateCommand).rejectsOnce(
        conditionFailed({
          ...PENDING_ORDER,
          [ATTR]: recordOnOrder('INPROGRESS', {
            id: `${PREFIX}#another-key`,
            validation: 'another-payload-hash',
            in_progress_expiration: otherExpiry,
            [CLAIM_ATTR]: 'theirs',
          }),
        }),
      );
      const body = jest.fn();
      // Staged by hand: the runner asks for the expiry before it releases the staging.
      const release = layer.stagePrecondition(REQUEST, precondition);

      // Act
      const error = await thrownBy(() => run(body));
      const until = layer.inProgressExpiryOf(REQUEST);
      release();

      // Assess: a wait for the other claim's expiry, not a validation error or a guard failure.
      expect(error).toBeInstanceOf(IdempotencyAlreadyInProgressError);
      expect(until).toBe(otherExpiry);
      expect(precondition.seen).toEqual([]);
      expect(body).not.toHaveBeenCalled();
      expect(docMock.calls()).toHaveLength(1);
    });

    it.each([
      { label: 'no record', record: undefined },
      {
        label: 'another key’s COMPLETED record',
        record: recordOnOrder('COMPLETED', { id: `${PREFIX}#another-key` }),
      },
      {
        label: 'this key’s expired record',
        record: recordOnOrder('COMPLETED', { expiration: Math.floor(Date.now() / 1000) - 10 }),
      },
    ])(
      'when the guard fails on an item with $label, it throws the precondition’s rejection, which sees the item without the record, and never runs the function',
      async ({ record }) => {
        // Prepare
        const { run, layer } = onItem();
        const domain = new IllegalTransitionError('order is CANCELLED');
        const precondition = orderPrecondition(domain);
        const cancelledOrder = { ...PENDING_ORDER, state: 'CANCELLED', version: 2 };
        const failure = conditionFailed({
          ...cancelledOrder,
          ...(record === undefined ? {} : { [ATTR]: record }),
        });
        docMock.on(UpdateCommand).rejectsOnce(failure);
        const body = jest.fn();

        // Act
        const error = await thrownBy(() => run(body, precondition));

        // Assess
        expect(error).toBeInstanceOf(IdempotencyPersistenceLayerError);
        expect((error as Error).cause).toBe(domain);
        expect(precondition.seen).toEqual([{ current: cancelledOrder, cause: failure }]);
        expect(body).not.toHaveBeenCalled();
        expect(docMock.calls()).toHaveLength(1);
        expect(layer.stagedCount).toBe(0);
      },
    );

    it('when the guarded item does not exist, it hands the precondition no item', async () => {
      // Prepare
      const { run } = onItem();
      const precondition = orderPrecondition();
      docMock.on(UpdateCommand).rejectsOnce(conditionFailed());

      // Act
      await thrownBy(() => run(() => ({}), precondition));

      // Assess
      expect(precondition.seen.map((s) => s.current)).toEqual([undefined]);
    });

    it('when a resent claim finds the record its own earlier attempt wrote (same claim token), the job is claimed and runs', async () => {
      // Prepare: the first attempt was applied and its answer lost; the resend finds its record.
      const { run, layer } = onItem();
      docMock.on(UpdateCommand).callsFakeOnce((input: UpdateCommandInput) => {
        const written = input.ExpressionAttributeValues?.[':idem_record'] as Record<string, unknown>;
        throw conditionFailed({ ...PENDING_ORDER, [ATTR]: written });
      });
      const body = jest.fn(() => {
        expect(layer.preconditionHeld(REQUEST)).toBe(true);
        return { outcome: 'captured' };
      });

      // Act
      const result = await run((l) => {
        l.stage(REQUEST, businessWrite());
        return body();
      }, orderPrecondition());

      // Assess
      expect(result).toEqual({ outcome: 'captured' });
      expect(body).toHaveBeenCalledTimes(1);
      expect(docMock).toHaveReceivedCommandTimes(UpdateCommand, 2);
    });

    it('when a resent completion finds the record COMPLETED with its claim token (its answer was lost), the job is done with no release', async () => {
      // Prepare
      const { run, layer } = onItem();
      docMock
        .on(UpdateCommand)
        .resolvesOnce({})
        .callsFakeOnce((input: UpdateCommandInput) => {
          const written = input.ExpressionAttributeValues?.[':idem_record'] as Record<string, unknown>;
          throw conditionFailed({ ...PENDING_ORDER, state: 'PAID', version: 1, [ATTR]: written });
        });

      // Act
      const result = await run((l) => {
        l.stage(REQUEST, businessWrite());
        return { outcome: 'captured' };
      }, orderPrecondition());

      // Assess: no read, no release.
      expect(result).toEqual({ outcome: 'captured' });
      expect(docMock.calls()).toHaveLength(2);
      expect(layer.stagedCount).toBe(0);
    });

    it('when the staged write’s condition fails while the record is still this claim’s, it removes the record and throws the write’s domain error', async () => {
      // Prepare
      const { run, layer } = onItem();
      docMock
        .on(UpdateCommand)
        .resolvesOnce({})
        .callsFakeOnce((input: UpdateCommandInput) => {
          const completed = input.ExpressionAttributeValues?.[':idem_record'] as Record<string, unknown>;
          throw conditionFailed({
            ...PENDING_ORDER,
            state: 'CANCELLED',
            [ATTR]: { ...completed, status: 'INPROGRESS' },
          });
        })
        .resolves({});

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, businessWrite()), orderPrecondition()));

      // Assess
      expect(error).toBeInstanceOf(IdempotencyPersistenceLayerError);
      expect((error as Error).cause).toBeInstanceOf(TransitionAlreadyDoneError);
      const claimToken = (update(0)?.ExpressionAttributeValues?.[':idem_record'] as Record<string, unknown>)[
        CLAIM_ATTR
      ];
      expect(update(2)).toEqual({
        TableName: 'orders',
        Key: { orderId: 'order-1' },
        UpdateExpression: 'REMOVE #idem',
        ConditionExpression: '#idem.#idem_claim = :idem_claim AND #idem.#idem_status = :idem_inprogress',
        ExpressionAttributeNames: { '#idem': ATTR, '#idem_claim': CLAIM_ATTR, '#idem_status': 'status' },
        ExpressionAttributeValues: { ':idem_claim': claimToken, ':idem_inprogress': 'INPROGRESS' },
      });
      expect(layer.stagedCount).toBe(0);
    });

    it('when the completion finds the record no longer this claim’s (taken over after its in-progress expiry), it throws a TransientError and removes nothing', async () => {
      // Prepare
      const { run } = onItem();
      docMock
        .on(UpdateCommand)
        .resolvesOnce({})
        .rejectsOnce(
          conditionFailed({
            ...PENDING_ORDER,
            [ATTR]: recordOnOrder('INPROGRESS', { [CLAIM_ATTR]: 'next-delivery' }),
          }),
        );

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, businessWrite()), orderPrecondition()));

      // Assess
      expect((error as Error).cause).toBeInstanceOf(TransientError);
      expect(docMock).toHaveReceivedCommandTimes(UpdateCommand, 2);
    });

    it('when the function fails, the record is removed from the item on condition it is still this claim’s INPROGRESS one', async () => {
      // Prepare
      const { run, layer } = onItem();

      // Act
      const error = await thrownBy(() =>
        run((l) => {
          l.stage(REQUEST, businessWrite());
          throw new TransientError('provider answered 503');
        }, orderPrecondition()),
      );

      // Assess
      expect(error).toBeInstanceOf(TransientError);
      expect(docMock).toHaveReceivedCommandTimes(UpdateCommand, 2);
      expect(update(1)?.UpdateExpression).toBe('REMOVE #idem');
      expect(update(1)?.ExpressionAttributeValues?.[':idem_claim']).toBe(
        (update(0)?.ExpressionAttributeValues?.[':idem_record'] as Record<string, unknown>)[CLAIM_ATTR],
      );
      expect(ddbMock.calls()).toHaveLength(0);
      expect(layer.stagedCount).toBe(0);
    });

    it('when the record was taken over before the release, the release fails quietly and the function’s error surfaces', async () => {
      // Prepare
      const { run, warnings } = onItem();
      docMock.on(UpdateCommand).resolvesOnce({}).rejectsOnce(conditionFailed());

      // Act
      const error = await thrownBy(() =>
        run(() => {
          throw new TransientError('provider answered 503');
        }, orderPrecondition()),
      );

      // Assess
      expect(error).toBeInstanceOf(TransientError);
      expect(warnings.warn).not.toHaveBeenCalled();
    });

    it('when the staged write is not an Update of the guarded item, staging it throws and the record is released', async () => {
      // Prepare
      const { run } = onItem();
      const elsewhere: StagedWrite = {
        item: { Update: { ...businessWrite().item.Update!, Key: { orderId: 'order-2' } } },
        rejected: () => Promise.resolve(new Error('unused')),
      };

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, elsewhere), orderPrecondition()));

      // Assess
      expect((error as Error).message).toContain('must be an Update of that item');
      expect(update(1)?.UpdateExpression).toBe('REMOVE #idem');
    });

    it('when nothing is staged, the completion is one UpdateItem of the record on the item', async () => {
      // Prepare
      const { run } = onItem();

      // Act
      await run(() => ({ outcome: 'done' }), orderPrecondition());

      // Assess
      expect(update(1)).toMatchObject({
        UpdateExpression: 'SET #idem = :idem_record',
        ConditionExpression: '#idem.#idem_claim = :idem_claim AND #idem.#idem_status = :idem_inprogress',
      });
      expect(docMock.calls()).toHaveLength(2);
    });

    it('when no precondition is staged, the record stays on the idempotency table (Powertools’ PutItem)', async () => {
      // Prepare
      const { run } = onItem();

      // Act
      await run(() => ({}));

      // Assess
      expect(ddbMock).toHaveReceivedCommandTimes(PutItemCommand, 1);
      expect(docMock).toHaveReceivedCommandTimes(UpdateCommand, 0);
    });
  });
});
