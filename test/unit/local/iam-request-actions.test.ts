import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CloudWatchClient,
  DescribeAlarmsCommand,
  GetMetricStatisticsCommand,
  PutMetricDataCommand,
  SetAlarmStateCommand,
} from '@aws-sdk/client-cloudwatch';
import {
  BatchWriteItemCommand,
  DeleteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ExecuteStatementCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactGetItemsCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import {
  GetAccountSettingsCommand,
  GetEventSourceMappingCommand,
  GetFunctionConfigurationCommand,
  InvokeCommand,
  LambdaClient,
  ListEventSourceMappingsCommand,
  UpdateEventSourceMappingCommand,
} from '@aws-sdk/client-lambda';
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import {
  GetParameterCommand,
  GetParametersByPathCommand,
  GetParametersCommand,
  PutParameterCommand,
  SSMClient,
} from '@aws-sdk/client-ssm';
import {
  accessDeniedResponse,
  apiRequestOf,
  RequestParseError,
  signerOf,
  type ApiRequest,
  type ArnContext,
  type AuthorizationCheck,
  type WireRequest,
  type WireResponse,
} from '../../../lib/local/iam/request-actions';

const CTX: ArnContext = { region: 'us-east-1', accountId: '123456789012' };
const CREDENTIALS = { accessKeyId: 'AKIDTEST', secretAccessKey: 'x' };
const MESSAGE =
  'User: arn:aws:sts::123456789012:assumed-role/R/fn is not authorized to perform: sqs:SendMessage on resource: ' +
  'arn:aws:sqs:us-east-1:123456789012:q because no identity-based policy allows the sqs:SendMessage action';

const QUEUE_URL = 'http://localhost:5055/123456789012/tenang-unit-jobs';
const QUEUE_ARN = 'arn:aws:sqs:us-east-1:123456789012:tenang-unit-jobs';
const TABLE = 'tenang-unit-jobs';
const TABLE_ARN = `arn:aws:dynamodb:us-east-1:123456789012:table/${TABLE}`;
const OTHER_TABLE = 'tenang-unit-inventory';
const OTHER_TABLE_ARN = `arn:aws:dynamodb:us-east-1:123456789012:table/${OTHER_TABLE}`;
const STREAM_ARN = `${TABLE_ARN}/stream/2026-12-01T00:00:00.000`;
const FUNCTION = 'tenang-unit-outbox-relay';
const FUNCTION_ARN = `arn:aws:lambda:us-east-1:123456789012:function:${FUNCTION}`;
const ESM_UUID = 'fa123456-14a1-4fd2-9fec-83de64ad683d';
const ESM_ARN = `arn:aws:lambda:us-east-1:123456789012:event-source-mapping:${ESM_UUID}`;

/** What an SDK v3 service error carries. */
interface SdkError {
  readonly name: string;
  readonly message: string;
  readonly $metadata: { readonly httpStatusCode?: number };
}

/**
 * A stand-in for AWS on 127.0.0.1: records every request as the proxy would see it and answers it
 * with `accessDeniedResponse(apiRequestOf(request))` (or with `answer`, when a test sets one), so
 * each SDK call both shows what the SDK really sent and what the SDK makes of AWS's denial.
 */
interface FakeAws {
  readonly url: string;
  readonly requests: WireRequest[];
  answer: ((wire: WireRequest) => WireResponse) | undefined;
  last(): WireRequest;
  close(): Promise<void>;
}

async function startFakeAws(): Promise<FakeAws> {
  const requests: WireRequest[] = [];
  const fake: Omit<FakeAws, 'url' | 'close'> = {
    requests,
    answer: undefined,
    last: () => {
      const wire = requests.at(-1);
      if (wire === undefined) throw new Error('no request reached the fake');
      return wire;
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const wire: WireRequest = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(wire);
      let answer: WireResponse;
      try {
        answer = fake.answer?.(wire) ?? accessDeniedResponse(apiRequestOf(wire, CTX), MESSAGE);
      } catch (error) {
        answer = { status: 500, headers: { 'content-type': 'text/plain' }, body: String(error) };
      }
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

async function rejection(call: Promise<unknown>): Promise<SdkError> {
  try {
    await call;
  } catch (error) {
    return error as SdkError;
  }
  throw new Error('the call was expected to be denied');
}

function expectDenied(error: SdkError, name: string, status: number): void {
  expect({ name: error.name, status: error.$metadata.httpStatusCode, message: error.message }).toEqual({
    name,
    status,
    message: MESSAGE,
  });
}

/** A hand-built signed request, for protocols no installed client speaks. */
function wireOf(opts: {
  readonly scope: string;
  readonly method?: string;
  readonly path?: string;
  readonly target?: string;
  readonly contentType?: string;
  readonly body?: string;
}): WireRequest {
  return {
    method: opts.method ?? 'POST',
    path: opts.path ?? '/',
    headers: {
      authorization: `AWS4-HMAC-SHA256 Credential=AKIDTEST/20261201/us-east-1/${opts.scope}/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc`,
      ...(opts.target === undefined ? {} : { 'x-amz-target': opts.target }),
      'content-type': opts.contentType ?? 'application/x-amz-json-1.1',
    },
    body: Buffer.from(opts.body ?? ''),
  };
}

const form = (params: Record<string, string>): string => new URLSearchParams(params).toString();

let aws: FakeAws;
beforeAll(async () => {
  aws = await startFakeAws();
});
afterAll(() => aws.close());
afterEach(() => {
  aws.answer = undefined;
});
const clientConfig = () => ({
  endpoint: aws.url,
  region: 'us-east-1',
  credentials: CREDENTIALS,
  maxAttempts: 1,
});

type Case<C> = readonly [
  operation: string,
  call: (client: C) => Promise<unknown>,
  checks: AuthorizationCheck[],
];

describe('Function: signerOf', () => {
  it('when the SDK signed the request, it is the access key id, service and region of the credential scope', async () => {
    const sqs = new SQSClient(clientConfig());
    await rejection(sqs.send(new GetQueueUrlCommand({ QueueName: 'q' })));
    expect(signerOf(aws.last())).toEqual({ accessKeyId: 'AKIDTEST', service: 'sqs', region: 'us-east-1' });
  });

  it('when a presigned URL carries X-Amz-Credential, it is read from the query string', () => {
    const credential = encodeURIComponent('AKIDPRESIGNED/20261201/eu-west-1/s3/aws4_request');
    const wire: WireRequest = {
      method: 'GET',
      path: `/bucket/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${credential}&X-Amz-Signature=abc`,
      headers: {},
      body: Buffer.alloc(0),
    };
    expect(signerOf(wire)).toEqual({ accessKeyId: 'AKIDPRESIGNED', service: 's3', region: 'eu-west-1' });
  });

  it.each([
    ['no Authorization header', {}],
    ['another scheme', { authorization: 'Bearer abc' }],
    [
      'a credential that is not a SigV4 scope',
      { authorization: 'AWS4-HMAC-SHA256 Credential=AKID/20261201' },
    ],
  ])('when the request has %s, it is undefined', (_what, headers) => {
    expect(signerOf({ method: 'GET', path: '/', headers, body: Buffer.alloc(0) })).toBeUndefined();
  });
});

describe('Function: apiRequestOf and accessDeniedResponse for SQS (AWS JSON 1.0, awsQueryCompatible)', () => {
  const sqs = (): SQSClient => new SQSClient(clientConfig());
  const onQueue = (action: string): AuthorizationCheck[] => [{ action, resource: QUEUE_ARN }];
  const cases: Case<SQSClient>[] = [
    [
      'SendMessage',
      (c) => c.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'x' })),
      onQueue('sqs:SendMessage'),
    ],
    [
      'SendMessageBatch',
      (c) =>
        c.send(
          new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: '1', MessageBody: 'x' }] }),
        ),
      onQueue('sqs:SendMessage'),
    ],
    [
      'ReceiveMessage',
      (c) => c.send(new ReceiveMessageCommand({ QueueUrl: QUEUE_URL })),
      onQueue('sqs:ReceiveMessage'),
    ],
    [
      'DeleteMessage',
      (c) => c.send(new DeleteMessageCommand({ QueueUrl: QUEUE_URL, ReceiptHandle: 'rh' })),
      onQueue('sqs:DeleteMessage'),
    ],
    [
      'DeleteMessageBatch',
      (c) =>
        c.send(
          new DeleteMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: '1', ReceiptHandle: 'rh' }] }),
        ),
      onQueue('sqs:DeleteMessage'),
    ],
    [
      'ChangeMessageVisibility',
      (c) =>
        c.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: QUEUE_URL,
            ReceiptHandle: 'rh',
            VisibilityTimeout: 0,
          }),
        ),
      onQueue('sqs:ChangeMessageVisibility'),
    ],
    [
      'ChangeMessageVisibilityBatch',
      (c) =>
        c.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: QUEUE_URL,
            Entries: [{ Id: '1', ReceiptHandle: 'rh', VisibilityTimeout: 0 }],
          }),
        ),
      onQueue('sqs:ChangeMessageVisibility'),
    ],
    [
      'GetQueueAttributes',
      (c) => c.send(new GetQueueAttributesCommand({ QueueUrl: QUEUE_URL, AttributeNames: ['All'] })),
      onQueue('sqs:GetQueueAttributes'),
    ],
    [
      'SetQueueAttributes',
      (c) =>
        c.send(
          new SetQueueAttributesCommand({ QueueUrl: QUEUE_URL, Attributes: { VisibilityTimeout: '5' } }),
        ),
      onQueue('sqs:SetQueueAttributes'),
    ],
    ['PurgeQueue', (c) => c.send(new PurgeQueueCommand({ QueueUrl: QUEUE_URL })), onQueue('sqs:PurgeQueue')],
    [
      'GetQueueUrl',
      (c) => c.send(new GetQueueUrlCommand({ QueueName: 'tenang-unit-jobs' })),
      onQueue('sqs:GetQueueUrl'),
    ],
  ];

  it.each(cases)(
    'when the SDK sends %s, its checks are read from what was sent; the denial is error AccessDenied, 403 (the x-amzn-query-error code AWS sends, which the query-compatible SDK names the error after)',
    async (operation, call, checks) => {
      const error = await rejection(call(sqs()));
      const wire = aws.last();
      expect(signerOf(wire)).toEqual({ accessKeyId: 'AKIDTEST', service: 'sqs', region: 'us-east-1' });
      expect(apiRequestOf(wire, CTX)).toEqual({ service: 'sqs', operation, checks, protocol: 'json' });
      expectDenied(error, 'AccessDenied', 403);
    },
  );

  it('when GetQueueUrl names the queue owner, the queue ARN is in that account', async () => {
    await rejection(
      sqs().send(new GetQueueUrlCommand({ QueueName: 'shared', QueueOwnerAWSAccountId: '210987654321' })),
    );
    expect(apiRequestOf(aws.last(), CTX).checks).toEqual([
      { action: 'sqs:GetQueueUrl', resource: 'arn:aws:sqs:us-east-1:210987654321:shared' },
    ]);
  });

  it('when the denial is sent, it is 403 with x-amzn-query-error AccessDenied;Sender and the coral AccessDeniedException type', () => {
    const api = apiRequestOf(
      wireOf({
        scope: 'sqs',
        target: 'AmazonSQS.SendMessage',
        contentType: 'application/x-amz-json-1.0',
        body: JSON.stringify({ QueueUrl: QUEUE_URL }),
      }),
      CTX,
    );
    const answer = accessDeniedResponse(api, MESSAGE);
    expect(answer.status).toBe(403);
    expect(answer.headers).toMatchObject({
      'x-amzn-query-error': 'AccessDenied;Sender',
      'content-type': 'application/x-amz-json-1.0',
    });
    expect(answer.headers['x-amzn-RequestId']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(answer.body)).toEqual({
      __type: 'com.amazon.coral.service#AccessDeniedException',
      Message: MESSAGE,
    });
  });

  it('when the older query protocol is used, the operation comes from Action and the denial is the query XML (AccessDenied, 403)', () => {
    const api = apiRequestOf(
      wireOf({
        scope: 'sqs',
        contentType: 'application/x-www-form-urlencoded; charset=utf-8',
        body: form({ Action: 'DeleteMessageBatch', QueueUrl: QUEUE_URL, Version: '2012-11-05' }),
      }),
      CTX,
    );
    expect(api).toEqual({
      service: 'sqs',
      operation: 'DeleteMessageBatch',
      checks: onQueue('sqs:DeleteMessage'),
      protocol: 'query',
    });
    const answer = accessDeniedResponse(api, 'a < b & c');
    expect(answer.status).toBe(403);
    expect(answer.body).toContain(
      '<Error><Type>Sender</Type><Code>AccessDenied</Code><Message>a &#60; b &#38; c</Message>',
    );
  });

  it('when ListQueues or CreateQueue is sent, ListQueues is on * and CreateQueue on the ARN of QueueName', () => {
    const json = (op: string, body: object) =>
      apiRequestOf(wireOf({ scope: 'sqs', target: `AmazonSQS.${op}`, body: JSON.stringify(body) }), CTX)
        .checks;
    expect(json('ListQueues', {})).toEqual([{ action: 'sqs:ListQueues', resource: '*' }]);
    expect(json('CreateQueue', { QueueName: 'tenang-unit-jobs' })).toEqual(onQueue('sqs:CreateQueue'));
  });
});

