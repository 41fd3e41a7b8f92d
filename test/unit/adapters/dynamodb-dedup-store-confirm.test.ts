import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DeleteCommand, DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DynamoDbDedupStore } from '../../../lib/adapters/aws/dynamodb-dedup-store';

const NOW = new Date('2030-06-01T12:00:00.000Z');
const docMock = mockClient(DynamoDBDocumentClient);

beforeEach(() => {
  docMock.reset();
});

describe('Class: DynamoDbDedupStore', () => {
  describe('Method: confirm', () => {
    it('when a claim is confirmed, it rewrites the record as done with the longer expiry, unconditionally', async () => {
      // Prepare
      docMock.on(PutCommand).resolves({});
      const store = new DynamoDbDedupStore(new DynamoDBClient({ region: 'eu-west-1' }), 'dedup', () => NOW);

      // Act
      await store.confirm('notification:order-1:order-paid', 86_400);

      // Assess
      expect(docMock).toHaveReceivedCommandTimes(PutCommand, 1);
      const input = docMock.commandCalls(PutCommand)[0]?.args[0].input;
      expect(input).toEqual({
        TableName: 'dedup',
        Item: {
          dedupKey: 'notification:order-1:order-paid',
          status: 'done',
          expiration: Math.floor(NOW.getTime() / 1000) + 86_400,
        },
      });
    });
  });

  describe('Option: gatherConfirmsMs', () => {
    const store = (gatherConfirmsMs: number): DynamoDbDedupStore =>
      new DynamoDbDedupStore(new DynamoDBClient({ region: 'eu-west-1' }), 'dedup', () => NOW, { gatherConfirmsMs });
    const written = (): string[][] =>
      docMock.calls().map((call) => {
        const input = call.args[0].input as {
          Item?: { dedupKey: string };
          RequestItems?: Record<string, { PutRequest: { Item: { dedupKey: string } } }[]>;
        };
        if (input.RequestItems !== undefined)
          return (input.RequestItems.dedup ?? []).map((r) => r.PutRequest.Item.dedupKey);
        return input.Item === undefined ? [] : [input.Item.dedupKey];
      });

    beforeEach(() => {
      docMock.on(PutCommand).resolves({});
      docMock.on(BatchWriteCommand).resolves({ UnprocessedItems: {} });
      docMock.on(DeleteCommand).resolves({});
    });

    it('when a batch\'s claims are confirmed one by one, the confirms go in one BatchWriteItem once the last claim is done', async () => {
      // Prepare: three claims taken at once; one will be given back.
      const s = store(1_000);
      await Promise.all(['a', 'b', 'c', 'd'].map((k) => s.claim(k, 40)));
      docMock.resetHistory();

      // Act
      const confirms = [s.confirm('a', 86_400), s.confirm('b', 86_400)];
      await new Promise(setImmediate);
      const beforeLast = docMock.calls().length;
      await s.release('c');
      confirms.push(s.confirm('d', 86_400));
      await Promise.all(confirms);

      // Assess
      expect(beforeLast).toBe(0);
      expect(docMock).toHaveReceivedCommandTimes(BatchWriteCommand, 1);
      expect(written().filter((keys) => keys.length > 1)).toEqual([['a', 'b', 'd']]);
    });

    it('when a claim stays open past the gathering time, the confirms made so far go without it', async () => {
      // Prepare
      const s = store(20);
      await Promise.all(['a', 'b'].map((k) => s.claim(k, 40)));
      docMock.resetHistory();

      // Act
      await s.confirm('a', 86_400);

      // Assess: 'b' is still open; 'a' went alone after 20 ms.
      expect(written()).toEqual([['a']]);
    });

    it('when a claim finds the key held, it is not open: a confirm does not wait for it', async () => {
      // Prepare
      const s = store(60_000);
      docMock.on(PutCommand).rejectsOnce(
        new ConditionalCheckFailedException({
          message: 'held',
          $metadata: {},
          Item: { dedupKey: { S: 'b' }, status: { S: 'done' } },
        }),
      );
      const results = await Promise.all(['b', 'a'].map((k) => s.claim(k, 40)));
      docMock.resetHistory();
      docMock.on(PutCommand).resolves({});

      // Act
      await s.confirm('a', 86_400);

      // Assess
      expect(results).toEqual(['done', 'claimed']);
      expect(written()).toEqual([['a']]);
    });
  });
});
