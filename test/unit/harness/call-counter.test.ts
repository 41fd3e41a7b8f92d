import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ChangeMessageVisibilityCommand, DeleteMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { MetadataBearer, MiddlewareStack } from '@smithy/types';
import { countSdkCalls } from '../../../harness/aws/call-counter';

const CONFIG = {
  region: 'us-east-1',
  endpoint: 'http://127.0.0.1:9',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
};

/** Answers every command with an empty output before it leaves the client (no network). */
function answerLocally<I extends object, O extends MetadataBearer>(stack: MiddlewareStack<I, O>): void {
  stack.add(() => () => Promise.resolve({ output: { $metadata: {} } as O, response: {} }), {
    step: 'build',
    name: 'answerLocally',
  });
}

describe('Function: countSdkCalls', () => {
  it('when DynamoDB and SQS clients send commands, it counts each send by name, per client', async () => {
    // Prepare
    const dynamo = new DynamoDBClient(CONFIG);
    const sqs = new SQSClient(CONFIG);
    answerLocally(dynamo.middlewareStack);
    answerLocally(sqs.middlewareStack);
    const dynamoCalls = countSdkCalls(dynamo);
    const sqsCalls = countSdkCalls(sqs);

    // Act
    await dynamo.send(new GetItemCommand({ TableName: 't', Key: { id: { S: 'a' } } }));
    await sqs.send(new DeleteMessageCommand({ QueueUrl: 'http://127.0.0.1:9/q', ReceiptHandle: 'x' }));
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: 'http://127.0.0.1:9/q',
        ReceiptHandle: 'r',
        VisibilityTimeout: 0,
      }),
    );

    // Assess
    expect(dynamoCalls.calls()).toEqual(['GetItemCommand']);
    expect(sqsCalls.calls()).toEqual(['DeleteMessageCommand', 'ChangeMessageVisibilityCommand']);
  });

  it('when a document client is built from the counted client, its sends count too', async () => {
    // Prepare
    const dynamo = new DynamoDBClient(CONFIG);
    answerLocally(dynamo.middlewareStack);
    const calls = countSdkCalls(dynamo);
    const doc = DynamoDBDocumentClient.from(dynamo);

    // Act
    await doc.send(new PutCommand({ TableName: 't', Item: { id: 'a' } }));

    // Assess: named after the DynamoDB command the document command sends.
    expect(calls.calls()).toEqual(['PutItemCommand']);
  });

  it('when reset, it forgets the calls seen so far and keeps counting', async () => {
    // Prepare
    const sqs = new SQSClient(CONFIG);
    answerLocally(sqs.middlewareStack);
    const calls = countSdkCalls(sqs);
    await sqs.send(new DeleteMessageCommand({ QueueUrl: 'http://127.0.0.1:9/q', ReceiptHandle: 'x' }));

    // Act
    calls.reset();
    await sqs.send(new DeleteMessageCommand({ QueueUrl: 'http://127.0.0.1:9/q', ReceiptHandle: 'y' }));

    // Assess
    expect(calls.calls()).toEqual(['DeleteMessageCommand']);
  });
});