describe('Function: apiRequestOf and accessDeniedResponse for DynamoDB (AWS JSON 1.0)', () => {
  const ddb = (): DynamoDBClient => new DynamoDBClient(clientConfig());
  const key = { pk: { S: 'job#1' } };
  const onTable = (action: string, resource = TABLE_ARN): AuthorizationCheck => ({ action, resource });
  const cases: Case<DynamoDBClient>[] = [
    [
      'GetItem',
      (c) => c.send(new GetItemCommand({ TableName: TABLE, Key: key })),
      [onTable('dynamodb:GetItem')],
    ],
    [
      'PutItem',
      (c) => c.send(new PutItemCommand({ TableName: TABLE, Item: key })),
      [onTable('dynamodb:PutItem')],
    ],
    [
      'UpdateItem',
      (c) =>
        c.send(
          new UpdateItemCommand({
            TableName: TABLE,
            Key: key,
            UpdateExpression: 'SET #s = :s',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':s': { S: 'DONE' } },
          }),
        ),
      [onTable('dynamodb:UpdateItem')],
    ],
    [
      'DeleteItem',
      (c) => c.send(new DeleteItemCommand({ TableName: TABLE, Key: key })),
      [onTable('dynamodb:DeleteItem')],
    ],
    [
      'Query',
      (c) =>
        c.send(
          new QueryCommand({
            TableName: TABLE,
            IndexName: 'byStatus',
            KeyConditionExpression: '#s = :s',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':s': { S: 'PENDING' } },
          }),
        ),
      [onTable('dynamodb:Query', `${TABLE_ARN}/index/byStatus`)],
    ],
    [
      'TransactWriteItems',
      (c) =>
        c.send(
          new TransactWriteItemsCommand({
            TransactItems: [
              { Put: { TableName: TABLE, Item: key } },
              {
                Update: {
                  TableName: OTHER_TABLE,
                  Key: { sku: { S: 'A' } },
                  UpdateExpression: 'SET n = :n',
                  ExpressionAttributeValues: { ':n': { N: '1' } },
                },
              },
              { Delete: { TableName: TABLE, Key: { pk: { S: 'job#2' } } } },
              {
                ConditionCheck: {
                  TableName: OTHER_TABLE,
                  Key: { sku: { S: 'B' } },
                  ConditionExpression: 'attribute_exists(sku)',
                },
              },
            ],
          }),
        ),
      [
        onTable('dynamodb:PutItem'),
        onTable('dynamodb:UpdateItem', OTHER_TABLE_ARN),
        onTable('dynamodb:DeleteItem'),
        onTable('dynamodb:ConditionCheckItem', OTHER_TABLE_ARN),
      ],
    ],
    [
      'BatchWriteItem',
      (c) =>
        c.send(
          new BatchWriteItemCommand({
            RequestItems: {
              [TABLE]: [{ PutRequest: { Item: key } }],
              [OTHER_TABLE]: [{ DeleteRequest: { Key: { sku: { S: 'A' } } } }],
            },
          }),
        ),
      [onTable('dynamodb:BatchWriteItem'), onTable('dynamodb:BatchWriteItem', OTHER_TABLE_ARN)],
    ],
    [
      'TransactGetItems',
      (c) =>
        c.send(
          new TransactGetItemsCommand({
            TransactItems: [
              { Get: { TableName: TABLE, Key: key } },
              { Get: { TableName: OTHER_TABLE, Key: { sku: { S: 'A' } } } },
            ],
          }),
        ),
      [onTable('dynamodb:GetItem'), onTable('dynamodb:GetItem', OTHER_TABLE_ARN)],
    ],
    [
      'DescribeTable',
      (c) => c.send(new DescribeTableCommand({ TableName: TABLE })),
      [onTable('dynamodb:DescribeTable')],
    ],
    [
      'ExecuteStatement',
      (c) =>
        c.send(
          new ExecuteStatementCommand({ Statement: `SELECT * FROM "${TABLE}"."byStatus" WHERE status = ?` }),
        ),
      [onTable('dynamodb:PartiQLSelect', `${TABLE_ARN}/index/byStatus`)],
    ],
  ];

  it.each(cases)(
    'when the SDK sends %s, its checks are read from what was sent; the denial is AccessDeniedException, 400',
    async (operation, call, checks) => {
      const error = await rejection(call(ddb()));
      const wire = aws.last();
      expect(signerOf(wire)).toEqual({ accessKeyId: 'AKIDTEST', service: 'dynamodb', region: 'us-east-1' });
      expect(apiRequestOf(wire, CTX)).toEqual({ service: 'dynamodb', operation, checks, protocol: 'json' });
      expectDenied(error, 'AccessDeniedException', 400);
    },
  );

  it.each([
    [`INSERT INTO "${TABLE}" VALUE {'pk': 'a'}`, 'dynamodb:PartiQLInsert'],
    [`UPDATE ${TABLE} SET status = 'DONE' WHERE pk = 'a'`, 'dynamodb:PartiQLUpdate'],
    [`delete from "${TABLE}" where pk = 'a'`, 'dynamodb:PartiQLDelete'],
  ])('when ExecuteStatement runs %s, it is %s on the table', (Statement, action) => {
    const wire = wireOf({
      scope: 'dynamodb',
      target: 'DynamoDB_20120810.ExecuteStatement',
      body: JSON.stringify({ Statement }),
    });
    expect(apiRequestOf(wire, CTX).checks).toEqual([{ action, resource: TABLE_ARN }]);
  });

  it('when ListTables is sent, it is on * (the reference gives it no resource type)', () => {
    const wire = wireOf({ scope: 'dynamodb', target: 'DynamoDB_20120810.ListTables', body: '{}' });
    expect(apiRequestOf(wire, CTX).checks).toEqual([{ action: 'dynamodb:ListTables', resource: '*' }]);
  });

  it('when the denial is sent, it is the dynamodb AccessDeniedException type with the message', () => {
    const answer = accessDeniedResponse({ service: 'dynamodb', operation: 'PutItem', checks: [] }, MESSAGE);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({
      __type: 'com.amazonaws.dynamodb.v20120810#AccessDeniedException',
      message: MESSAGE,
    });
  });
});

