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
} from '@aws-sdk/lib-dynamodb';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyPersistenceLayerError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import {
  CLAIM_ATTR,
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

function setup(): Setup {
  const warnings = { warn: jest.fn() };
  const layer = new TransactionalDynamoDBPersistenceLayer({
    tableName: TABLE,
    awsSdkV3Client: new DynamoDBClient({ region: 'eu-west-1' }),
    warnings,
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
});
