import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  ScanCommand,
  TransactionCanceledException,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { MetadataBearer, MiddlewareStack } from '@smithy/types';
import {
  batchGetReadUnits,
  batchWriteUnits,
  failedConditionWriteUnits,
  getItemReadUnits,
  itemSize,
  lambdaBilledMs,
  lambdaGbSeconds,
  numberSize,
  queryReadUnits,
  readUnits,
  significantDigits,
  sqsMessagePayload,
  sqsRequests,
  transactGetUnits,
  transactWriteUnits,
  valueSize,
  writeActionUnits,
  writeUnits,
  type Item,
} from '../../../harness/aws/capacity';
import { countSdkCalls, recordDynamoDbCapacity, recordSqsRequests } from '../../../harness/aws/call-counter';

const KB = 1024;

describe('Module: capacity', () => {
  describe('item size (CapacityUnitCalculations.html)', () => {
    it('when a string has multi-byte characters, it counts their UTF-8 bytes', () => {
      expect(valueSize({ S: 'Ana' })).toBe(3);
      expect(valueSize({ S: 'é€' })).toBe(5);
    });

    it('when a number has leading and trailing zeroes, it trims them and counts a byte per two digits plus one', () => {
      expect(significantDigits('1250')).toBe(3);
      expect(significantDigits('0.050')).toBe(1);
      expect(significantDigits('-12.5e3')).toBe(3);
      expect(numberSize('1250')).toBe(3);
      expect(numberSize('1')).toBe(2);
      expect(numberSize('12345678901234567890123456789012345678')).toBe(20);
      expect(numberSize('0')).toBe(1);
    });

    it('when a value is binary, boolean or null, it counts raw bytes or 1', () => {
      expect(valueSize({ B: new Uint8Array(10) })).toBe(10);
      expect(valueSize({ BOOL: false })).toBe(1);
      expect(valueSize({ NULL: true })).toBe(1);
    });

    it('when a value is a list or a map, it adds 3 bytes and 1 per element', () => {
      expect(valueSize({ L: [] })).toBe(3);
      expect(valueSize({ M: {} })).toBe(3);
      // 3 + ("a" 1 + 1) + ("bc" 2 + 1)
      expect(valueSize({ L: [{ S: 'a' }, { S: 'bc' }] })).toBe(8);
      // 3 + (name "x" 1 + "a" 1 + 1)
      expect(valueSize({ M: { x: { S: 'a' } } })).toBe(6);
    });

    it('when an item has attributes, it sums names and values', () => {
      // Prepare
      const item: Item = {
        id: { S: 'pay-1' }, // 2 + 5 = 7
        amount: { N: '1250' }, // 6 + 3 = 9
        paid: { BOOL: true }, // 4 + 1 = 5
        // 5 + [3 + (M{sku: 3 + 5 + 1, qty: 3 + 2 + 1} = 3 + 9 + 6 = 18) + 1] = 27
        lines: { L: [{ M: { sku: { S: 'sku-1' }, qty: { N: '1' } } }] },
      };

      // Act
      const size = itemSize(item);

      // Assess
      expect(size).toBe(48);
    });
  });

  describe('read and write units (read-write-operations.html, pricing pages)', () => {
    it('when writing, it rounds up to 1 KB with one unit at least', () => {
      expect(writeUnits(500)).toBe(1); // "writing a 500-byte item consumes the same throughput as writing a 1 KB item"
      expect(writeUnits(1.6 * KB)).toBe(2); // "put or delete an item of 1.6 KB … 2 KB"
      expect(writeUnits(KB)).toBe(1);
      expect(writeUnits(KB + 1)).toBe(2);
      expect(writeUnits(3 * KB)).toBe(3); // "a standard write request of a 3 KB item would require three WCUs"
      expect(writeUnits(0)).toBe(1);
    });

    it('when reading, it rounds up to 4 KB: strong 1, eventual ½, transactional 2 per block', () => {
      expect(readUnits(3500, 'strong')).toBe(1); // "reading a 3,500-byte item … same as … a 4 KB item"
      expect(readUnits(8 * KB, 'strong')).toBe(2); // "a strongly consistent read of an 8 KB item would require two"
      expect(readUnits(8 * KB, 'eventual')).toBe(1);
      expect(readUnits(8 * KB, 'transactional')).toBe(4);
      expect(readUnits(10 * KB, 'strong')).toBe(3); // "an item of 10 KB … rounds the item size to 12 KB"
    });

    it('when a GetItem finds no item, it still consumes 1 (strong) or 0.5 (eventual)', () => {
      expect(getItemReadUnits(undefined, true)).toBe(1);
      expect(getItemReadUnits(undefined, false)).toBe(0.5);
    });

    it('when a BatchGetItem reads 1.5 KB and 6.5 KB, it bills 12 KB, not 8', () => {
      expect(batchGetReadUnits([1.5 * KB, 6.5 * KB], true)).toBe(3);
    });

    it('when a Query returns 40.8 KB, 80 KB or 1500 items of 64 bytes, it rounds the total once', () => {
      expect(queryReadUnits([40.8 * KB], true)).toBe(11); // 44 KB
      expect(queryReadUnits([80 * KB], false)).toBe(10); // "eventually consistent … 80 KB … 10 capacity units"
      expect(queryReadUnits(new Array<number>(1500).fill(64), true)).toBe(24); // 96 KB
    });

    it('when a BatchWriteItem writes 500 bytes and 3.5 KB, it bills 5 KB, not 4', () => {
      expect(
        batchWriteUnits([
          { kind: 'Put', after: 500 },
          { kind: 'Put', after: 3.5 * KB },
        ]),
      ).toBe(5);
    });

    it('when a write replaces or updates an item, it bills the larger of before and after', () => {
      expect(writeActionUnits({ kind: 'Put', before: 2.5 * KB, after: 500 })).toBe(3);
      expect(writeActionUnits({ kind: 'Put', after: 500 })).toBe(1);
      expect(writeActionUnits({ kind: 'Update', before: 1.5 * KB, after: 500 })).toBe(2);
      expect(writeActionUnits({ kind: 'Update', before: 500, after: 1.5 * KB })).toBe(2);
      expect(writeActionUnits({ kind: 'Delete', before: 1.6 * KB })).toBe(2);
      expect(writeActionUnits({ kind: 'Delete' })).toBe(1);
    });

    it('when a condition fails, it bills the item found (1 KB → 1, 2 KB → 2) or 1 when there is none', () => {
      expect(failedConditionWriteUnits(KB)).toBe(1);
      expect(failedConditionWriteUnits(2 * KB)).toBe(2);
      expect(failedConditionWriteUnits(undefined)).toBe(1);
    });
  });

  describe('transactions (transaction-apis.html#transaction-capacity-handling)', () => {
    it('when a transaction writes three 500-byte items, it bills six write units', () => {
      expect(
        transactWriteUnits(
          [
            { kind: 'Put', after: 500 },
            { kind: 'Put', after: 500 },
            { kind: 'Put', after: 500 },
          ],
          'committed',
        ),
      ).toBe(6);
    });

    it('when a transaction writes a 3 KB item, it bills six write units (pricing page)', () => {
      expect(transactWriteUnits([{ kind: 'Update', before: 3 * KB, after: 3 * KB }], 'committed')).toBe(6);
    });

    it('when a transaction reads three 500-byte items or one of 8 KB, it bills six and four read units', () => {
      expect(transactGetUnits([500, 500, 500])).toBe(6);
      expect(transactGetUnits([8 * KB])).toBe(4);
    });

    it('when a ConditionCheck checks a 500-byte item, it bills two write units', () => {
      expect(
        transactWriteUnits(
          [
            { kind: 'Put', after: 300 },
            { kind: 'ConditionCheck', before: 500 },
          ],
          'committed',
        ),
      ).toBe(4);
    });

    it('when a transaction is cancelled, it bills each item as a failed condition, twice', () => {
      expect(
        transactWriteUnits(
          [
            { kind: 'Put', before: 300, after: 300 },
            { kind: 'ConditionCheck', before: 2000 },
            { kind: 'Update' },
          ],
          'cancelled',
        ),
      ).toBe(2 * 1 + 2 * 2 + 2 * 1);
    });
  });

  describe('SQS (aws.amazon.com/sqs/pricing)', () => {
    it('when a payload is 256 KB, it bills four requests; an empty one, one', () => {
      expect(sqsRequests(256 * KB)).toBe(4);
      expect(sqsRequests(64 * KB)).toBe(1);
      expect(sqsRequests(64 * KB + 1)).toBe(2);
      expect(sqsRequests(0)).toBe(1);
    });

    it('when a message has attributes, their names, types and values count with the body', () => {
      expect(
        sqsMessagePayload('hello', {
          kind: { DataType: 'String', StringValue: 'é' },
          blob: { DataType: 'Binary', BinaryValue: new Uint8Array(4) },
        }),
      ).toBe(5 + (4 + 6 + 2) + (4 + 6 + 4));
    });
  });

  describe('Lambda (aws.amazon.com/lambda/pricing)', () => {
    it('when an invocation runs 10.2 ms with 512 MB, it bills 11 ms and 0.0055 GB-s', () => {
      expect(lambdaBilledMs(10.2)).toBe(11);
      expect(lambdaGbSeconds(10.2, 512)).toBeCloseTo(0.0055, 10);
      expect(lambdaGbSeconds(1000, 1024)).toBe(1);
    });
  });
});