describe('Function: apiRequestOf for DynamoDB Streams (AWS JSON 1.0)', () => {
  const streams = (): DynamoDBStreamsClient => new DynamoDBStreamsClient(clientConfig());
  const cases: Case<DynamoDBStreamsClient>[] = [
    [
      'DescribeStream',
      (c) => c.send(new DescribeStreamCommand({ StreamArn: STREAM_ARN })),
      [{ action: 'dynamodb:DescribeStream', resource: STREAM_ARN }],
    ],
    [
      'GetShardIterator',
      (c) =>
        c.send(
          new GetShardIteratorCommand({
            StreamArn: STREAM_ARN,
            ShardId: 'shardId-1',
            ShardIteratorType: 'TRIM_HORIZON',
          }),
        ),
      [{ action: 'dynamodb:GetShardIterator', resource: STREAM_ARN }],
    ],
    [
      // moto's and AWS's iterators both start with the stream ARN.
      'GetRecords',
      (c) =>
        c.send(
          new GetRecordsCommand({ ShardIterator: `${STREAM_ARN}|1|0f5e3b1c-1f1e-4b8e-9d61-5f0c7a0e2d11` }),
        ),
      [{ action: 'dynamodb:GetRecords', resource: STREAM_ARN }],
    ],
  ];

  it.each(cases)(
    'when the SDK sends %s, it is checked on the stream; the denial is AccessDeniedException, 400',
    async (operation, call, checks) => {
      const error = await rejection(call(streams()));
      const wire = aws.last();
      expect(signerOf(wire)).toMatchObject({ accessKeyId: 'AKIDTEST', service: 'dynamodb' });
      expect(apiRequestOf(wire, CTX)).toEqual({
        service: 'dynamodb-streams',
        operation,
        checks,
        protocol: 'json',
      });
      expectDenied(error, 'AccessDeniedException', 400);
    },
  );

  it('when ListStreams is sent, it is dynamodb:ListStreams on * (no resource type in the reference)', () => {
    const wire = wireOf({
      scope: 'dynamodb',
      target: 'DynamoDBStreams_20120810.ListStreams',
      body: JSON.stringify({ TableName: TABLE }),
    });
    expect(apiRequestOf(wire, CTX)).toMatchObject({
      service: 'dynamodb-streams',
      checks: [{ action: 'dynamodb:ListStreams', resource: '*' }],
    });
  });
});

