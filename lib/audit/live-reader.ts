/**
 * Reads what the live audit needs about one deployed stack from the AWS APIs (live-audit.ts
 * turns the answers into the rules' model). Every list call is paginated; nothing is filtered
 * here except by the stack itself, so the scope decisions stay in one pure place.
 */
import { GetTemplateCommand, type CloudFormationClient } from '@aws-sdk/client-cloudformation';
import {
  paginateDescribeAlarms,
  type CloudWatchClient,
  type CompositeAlarm,
  type MetricAlarm,
} from '@aws-sdk/client-cloudwatch';
import { DescribeTimeToLiveCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  GetEventSourceMappingCommand,
  GetFunctionConfigurationCommand,
  paginateListEventSourceMappings,
  type EventSourceMappingConfiguration,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import { paginateListSubscriptionsByTopic, type SNSClient, type Subscription } from '@aws-sdk/client-sns';
import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { listStackResources, queueNameFromUrl, type DeployedResource } from '../adapters/aws/deployment';
import type { LiveQueue, LiveStackAnswers, LiveTable, LiveTopic } from './live-audit';
import { hasPreflightClients, readLivePreflight } from './preflight-reader';

/** The clients the live audit reads with (the CLI context's clients satisfy it). */
export interface LiveAuditClients {
  readonly cloudformation: CloudFormationClient;
  readonly sqs: SQSClient;
  readonly lambda: LambdaClient;
  readonly cloudwatch: CloudWatchClient;
  readonly dynamodb: DynamoDBClient;
  readonly sns: SNSClient;
}

/** Raised when the stack does not exist or holds no resources. */
export class LiveStackNotFoundError extends Error {
  public constructor(
    public readonly stackName: string,
    options?: { cause?: unknown },
  ) {
    super(`stack ${stackName} does not exist or has no resources`, options);
    this.name = 'LiveStackNotFoundError';
  }
}

/** CloudFormation's answer for an unknown stack: a ValidationError that says so. */
function isMissingStack(error: unknown): boolean {
  return error instanceof Error && error.name === 'ValidationError' && /does not exist/i.test(error.message);
}

async function stackResources(cfn: CloudFormationClient, stackName: string): Promise<DeployedResource[]> {
  try {
    return await listStackResources(cfn, stackName);
  } catch (error) {
    if (isMissingStack(error)) throw new LiveStackNotFoundError(stackName, { cause: error });
    throw error;
  }
}

/**
 * Resource metadata of the deployed template, by logical id. A template that is not JSON (a
 * hand-written YAML one) yields none: only the emulator switch `tenang:stream-arn` is read from
 * it, and CDK always deploys JSON.
 */
async function deployedMetadata(
  cfn: CloudFormationClient,
  stackName: string,
  progress: (line: string) => void,
): Promise<Map<string, Record<string, unknown>>> {
  const { TemplateBody } = await cfn.send(new GetTemplateCommand({ StackName: stackName }));
  let template: unknown;
  try {
    template = JSON.parse(TemplateBody ?? '{}');
  } catch {
    progress('the deployed template is not JSON: resource metadata not read');
    return new Map();
  }
  const resources = (template as { Resources?: Record<string, { Metadata?: unknown }> }).Resources ?? {};
  const metadata = new Map<string, Record<string, unknown>>();
  for (const [logicalId, r] of Object.entries(resources)) {
    const m = r?.Metadata;
    if (typeof m === 'object' && m !== null && !Array.isArray(m))
      metadata.set(logicalId, m as Record<string, unknown>);
  }
  return metadata;
}

async function readQueue(sqs: SQSClient, physicalId: string): Promise<LiveQueue> {
  const name = queueNameFromUrl(physicalId);
  // The deployed URL may name another host than the configured endpoint: ask for it.
  const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: QueueUrl ?? physicalId, AttributeNames: ['All'] }),
  );
  return { name, attributes: Attributes ?? {} };
}

async function mappingsOf(
  lambda: LambdaClient,
  functionName: string,
): Promise<EventSourceMappingConfiguration[]> {
  const mappings: EventSourceMappingConfiguration[] = [];
  for await (const page of paginateListEventSourceMappings(
    { client: lambda },
    { FunctionName: functionName },
  ))
    mappings.push(...(page.EventSourceMappings ?? []));
  return mappings;
}

async function readTable(dynamodb: DynamoDBClient, name: string): Promise<LiveTable> {
  const { TimeToLiveDescription } = await dynamodb.send(new DescribeTimeToLiveCommand({ TableName: name }));
  return { name, timeToLive: TimeToLiveDescription };
}

async function readAlarms(
  cloudwatch: CloudWatchClient,
): Promise<{ metricAlarms: MetricAlarm[]; compositeAlarms: CompositeAlarm[] }> {
  const metricAlarms: MetricAlarm[] = [];
  const compositeAlarms: CompositeAlarm[] = [];
  // Without AlarmTypes, DescribeAlarms returns metric alarms only.
  for await (const page of paginateDescribeAlarms(
    { client: cloudwatch },
    { AlarmTypes: ['MetricAlarm', 'CompositeAlarm'] },
  )) {
    metricAlarms.push(...(page.MetricAlarms ?? []));
    compositeAlarms.push(...(page.CompositeAlarms ?? []));
  }
  return { metricAlarms, compositeAlarms };
}

