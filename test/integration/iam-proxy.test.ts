/**
 * The IAM proxy in front of the shared moto, with real SDK clients: a role's request is allowed
 * or denied by the policies in force, a denial answers as AWS does (the SDK raises AWS's error)
 * and is logged once, operator credentials pass unevaluated, and CloudWatch's publish to an
 * alarm topic is judged by the topic policy (and the key policy of an encrypted topic).
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  GetItemCommand,
  PutItemCommand,
  DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { CreateTopicCommand, DeleteTopicCommand, PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { CreateQueueCommand, DeleteQueueCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { IamAuthorizer, type LocalCredentials } from '../../lib/local/iam/authorizer';
import type { DeployedPolicies } from '../../lib/local/iam/deployed-policies';
import { parsePolicy, type PolicyStatement } from '../../lib/local/iam/evaluate';
import { SOURCE_ARN_HEADER, startIamProxy, type IamProxy } from '../../lib/local/iam/iam-proxy';
import { dynamoClient, sqsClient, uniqueName } from '../helpers/aws';

const ACCOUNT = '123456789012';
const REGION = process.env.AWS_REGION ?? 'us-east-1';
const ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/worker-role`;
const KEY_ARN = `arn:aws:kms:${REGION}:${ACCOUNT}:key/11111111-2222-3333-4444-555555555555`;
/** What CDK writes for `enforceSSL: true` (queues and topics). */
const tlsOnly = (action: string, resource: string): PolicyStatement => ({
  Effect: 'Deny',
  Principal: { AWS: '*' },
  Action: action,
  Resource: resource,
  Condition: { Bool: { 'aws:SecureTransport': 'false' } },
});