describe('Function: apiRequestOf for SSM (AWS JSON 1.1)', () => {
  const ssm = (): SSMClient => new SSMClient(clientConfig());
  const parameter = (name: string) => `arn:aws:ssm:us-east-1:123456789012:parameter/${name}`;
  const cases: Case<SSMClient>[] = [
    [
      'GetParameter',
      (c) => c.send(new GetParameterCommand({ Name: '/tenang/unit/flag' })),
      [{ action: 'ssm:GetParameter', resource: parameter('tenang/unit/flag') }],
    ],
    [
      'GetParametersByPath',
      (c) => c.send(new GetParametersByPathCommand({ Path: '/tenang/unit', Recursive: true })),
      [{ action: 'ssm:GetParametersByPath', resource: parameter('tenang/unit') }],
    ],
    [
      'PutParameter',
      (c) =>
        c.send(new PutParameterCommand({ Name: 'plain-name', Value: 'v', Type: 'String', Overwrite: true })),
      [{ action: 'ssm:PutParameter', resource: parameter('plain-name') }],
    ],
    [
      'GetParameters',
      (c) => c.send(new GetParametersCommand({ Names: ['/tenang/a', '/tenang/b:2'] })),
      [
        { action: 'ssm:GetParameters', resource: parameter('tenang/a') },
        { action: 'ssm:GetParameters', resource: parameter('tenang/b') },
      ],
    ],
  ];

  it.each(cases)(
    'when the SDK sends %s, the parameter ARN drops the leading slash; the denial is AccessDeniedException, 400',
    async (operation, call, checks) => {
      const error = await rejection(call(ssm()));
      const wire = aws.last();
      expect(signerOf(wire)).toEqual({ accessKeyId: 'AKIDTEST', service: 'ssm', region: 'us-east-1' });
      expect(apiRequestOf(wire, CTX)).toEqual({ service: 'ssm', operation, checks, protocol: 'json' });
      expectDenied(error, 'AccessDeniedException', 400);
    },
  );
});