/** SNS's answers for a topic the caller may not read, or that is gone: it stays outside the audit. */
function isUnreadableTopic(error: unknown): boolean {
  const name = (error as { name?: string } | null)?.name ?? '';
  return (
    name === 'AuthorizationErrorException' ||
    name === 'AuthorizationError' ||
    name === 'NotFoundException' ||
    name === 'NotFound'
  );
}

async function subscriptionsOf(sns: SNSClient, topicArn: string): Promise<Subscription[]> {
  const subscriptions: Subscription[] = [];
  for await (const page of paginateListSubscriptionsByTopic({ client: sns }, { TopicArn: topicArn }))
    subscriptions.push(...(page.Subscriptions ?? []));
  return subscriptions;
}

/**
 * The subscriptions of the stack's topics and of every other topic its alarms notify; a topic
 * outside the stack that cannot be read (another account, no permission) is left out, said so.
 */
async function readTopics(
  sns: SNSClient,
  stackTopics: readonly DeployedResource[],
  alarmActions: readonly string[],
  progress: (line: string) => void,
): Promise<LiveTopic[]> {
  const own = new Map(stackTopics.map((t) => [t.physicalId, t.logicalId]));
  const others = [...new Set(alarmActions.filter((a) => /^arn:[^:]+:sns:/.test(a) && !own.has(a)))];
  const read = await Promise.all([
    ...[...own].map(async ([arn, logicalId]) => ({
      arn,
      logicalId,
      subscriptions: await subscriptionsOf(sns, arn),
    })),
    ...others.map(async (arn): Promise<LiveTopic | undefined> => {
      try {
        return { arn, subscriptions: await subscriptionsOf(sns, arn) };
      } catch (error) {
        if (!isUnreadableTopic(error)) throw error;
        progress(
          `topic ${arn} is outside the stack and could not be read (${(error as Error).name}): its subscribers are not checked`,
        );
        return undefined;
      }
    }),
  ]);
  return read.filter((t): t is LiveTopic => t !== undefined);
}

/** Reads a deployed stack for the live audit; `progress` gets a line before each slow part. */
export async function readLiveStack(
  clients: LiveAuditClients,
  stackName: string,
  progress: (line: string) => void,
): Promise<LiveStackAnswers> {
  progress(`listing the resources of stack ${stackName}`);
  const resources = await stackResources(clients.cloudformation, stackName);
  if (resources.length === 0) throw new LiveStackNotFoundError(stackName);
  const physicalIds = (type: string): string[] =>
    resources.filter((r) => r.type === type && r.physicalId !== '').map((r) => r.physicalId);
  const metadata = await deployedMetadata(clients.cloudformation, stackName, progress);

  const queueIds = physicalIds('AWS::SQS::Queue');
  progress(`reading the attributes of ${queueIds.length} queues`);
  const queues = await Promise.all(queueIds.map((id) => readQueue(clients.sqs, id)));

  const functionNames = physicalIds('AWS::Lambda::Function');
  progress(`reading ${functionNames.length} functions and their event source mappings`);
  const functions = await Promise.all(
    functionNames.map((name) =>
      clients.lambda.send(new GetFunctionConfigurationCommand({ FunctionName: name })),
    ),
  );
  const listed = (await Promise.all(functionNames.map((name) => mappingsOf(clients.lambda, name)))).flat();
  // A mapping of the stack on a function outside it is still the stack's.
  const seen = new Set(listed.map((m) => m.UUID));
  const unlisted = await Promise.all(
    physicalIds('AWS::Lambda::EventSourceMapping')
      .filter((uuid) => !seen.has(uuid))
      .map((uuid) => clients.lambda.send(new GetEventSourceMappingCommand({ UUID: uuid }))),
  );
  const mappings = [...listed, ...unlisted];

  const tableNames = physicalIds('AWS::DynamoDB::Table');
  progress(`reading the TTL settings of ${tableNames.length} tables`);
  const tables = await Promise.all(tableNames.map((name) => readTable(clients.dynamodb, name)));

  progress('reading the alarms of the account and region');
  const { metricAlarms, compositeAlarms } = await readAlarms(clients.cloudwatch);

  const stackAlarmNames = new Set(
    resources
      .filter((r) => r.type === 'AWS::CloudWatch::Alarm' || r.type === 'AWS::CloudWatch::CompositeAlarm')
      .map((r) => r.physicalId),
  );
  const actions = [...metricAlarms, ...compositeAlarms]
    .filter((a) => a.AlarmName !== undefined && stackAlarmNames.has(a.AlarmName))
    .flatMap((a) => [...(a.AlarmActions ?? []), ...(a.OKActions ?? [])]);
  const stackTopics = resources.filter((r) => r.type === 'AWS::SNS::Topic' && r.physicalId !== '');
  progress(`reading the subscriptions of the topics the alarms notify`);
  const topics = await readTopics(clients.sns, stackTopics, actions, progress);
  // The preflight's checks (P5), when the clients can read them (the CLI's can).
  const preflight = hasPreflightClients(clients)
    ? await readLivePreflight(clients, stackName, resources, progress)
    : undefined;

  return {
    stackName,
    resources: resources.map(({ logicalId, type, physicalId }) => ({ logicalId, type, physicalId })),
    metadata,
    queues,
    functions,
    mappings,
    tables,
    metricAlarms,
    compositeAlarms,
    topics,
    ...(preflight === undefined ? {} : { preflight }),
  };
}