describe('IAM proxy (moto + real SDK clients)', () => {
  const sqs = sqsClient();
  const dynamodb = dynamoClient();
  const operatorSns = new SNSClient({ endpoint: process.env.AWS_ENDPOINT_URL, region: REGION });
  let allowedUrl = '';
  let otherUrl = '';
  let table = '';
  let plainTopic = '';
  let encryptedTopic = '';
  let bareTopic = '';

  beforeAll(async () => {
    allowedUrl =
      (await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('iam-allowed') }))).QueueUrl ?? '';
    otherUrl =
      (await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('iam-other') }))).QueueUrl ?? '';
    table = uniqueName('iam-table');
    await dynamodb.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
    const topic = async (name: string): Promise<string> =>
      (await operatorSns.send(new CreateTopicCommand({ Name: uniqueName(name) }))).TopicArn ?? '';
    plainTopic = await topic('iam-alarms');
    encryptedTopic = await topic('iam-alarms-kms');
    bareTopic = await topic('iam-alarms-tls-only');
  });

  afterAll(async () => {
    for (const url of [allowedUrl, otherUrl]) await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    await dynamodb.send(new DeleteTableCommand({ TableName: table }));
    for (const t of [plainTopic, encryptedTopic, bareTopic])
      await operatorSns.send(new DeleteTopicCommand({ TopicArn: t }));
    operatorSns.destroy();
  });

  const arnOf = (url: string): string =>
    `arn:aws:sqs:${REGION}:${ACCOUNT}:${url.slice(url.lastIndexOf('/') + 1)}`;
  const alarmsPublish = (topic: string): PolicyStatement => ({
    Effect: 'Allow',
    Principal: { Service: 'cloudwatch.amazonaws.com' },
    Action: 'sns:Publish',
    Resource: topic,
    Condition: {
      StringEquals: { 'aws:SourceAccount': ACCOUNT },
      ArnLike: { 'aws:SourceArn': `arn:aws:cloudwatch:${REGION}:${ACCOUNT}:alarm:*` },
    },
  });

  function policies(): DeployedPolicies {
    return {
      accountId: ACCOUNT,
      region: REGION,
      roles: new Map([
        [
          ROLE_ARN,
          {
            logicalId: 'WorkerRole',
            name: 'worker-role',
            arn: ROLE_ARN,
            identity: [
              parsePolicy(
                {
                  Statement: [
                    {
                      Effect: 'Allow',
                      Action: ['sqs:SendMessage', 'sqs:GetQueueAttributes'],
                      Resource: arnOf(allowedUrl),
                    },
                    {
                      Effect: 'Allow',
                      Action: 'dynamodb:GetItem',
                      Resource: `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${table}`,
                    },
                  ],
                },
                'WorkerRoleDefaultPolicy',
              ),
            ],
          },
        ],
      ]),
      resourcePolicies: new Map([
        [
          arnOf(allowedUrl),
          parsePolicy({ Statement: [tlsOnly('sqs:*', arnOf(allowedUrl))] }, 'AllowedQueuePolicy'),
        ],
        [
          plainTopic,
          parsePolicy(
            { Statement: [tlsOnly('sns:Publish', plainTopic), alarmsPublish(plainTopic)] },
            'TopicPolicy',
          ),
        ],
        [bareTopic, parsePolicy({ Statement: [tlsOnly('sns:Publish', bareTopic)] }, 'TlsOnlyTopicPolicy')],
        [encryptedTopic, parsePolicy({ Statement: [alarmsPublish(encryptedTopic)] }, 'EncryptedTopicPolicy')],
        [
          KEY_ARN,
          parsePolicy(
            {
              Statement: [
                {
                  Effect: 'Allow',
                  Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` },
                  Action: 'kms:*',
                  Resource: '*',
                },
              ],
            },
            'KeyPolicy',
          ),
        ],
      ]),
      topicKeys: new Map([[encryptedTopic, KEY_ARN]]),
      keys: new Set([KEY_ARN]),
    };
  }

  let proxy: IamProxy;
  let authorizer: IamAuthorizer;
  let lines: string[];
  let role: LocalCredentials;
  beforeEach(async () => {
    lines = [];
    authorizer = new IamAuthorizer(policies());
    role = authorizer.credentialsForRole(ROLE_ARN, 'worker-fn');
    proxy = await startIamProxy({
      upstream: process.env.AWS_ENDPOINT_URL ?? '',
      authorizer,
      log: (line) => lines.push(line),
    });
  });
  afterEach(async () => {
    await proxy.close();
  });

  const asRole = <C>(Client: new (cfg: object) => C): C =>
    new Client({ endpoint: proxy.url, region: REGION, credentials: role });

  it('when the role may send to a queue, the message reaches moto; the TLS-only Deny does not apply (the SDK uses HTTPS on AWS)', async () => {
    const client = asRole(SQSClient);
    const sent = await client.send(new SendMessageCommand({ QueueUrl: allowedUrl, MessageBody: 'ok' }));
    expect(sent.MessageId).toBeDefined();
    expect(lines).toEqual([]);
    expect(authorizer.usageRecords()).toContainEqual(
      expect.objectContaining({ role: 'WorkerRole', action: 'sqs:SendMessage', resource: arnOf(allowedUrl) }),
    );
    client.destroy();
  });

  it("when no policy lets the role send to a queue, the SDK raises AWS's AccessDenied and the platform logs one line", async () => {
    const client = asRole(SQSClient);
    const error = await client.send(new SendMessageCommand({ QueueUrl: otherUrl, MessageBody: 'no' })).then(
      () => undefined,
      (e: unknown) => e as { name: string; message: string; $metadata: { httpStatusCode?: number } },
    );
    expect(error?.name).toBe('AccessDenied');
    expect(error?.$metadata.httpStatusCode).toBe(403);
    expect(error?.message).toContain(
      `is not authorized to perform: sqs:SendMessage on resource: ${arnOf(otherUrl)}`,
    );
    expect(lines).toEqual([`[iam] denied worker-role sqs:SendMessage ${arnOf(otherUrl)}`]);
    client.destroy();
  });

  it('when the role may read but not write a table, PutItem is AccessDeniedException and nothing is written', async () => {
    const client = asRole(DynamoDBClient);
    const error = await client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'x' } } })).then(
      () => undefined,
      (e: unknown) => e as { name: string },
    );
    expect(error?.name).toBe('AccessDeniedException');
    expect(lines).toEqual([
      `[iam] denied worker-role dynamodb:PutItem arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${table}`,
    ]);
    client.destroy();
  });

  it('when a grant is withheld (a deploy that lost it), the request is denied as if no policy allowed it, and restoring it allows it again', async () => {
    const client = asRole(DynamoDBClient);
    const tableArn = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${table}`;
    const get = (): Promise<{ name: string; message: string } | undefined> =>
      client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: 'x' } } })).then(
        () => undefined,
        (e: unknown) => e as { name: string; message: string },
      );
    expect(await get()).toBeUndefined();

    authorizer.withhold(ROLE_ARN, 'dynamodb:GetItem', tableArn);
    const denied = await get();
    authorizer.restoreGrants(ROLE_ARN);
    const restored = await get();

    expect(denied?.name).toBe('AccessDeniedException');
    expect(denied?.message).toContain('because no identity-based policy allows the dynamodb:GetItem action');
    expect(lines).toEqual([`[iam] denied worker-role dynamodb:GetItem ${tableArn}`]);
    expect(restored).toBeUndefined();
    expect(() =>
      authorizer.withhold('arn:aws:iam::000000000000:role/none', 'dynamodb:GetItem', tableArn),
    ).toThrow('no deployed role');
    client.destroy();
  });

  it('when a request is signed with credentials the platform did not hand out (an operator), it passes unevaluated', async () => {
    const sent = await sqs.send(new SendMessageCommand({ QueueUrl: otherUrl, MessageBody: 'operator' }));
    expect(sent.MessageId).toBeDefined();
    const viaProxy = new SQSClient({ endpoint: proxy.url, region: REGION });
    await expect(
      viaProxy.send(new SendMessageCommand({ QueueUrl: otherUrl, MessageBody: 'operator' })),
    ).resolves.toBeDefined();
    viaProxy.destroy();
    expect(lines).toEqual([]);
  });

  describe('CloudWatch publishing alarm actions', () => {
    const publishAsCloudWatch = async (topic: string, sourceArn: string): Promise<unknown> => {
      const client = new SNSClient({
        endpoint: proxy.url,
        region: REGION,
        credentials: authorizer.credentialsForService('cloudwatch.amazonaws.com'),
      });
      const command = new PublishCommand({ TopicArn: topic, Message: '{"AlarmName":"a"}' });
      command.middlewareStack.add(
        (next) => (args) => {
          (args.request as { headers: Record<string, string> }).headers[SOURCE_ARN_HEADER] = sourceArn;
          return next(args);
        },
        { step: 'build' },
      );
      try {
        return await client.send(command);
      } catch (error) {
        return error;
      } finally {
        client.destroy();
      }
    };
    const alarm = `arn:aws:cloudwatch:${REGION}:${ACCOUNT}:alarm:tenang-dev-payment-consumer-dlq`;

    it('when the topic policy holds only the TLS Deny (what enforceSSL alone writes), CloudWatch is refused (SNS code AuthorizationError, which the SDK raises as AuthorizationErrorException)', async () => {
      const result = (await publishAsCloudWatch(bareTopic, alarm)) as {
        name?: string;
        $metadata?: { httpStatusCode?: number };
      };
      expect(result.name).toBe('AuthorizationErrorException');
      expect(result.$metadata?.httpStatusCode).toBe(403);
      expect(lines).toEqual([`[iam] denied cloudwatch.amazonaws.com sns:Publish ${bareTopic}`]);
    });

    it("when the topic policy lets this account's alarms publish, the notification reaches the topic", async () => {
      const result = (await publishAsCloudWatch(plainTopic, alarm)) as { MessageId?: string };
      expect(result.MessageId).toBeDefined();
      expect(lines).toEqual([]);
    });

    it("when the publish is on behalf of another account's alarm, aws:SourceArn does not match and it is refused", async () => {
      const result = (await publishAsCloudWatch(plainTopic, alarm.replace(ACCOUNT, '999999999999'))) as {
        name?: string;
      };
      expect(result.name).toBe('AuthorizationErrorException');
    });

    it('when the topic is encrypted with a key whose policy does not let CloudWatch use it, the publish is refused on the key', async () => {
      const result = (await publishAsCloudWatch(encryptedTopic, alarm)) as { name?: string };
      expect(result.name).toBe('AuthorizationErrorException');
      expect(lines).toEqual([`[iam] denied cloudwatch.amazonaws.com kms:GenerateDataKey ${KEY_ARN}`]);
    });
  });
});