describe('Function: apiRequestOf for Lambda (REST-JSON)', () => {
  const lambda = (): LambdaClient => new LambdaClient(clientConfig());
  const cases: Case<LambdaClient>[] = [
    [
      'GetEventSourceMapping',
      (c) => c.send(new GetEventSourceMappingCommand({ UUID: ESM_UUID })),
      [{ action: 'lambda:GetEventSourceMapping', resource: ESM_ARN }],
    ],
    [
      'UpdateEventSourceMapping',
      (c) => c.send(new UpdateEventSourceMappingCommand({ UUID: ESM_UUID, Enabled: false })),
      [{ action: 'lambda:UpdateEventSourceMapping', resource: ESM_ARN }],
    ],
    [
      'ListEventSourceMappings',
      (c) => c.send(new ListEventSourceMappingsCommand({ FunctionName: FUNCTION })),
      [{ action: 'lambda:ListEventSourceMappings', resource: '*' }],
    ],
    [
      'Invoke',
      (c) => c.send(new InvokeCommand({ FunctionName: FUNCTION })),
      [{ action: 'lambda:InvokeFunction', resource: FUNCTION_ARN }],
    ],
    [
      'GetFunctionConfiguration',
      (c) => c.send(new GetFunctionConfigurationCommand({ FunctionName: FUNCTION })),
      [{ action: 'lambda:GetFunctionConfiguration', resource: FUNCTION_ARN }],
    ],
    [
      // GET /2016-08-19/account-settings: another API version than the function routes.
      'GetAccountSettings',
      (c) => c.send(new GetAccountSettingsCommand({})),
      [{ action: 'lambda:GetAccountSettings', resource: '*' }],
    ],
  ];

  it.each(cases)(
    'when the SDK sends %s, it maps from method and path; the denial is AccessDeniedException, 403',
    async (operation, call, checks) => {
      const error = await rejection(call(lambda()));
      const wire = aws.last();
      expect(signerOf(wire)).toEqual({ accessKeyId: 'AKIDTEST', service: 'lambda', region: 'us-east-1' });
      expect(apiRequestOf(wire, CTX)).toEqual({
        service: 'lambda',
        operation,
        checks,
        protocol: 'rest-json',
      });
      expectDenied(error, 'AccessDeniedException', 403);
    },
  );

  it.each([
    [
      'a full ARN with an alias',
      { FunctionName: `arn:aws:lambda:eu-west-1:210987654321:function:${FUNCTION}:live` },
      `arn:aws:lambda:eu-west-1:210987654321:function:${FUNCTION}:live`,
    ],
    ['a name with a version', { FunctionName: `${FUNCTION}:3` }, `${FUNCTION_ARN}:3`],
    [
      'a partial ARN',
      { FunctionName: `210987654321:function:${FUNCTION}` },
      `arn:aws:lambda:us-east-1:210987654321:function:${FUNCTION}`,
    ],
    [
      'a name and the Qualifier parameter',
      { FunctionName: FUNCTION, Qualifier: 'live' },
      `${FUNCTION_ARN}:live`,
    ],
  ])(
    'when Invoke names %s, the qualifier is kept in the resource (Lambda denies a qualified call a policy grants only on the unqualified ARN)',
    async (_what, input, resource) => {
      await rejection(lambda().send(new InvokeCommand(input)));
      expect(apiRequestOf(aws.last(), CTX).checks).toEqual([{ action: 'lambda:InvokeFunction', resource }]);
    },
  );

  it('when the denial is sent, it carries x-amzn-ErrorType AccessDeniedException and the Message', () => {
    const answer = accessDeniedResponse({ service: 'lambda', operation: 'Invoke', checks: [] }, MESSAGE);
    expect(answer.status).toBe(403);
    expect(answer.headers['x-amzn-ErrorType']).toBe('AccessDeniedException');
    expect(JSON.parse(answer.body)).toEqual({ Message: MESSAGE });
  });
});

