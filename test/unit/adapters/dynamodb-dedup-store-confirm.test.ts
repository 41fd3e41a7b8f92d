import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
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
});