const CONFIG = {
  region: 'us-east-1',
  endpoint: 'http://127.0.0.1:9',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
};

type Answer = (command: string, input: Record<string, unknown>) => Record<string, unknown>;

/** Answers every command with `answer`'s output before it leaves the client (no network). */
function answerLocally<I extends object, O extends MetadataBearer>(
  stack: MiddlewareStack<I, O>,
  answer: Answer,
): void {
  stack.add(
    (_next, context) => (args) =>
      Promise.resolve({
        output: {
          ...answer(String(context.commandName), args.input as Record<string, unknown>),
          $metadata: {},
        } as O,
        response: {},
      }),
    { step: 'build', name: 'answerLocally' },
  );
}

/** A one-table store keyed on `id`, the subject's writes applied by the test, read by the inspector. */
function fakeTable(): { items: Map<string, Item>; inspector: DynamoDBClient } {
  const items = new Map<string, Item>();
  const inspector = new DynamoDBClient(CONFIG);
  answerLocally(inspector.middlewareStack, (command, input) => {
    if (command === 'DescribeTableCommand') {
      return { Table: { KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] } };
    }
    if (command === 'GetItemCommand') {
      const key = (input.Key as Record<string, AttributeValue>).id?.S ?? '';
      return { Item: items.get(key) };
    }
    throw new Error(`unexpected ${command}`);
  });
  return { items, inspector };
}