describe('Function: apiRequestOf for CloudWatch (AWS JSON 1.0, awsQueryCompatible)', () => {
  const cloudwatch = (): CloudWatchClient => new CloudWatchClient(clientConfig());
  const alarm = 'arn:aws:cloudwatch:us-east-1:123456789012:alarm:tenang-unit-dlq';
  const cases: Case<CloudWatchClient>[] = [
    [
      'PutMetricData',
      (c) =>
        c.send(
          new PutMetricDataCommand({ Namespace: 'Tenang', MetricData: [{ MetricName: 'Jobs', Value: 1 }] }),
        ),
      [{ action: 'cloudwatch:PutMetricData', resource: '*' }],
    ],
    [
      'GetMetricStatistics',
      (c) =>
        c.send(
          new GetMetricStatisticsCommand({
            Namespace: 'AWS/SQS',
            MetricName: 'ApproximateNumberOfMessagesVisible',
            StartTime: new Date(0),
            EndTime: new Date(60_000),
            Period: 60,
            Statistics: ['Maximum'],
          }),
        ),
      [{ action: 'cloudwatch:GetMetricStatistics', resource: '*' }],
    ],
    [
      'SetAlarmState',
      (c) =>
        c.send(
          new SetAlarmStateCommand({
            AlarmName: 'tenang-unit-dlq',
            StateValue: 'ALARM',
            StateReason: 'test',
          }),
        ),
      [{ action: 'cloudwatch:SetAlarmState', resource: alarm }],
    ],
    [
      'DescribeAlarms',
      (c) => c.send(new DescribeAlarmsCommand({ AlarmNames: ['tenang-unit-dlq'] })),
      [{ action: 'cloudwatch:DescribeAlarms', resource: alarm }],
    ],
  ];

  it.each(cases)(
    'when the SDK sends %s, its checks are read from what was sent; the denial is error AccessDenied, 403 (the awsQuery code AWS puts in x-amzn-query-error, read before __type by the query-compatible SDK)',
    async (operation, call, checks) => {
      const error = await rejection(call(cloudwatch()));
      const wire = aws.last();
      expect(signerOf(wire)).toEqual({ accessKeyId: 'AKIDTEST', service: 'monitoring', region: 'us-east-1' });
      expect(apiRequestOf(wire, CTX)).toEqual({ service: 'cloudwatch', operation, checks, protocol: 'json' });
      expectDenied(error, 'AccessDenied', 403);
    },
  );

  it('when PutMetricData is big enough for the SDK to gzip it, the body is gunzipped before it is read', async () => {
    const MetricData = Array.from({ length: 400 }, (_, i) => ({ MetricName: `Metric${i}`, Value: i }));
    await rejection(cloudwatch().send(new PutMetricDataCommand({ Namespace: 'Tenang', MetricData })));
    const wire = aws.last();
    expect(wire.headers['content-encoding']).toBe('gzip');
    expect(apiRequestOf(wire, CTX).checks).toEqual([{ action: 'cloudwatch:PutMetricData', resource: '*' }]);
  });

  it('when the query protocol is used, list members are read from Name.member.N', () => {
    const wire = wireOf({
      scope: 'monitoring',
      contentType: 'application/x-www-form-urlencoded',
      body: form({
        Action: 'DeleteAlarms',
        Version: '2010-08-01',
        'AlarmNames.member.1': 'a',
        'AlarmNames.member.2': 'b',
      }),
    });
    expect(apiRequestOf(wire, CTX)).toEqual({
      service: 'cloudwatch',
      operation: 'DeleteAlarms',
      checks: [
        { action: 'cloudwatch:DeleteAlarms', resource: 'arn:aws:cloudwatch:us-east-1:123456789012:alarm:a' },
        { action: 'cloudwatch:DeleteAlarms', resource: 'arn:aws:cloudwatch:us-east-1:123456789012:alarm:b' },
      ],
      protocol: 'query',
    });
  });
});

