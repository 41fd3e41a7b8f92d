import { createHash } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  TransactionCanceledException,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import {
  IdempotencyConfig,
  IdempotencyPersistenceLayerError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import {
  TransactionalDynamoDBPersistenceLayer,
  type StagedWrite,
  type WarningSink,
} from '../../../lib/adapters/aws/transactional-persistence';
import { TransientError, TransitionAlreadyDoneError } from '../../../lib/core/errors';
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

interface Setup {
  readonly layer: TransactionalDynamoDBPersistenceLayer;
  readonly warnings: jest.Mocked<WarningSink>;
  /** Calls the idempotent function; `body` runs inside it (it may stage). */
  readonly run: (body: (layer: TransactionalDynamoDBPersistenceLayer) => unknown) => Promise<unknown>;
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
    run: (b) => {
      body = b;
      return idempotent(REQUEST);
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

const cancelled = (...codes: string[]): TransactionCanceledException =>
  new TransactionCanceledException({
    message: `Transaction cancelled [${codes.join(', ')}]`,
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

beforeEach(() => {
  ddbMock.reset();
  docMock.reset();
  ddbMock.on(PutItemCommand).resolves({});
  ddbMock.on(UpdateItemCommand).resolves({});
  ddbMock.on(DeleteItemCommand).resolves({});
  docMock.on(TransactWriteCommand).resolves({});
  docMock.on(DeleteCommand).resolves({});
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

    it('when a conflicting transaction cancels it, it throws a TransientError', async () => {
      // Prepare
      const { run } = setup();
      docMock.on(TransactWriteCommand).rejects(cancelled('None', 'TransactionConflict'));

      // Act
      const error = await thrownBy(() => run((l) => l.stage(REQUEST, businessWrite())));

      // Assess
      expect((error as Error).cause).toBeInstanceOf(TransientError);
      expect(docMock).toHaveReceivedCommandTimes(DeleteCommand, 1);
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

  describe('Method: discard', () => {
    it('when called for a staged key, it drops the write', async () => {
      // Prepare
      const { run, layer } = setup();
      await run(() => ({}));
      layer.stage(REQUEST, businessWrite());

      // Act
      layer.discard(REQUEST);

      // Assess
      expect(layer.stagedCount).toBe(0);
    });
  });
});