/** An item of about `size` bytes: id plus padding. */
function itemOf(id: string, size: number): Item {
  const base = itemSize({ id: { S: id }, pad: { S: '' } });
  return { id: { S: id }, pad: { S: 'x'.repeat(Math.max(0, size - base)) } };
}

describe('Function: recordDynamoDbCapacity', () => {
  it('when a document client replaces a 2.5 KB item with a small one, it bills the larger: 3 WCU', async () => {
    // Prepare
    const { items, inspector } = fakeTable();
    items.set('a', itemOf('a', 2.5 * KB));
    const client = new DynamoDBClient(CONFIG);
    answerLocally(client.middlewareStack, (_command, input) => {
      const item = input.Item as Item;
      items.set(item.id?.S ?? '', item);
      return {};
    });
    const capacity = recordDynamoDbCapacity(client, inspector);
    const calls = countSdkCalls(client);

    // Act
    await DynamoDBDocumentClient.from(client).send(
      new PutCommand({ TableName: 't', Item: { id: 'a', v: 1 } }),
    );

    // Assess
    expect(capacity.records()).toEqual([
      { command: 'PutItemCommand', readUnits: 0, writeUnits: 3, outcome: 'ok' },
    ]);
    expect(calls.calls()).toEqual(['PutItemCommand']);
  });

  it('when a conditional write fails, it bills the existing item (2 KB → 2 WCU) and rethrows', async () => {
    // Prepare
    const { items, inspector } = fakeTable();
    items.set('a', itemOf('a', 2 * KB));
    const client = new DynamoDBClient(CONFIG);
    answerLocally(client.middlewareStack, () => {
      throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
    });
    const capacity = recordDynamoDbCapacity(client, inspector);

    // Act
    const sent = DynamoDBDocumentClient.from(client).send(
      new PutCommand({ TableName: 't', Item: { id: 'a' }, ConditionExpression: 'attribute_not_exists(id)' }),
    );

    // Assess
    await expect(sent).rejects.toThrow(ConditionalCheckFailedException);
    expect(capacity.records()).toEqual([
      { command: 'PutItemCommand', readUnits: 0, writeUnits: 2, outcome: 'conditionFailed' },
    ]);
  });

  it('when an update grows an item past 1 KB, it bills the item after: 2 WCU', async () => {
    // Prepare
    const { items, inspector } = fakeTable();
    items.set('a', itemOf('a', 100));
    const client = new DynamoDBClient(CONFIG);
    answerLocally(client.middlewareStack, () => {
      items.set('a', itemOf('a', 1.5 * KB));
      return {};
    });
    const capacity = recordDynamoDbCapacity(client, inspector);

    // Act
    await DynamoDBDocumentClient.from(client).send(
      new UpdateCommand({
        TableName: 't',
        Key: { id: 'a' },
        UpdateExpression: 'SET pad = :p',
        ExpressionAttributeValues: { ':p': 'x' },
      }),
    );

    // Assess
    expect(capacity.records()).toEqual([
      { command: 'UpdateItemCommand', readUnits: 0, writeUnits: 2, outcome: 'ok' },
    ]);
  });

  it('when a transaction puts a new item on a condition check, it bills 2 + 2; cancelled, 2 × 1 each', async () => {
    // Prepare
    const { items, inspector } = fakeTable();
    items.set('order', itemOf('order', 300));
    const client = new DynamoDBClient(CONFIG);
    let cancel = false;
    answerLocally(client.middlewareStack, (_command, input) => {
      if (cancel) {
        throw new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {} });
      }
      const put = (input.TransactItems as { Put?: { Item: Item } }[])[0]?.Put?.Item;
      if (put !== undefined) items.set(put.id?.S ?? '', put);
      return {};
    });
    const capacity = recordDynamoDbCapacity(client, inspector);
    const doc = DynamoDBDocumentClient.from(client);
    const transaction = new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: 't', Item: { id: 'claim', status: 'INPROGRESS' } } },
        {
          ConditionCheck: {
            TableName: 't',
            Key: { id: 'order' },
            ConditionExpression: '#s = :s',
            ExpressionAttributeNames: { '#s': 'state' },
            ExpressionAttributeValues: { ':s': 'PENDING' },
          },
        },
      ],
    });

    // Act
    await doc.send(transaction);
    cancel = true;
    await expect(doc.send(transaction)).rejects.toThrow(TransactionCanceledException);

    // Assess
    expect(capacity.records()).toEqual([
      { command: 'TransactWriteItemsCommand', readUnits: 0, writeUnits: 4, outcome: 'ok' },
      { command: 'TransactWriteItemsCommand', readUnits: 0, writeUnits: 4, outcome: 'cancelled' },
    ]);
  });

  it('when an eventually consistent GetItem finds nothing, it bills 0.5 RCU; paused, it records nothing', async () => {
    // Prepare
    const { inspector } = fakeTable();
    const client = new DynamoDBClient(CONFIG);
    answerLocally(client.middlewareStack, () => ({}));
    const capacity = recordDynamoDbCapacity(client, inspector);
    const get = new GetItemCommand({ TableName: 't', Key: { id: { S: 'missing' } } });

    // Act
    await client.send(get);
    capacity.pause();
    await client.send(get);
    capacity.resume();

    // Assess
    expect(capacity.records()).toEqual([
      { command: 'GetItemCommand', readUnits: 0.5, writeUnits: 0, outcome: 'ok' },
    ]);
  });

  it('when a Query returns items, plain or marshalled, it bills their total once: 6 KB → 2 RRU, 3 KB eventual → 0.5', async () => {
    // Prepare: a document client's Query reaches the recorder unmarshalled, a low-level one marshalled.
    const { inspector } = fakeTable();
    const client = new DynamoDBClient(CONFIG);
    const plain = (id: string): Record<string, unknown> => ({ id, pad: itemOf(id, 3 * KB).pad?.S });
    answerLocally(client.middlewareStack, (command) =>
      command === 'QueryCommand'
        ? { Items: [plain('a'), plain('b')] }
        : { Items: [itemOf('c', 1.5 * KB), itemOf('d', 1.5 * KB)] },
    );
    const capacity = recordDynamoDbCapacity(client, inspector);

    // Act
    await client.send(
      new QueryCommand({
        TableName: 't',
        KeyConditionExpression: 'id = :id',
        ExpressionAttributeValues: { ':id': { S: 'a' } },
        ConsistentRead: true,
      }),
    );
    await client.send(new ScanCommand({ TableName: 't' }));

    // Assess
    expect(capacity.records()).toEqual([
      { command: 'QueryCommand', readUnits: 2, writeUnits: 0, outcome: 'ok' },
      { command: 'ScanCommand', readUnits: 0.5, writeUnits: 0, outcome: 'ok' },
    ]);
  });

  it('when the inspector is the client itself, it refuses', () => {
    const client = new DynamoDBClient(CONFIG);
    expect(() => recordDynamoDbCapacity(client, client)).toThrow(/another client/);
  });
});

describe('Function: recordSqsRequests', () => {
  it('when a receive returns 70 KB of messages, it bills 2 requests; a batch delete of 10, 1', async () => {
    // Prepare
    // No MD5 check: the local answer carries no digests.
    const sqs = new SQSClient({ ...CONFIG, md5: false });
    answerLocally(sqs.middlewareStack, (command) =>
      command === 'ReceiveMessageCommand'
        ? { Messages: [{ Body: 'x'.repeat(35 * KB) }, { Body: 'y'.repeat(35 * KB) }] }
        : { Successful: [], Failed: [] },
    );
    const requests = recordSqsRequests(sqs);
    const queueUrl = 'http://127.0.0.1:9/q';

    // Act
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10 }));
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Array.from({ length: 10 }, (_, i) => ({ Id: String(i), ReceiptHandle: `r${i}` })),
      }),
    );

    // Assess
    expect(requests.records()).toEqual([
      { command: 'ReceiveMessageCommand', messages: 2, payloadBytes: 70 * KB, requests: 2 },
      { command: 'DeleteMessageBatchCommand', messages: 10, payloadBytes: 0, requests: 1 },
    ]);
  });
});
