/** A status table of a deployed stack's queues and tables, read from the AWS APIs. */
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { listStackResources, queueNameFromUrl } from '../adapters/aws/deployment';

/** Clients the status reader needs. */
export interface StackStatusClients {
  readonly cfn: CloudFormationClient;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
}

/** One queue row. */
export interface QueueStatus {
  readonly queue: string;
  readonly kind: string;
  readonly visibleMessages: number;
  readonly inFlight: number;
  readonly visibilityTimeoutSeconds: number;
  readonly maxReceiveCount: number | undefined;
  readonly deadLetterQueue: string | undefined;
}

/** One table row. */
export interface TableStatus {
  readonly table: string;
  readonly status: string;
  readonly stream: string;
  readonly items: number;
}

/** The stack's queues and tables. */
export interface StackStatus {
  readonly stackName: string;
  readonly queues: readonly QueueStatus[];
  readonly tables: readonly TableStatus[];
}

const redriveSchema = (raw: string | undefined): { target?: string; max?: number } => {
  if (raw === undefined) return {};
  const parsed = JSON.parse(raw) as { deadLetterTargetArn?: string; maxReceiveCount?: number | string };
  return {
    target: parsed.deadLetterTargetArn?.split(':').pop(),
    max: parsed.maxReceiveCount === undefined ? undefined : Number(parsed.maxReceiveCount),
  };
};

/** Reads the current state of every queue and table the stack deployed. */
export async function readStackStatus(clients: StackStatusClients, stackName: string): Promise<StackStatus> {
  const resources = await listStackResources(clients.cfn, stackName);
  const queues = await Promise.all(
    resources
      .filter((r) => r.type === 'AWS::SQS::Queue')
      .map(async (r): Promise<QueueStatus> => {
        const name = queueNameFromUrl(r.physicalId);
        const { QueueUrl } = await clients.sqs.send(new GetQueueUrlCommand({ QueueName: name }));
        const { Attributes: a = {} } = await clients.sqs.send(
          new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
        );
        const redrive = redriveSchema(a.RedrivePolicy);
        return {
          queue: name,
          kind: a.FifoQueue === 'true' ? 'fifo' : 'standard',
          visibleMessages: Number(a.ApproximateNumberOfMessages ?? 0),
          inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
          visibilityTimeoutSeconds: Number(a.VisibilityTimeout ?? 0),
          maxReceiveCount: redrive.max,
          deadLetterQueue: redrive.target,
        };
      }),
  );
  const tables = await Promise.all(
    resources
      .filter((r) => r.type === 'AWS::DynamoDB::Table')
      .map(async (r): Promise<TableStatus> => {
        const { Table: t } = await clients.dynamodb.send(
          new DescribeTableCommand({ TableName: r.physicalId }),
        );
        return {
          table: r.physicalId,
          status: t?.TableStatus ?? 'UNKNOWN',
          stream: t?.StreamSpecification?.StreamEnabled
            ? (t.StreamSpecification.StreamViewType ?? 'on')
            : '-',
          items: t?.ItemCount ?? 0,
        };
      }),
  );
  queues.sort((x, y) => x.queue.localeCompare(y.queue));
  tables.sort((x, y) => x.table.localeCompare(y.table));
  return { stackName, queues, tables };
}