describe('Function: apiRequestOf and accessDeniedResponse for KMS (AWS JSON 1.1, TrentService)', () => {
  const kms = (op: string, body: object): ApiRequest =>
    apiRequestOf(wireOf({ scope: 'kms', target: `TrentService.${op}`, body: JSON.stringify(body) }), CTX);
  const KEY = '1234abcd-12ab-34cd-56ef-1234567890ab';

  it.each([
    ['a bare key id', KEY, `arn:aws:kms:us-east-1:123456789012:key/${KEY}`],
    [
      'a key ARN',
      `arn:aws:kms:eu-west-1:210987654321:key/${KEY}`,
      `arn:aws:kms:eu-west-1:210987654321:key/${KEY}`,
    ],
    [
      'an alias (not resolved to its key here)',
      'alias/tenang',
      'arn:aws:kms:us-east-1:123456789012:alias/tenang',
    ],
  ])('when Encrypt names %s (%s), it is kms:Encrypt on %s', (_what, KeyId, resource) => {
    expect(kms('Encrypt', { KeyId, Plaintext: 'eA==' })).toEqual({
      service: 'kms',
      operation: 'Encrypt',
      checks: [{ action: 'kms:Encrypt', resource }],
      protocol: 'json',
    });
  });

  it('when Decrypt names no KeyId, it throws: the key is only inside the ciphertext', () => {
    expect(() => kms('Decrypt', { CiphertextBlob: 'eA==' })).toThrow(/KMS Decrypt: the request has no KeyId/);
  });

  it('when the SDK reads the KMS denial, the error is AccessDeniedException, 400 (no KMS client is installed: read by the SSM client, whose AWS JSON 1.1 deserializer a KMS client shares)', async () => {
    aws.answer = () => accessDeniedResponse(kms('GenerateDataKey', { KeyId: KEY }), MESSAGE);
    const error = await rejection(new SSMClient(clientConfig()).send(new GetParameterCommand({ Name: 'x' })));
    expectDenied(error, 'AccessDeniedException', 400);
    expect(JSON.parse(accessDeniedResponse(kms('ListKeys', {}), MESSAGE).body)).toEqual({
      __type: 'AccessDeniedException',
      message: MESSAGE,
    });
  });
});

describe('Function: apiRequestOf and accessDeniedResponse for SNS (AWS Query)', () => {
  const TOPIC = 'arn:aws:sns:us-east-1:123456789012:tenang-unit-events';
  const sns = (params: Record<string, string>): ApiRequest =>
    apiRequestOf(
      wireOf({
        scope: 'sns',
        contentType: 'application/x-www-form-urlencoded; charset=utf-8',
        body: form({ ...params, Version: '2010-03-31' }),
      }),
      CTX,
    );

  it.each([
    ['Publish', { Action: 'Publish', TopicArn: TOPIC, Message: 'hi' }, 'sns:Publish', TOPIC],
    [
      'PublishBatch',
      { Action: 'PublishBatch', TopicArn: TOPIC, 'PublishBatchRequestEntries.member.1.Id': '1' },
      'sns:Publish',
      TOPIC,
    ],
    [
      'Publish to a TargetArn',
      {
        Action: 'Publish',
        TargetArn: 'arn:aws:sns:us-east-1:123456789012:endpoint/GCM/app/1',
        Message: 'hi',
      },
      'sns:Publish',
      'arn:aws:sns:us-east-1:123456789012:endpoint/GCM/app/1',
    ],
    [
      'GetTopicAttributes',
      { Action: 'GetTopicAttributes', TopicArn: TOPIC },
      'sns:GetTopicAttributes',
      TOPIC,
    ],
    [
      'Subscribe',
      { Action: 'Subscribe', TopicArn: TOPIC, Protocol: 'sqs', Endpoint: QUEUE_ARN },
      'sns:Subscribe',
      TOPIC,
    ],
    ['ListTopics', { Action: 'ListTopics' }, 'sns:ListTopics', '*'],
  ])('when the form body is %s (%j), it is %s on %s', (_what, params, action, resource) => {
    expect(sns(params)).toEqual({
      service: 'sns',
      operation: params.Action,
      checks: [{ action, resource }],
      protocol: 'query',
    });
  });

  it('when an unsigned form body carries Version 2010-03-31, it is still read as SNS', () => {
    const wire: WireRequest = {
      method: 'POST',
      path: '/',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: Buffer.from(form({ Action: 'Publish', TopicArn: TOPIC, Version: '2010-03-31' })),
    };
    expect(apiRequestOf(wire, CTX).checks).toEqual([{ action: 'sns:Publish', resource: TOPIC }]);
  });

  it('when the denial is sent, it is the documented ErrorResponse: Sender, AuthorizationError, 403, with the request id', () => {
    const answer = accessDeniedResponse(sns({ Action: 'Publish', TopicArn: TOPIC }), MESSAGE);
    const requestId = answer.headers['x-amzn-RequestId'];
    expect(answer.status).toBe(403);
    expect(answer.headers['content-type']).toBe('text/xml');
    expect(answer.body).toBe(
      '<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type>' +
        `<Code>AuthorizationError</Code><Message>${MESSAGE}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
    );
  });
});

describe('Function: apiRequestOf for services mapped only where the reference gives no resource type', () => {
  it('when STS GetCallerIdentity is sent, it needs no check (AWS always allows it)', () => {
    const wire = wireOf({
      scope: 'sts',
      contentType: 'application/x-www-form-urlencoded',
      body: form({ Action: 'GetCallerIdentity', Version: '2011-06-15' }),
    });
    expect(apiRequestOf(wire, CTX)).toEqual({
      service: 'sts',
      operation: 'GetCallerIdentity',
      checks: [],
      protocol: 'query',
    });
  });

  it('when CloudWatch Logs DescribeLogGroups is sent, it is logs:DescribeLogGroups on *', () => {
    const wire = wireOf({ scope: 'logs', target: 'Logs_20140328.DescribeLogGroups', body: '{}' });
    expect(apiRequestOf(wire, CTX).checks).toEqual([{ action: 'logs:DescribeLogGroups', resource: '*' }]);
  });

  it('when X-Ray PutTraceSegments is posted to /TraceSegments, it is xray:PutTraceSegments on *', () => {
    const wire = wireOf({
      scope: 'xray',
      path: '/TraceSegments',
      contentType: 'application/json',
      body: '{}',
    });
    expect(apiRequestOf(wire, CTX)).toMatchObject({
      service: 'xray',
      operation: 'PutTraceSegments',
      checks: [{ action: 'xray:PutTraceSegments', resource: '*' }],
    });
  });

  it('when an operation with a resource type is sent (logs PutLogEvents), it throws naming the operation', () => {
    const wire = wireOf({ scope: 'logs', target: 'Logs_20140328.PutLogEvents', body: '{}' });
    expect(() => apiRequestOf(wire, CTX)).toThrow(
      /CloudWatch Logs PutLogEvents: this operation has a resource type/,
    );
  });
});

describe('Function: apiRequestOf on malformed requests', () => {
  const parseError = (wire: WireRequest): RequestParseError => {
    try {
      apiRequestOf(wire, CTX);
    } catch (error) {
      if (error instanceof RequestParseError) return error;
      throw error;
    }
    throw new Error('apiRequestOf was expected to throw');
  };

  it('when a JSON service gets a body that is not JSON, it throws RequestParseError naming the operation', () => {
    const error = parseError(
      wireOf({ scope: 'dynamodb', target: 'DynamoDB_20120810.PutItem', body: 'TableName=x' }),
    );
    expect(error.message).toMatch(/^DynamoDB PutItem: the body is not JSON/);
  });

  it('when a TransactWriteItems item holds no known kind, it throws naming the item and what it holds', () => {
    const body = JSON.stringify({
      TransactItems: [{ Put: { TableName: TABLE, Item: {} } }, { Upsert: { TableName: TABLE } }],
    });
    const error = parseError(
      wireOf({ scope: 'dynamodb', target: 'DynamoDB_20120810.TransactWriteItems', body }),
    );
    expect(error.message).toBe(
      'DynamoDB TransactWriteItems TransactItems[1] must hold exactly one of Put, Update, Delete, ConditionCheck (it holds Upsert)',
    );
  });

  it('when a Lambda path is not a known operation, it throws naming method and path', () => {
    const error = parseError(
      wireOf({
        scope: 'lambda',
        method: 'GET',
        path: '/2015-03-31/functions/f/nope',
        contentType: 'application/json',
      }),
    );
    expect(error.message).toBe('Lambda: no operation is known for GET /2015-03-31/functions/f/nope');
  });

  it('when the account-settings path has another API version than GetAccountSettings (2016-08-19), it throws rather than guess', () => {
    const error = parseError(
      wireOf({
        scope: 'lambda',
        method: 'GET',
        path: '/2015-03-31/account-settings',
        contentType: 'application/json',
      }),
    );
    expect(error.message).toBe('Lambda: no operation is known for GET /2015-03-31/account-settings');
  });

  it('when ExecuteStatement is not a PartiQL form it can read, it throws rather than guess', () => {
    const body = JSON.stringify({ Statement: 'EXISTS(SELECT * FROM t)' });
    expect(
      parseError(wireOf({ scope: 'dynamodb', target: 'DynamoDB_20120810.ExecuteStatement', body })).message,
    ).toMatch(/cannot tell the PartiQL statement's kind/);
  });

  it('when an SQS QueueUrl is not …/account/name, it throws naming the URL', () => {
    const body = JSON.stringify({ QueueUrl: 'http://localhost:5055/q' });
    expect(parseError(wireOf({ scope: 'sqs', target: 'AmazonSQS.SendMessage', body })).message).toMatch(
      /SQS SendMessage: QueueUrl "http:\/\/localhost:5055\/q" is not/,
    );
  });

  it('when the service cannot be told, it throws instead of returning checks that would allow it', () => {
    const wire: WireRequest = { method: 'GET', path: '/health', headers: {}, body: Buffer.alloc(0) };
    expect(parseError(wire).message).toMatch(/cannot tell which AWS service GET \/health is for/);
  });
});
