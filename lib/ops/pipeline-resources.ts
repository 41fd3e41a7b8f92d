/**
 * The deployed resources a command acts on, found from the stack (ListStackResources) and the
 * pipeline config's derived names, never typed by hand: queue URLs per job type, each
 * consumer's event source mapping, and the tables.
 */
import { GetEventSourceMappingCommand } from '@aws-sdk/client-lambda';
import { GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { listStackResources, queueNameFromUrl } from '../adapters/aws/deployment';
import type { ResolvedJobType, ResolvedStreamConsumer } from '../config';
import { CommandFailedError, UsageError, type CliContext } from './cli-context';

/** A consumer the CLI can pause: a job type's or a stream's. */
export type ConsumerEntry =
  | { readonly kind: 'queue'; readonly consumer: string; readonly jobType: ResolvedJobType }
  | { readonly kind: 'stream'; readonly consumer: string; readonly stream: ResolvedStreamConsumer };

/** Every consumer the config declares. */
export function consumers(context: CliContext): ConsumerEntry[] {
  return [
    ...context.config.jobTypes.map((jobType): ConsumerEntry => ({
      kind: 'queue',
      consumer: jobType.consumer,
      jobType,
    })),
    ...context.config.streamConsumers.map((stream): ConsumerEntry => ({
      kind: 'stream',
      consumer: stream.consumer,
      stream,
    })),
  ];
}

/** The consumer named `name`; an unknown name is a usage error listing the known ones. */
export function findConsumer(context: CliContext, name: string): ConsumerEntry {
  const all = consumers(context);
  const found = all.find((c) => c.consumer === name);
  if (found === undefined) {
    throw new UsageError(
      `unknown consumer "${name}"; known consumers: ${all.map((c) => c.consumer).join(', ')}`,
    );
  }
  return found;
}

/** Whether pausing the consumer would block recovery (config: neededForRecovery). */
export function neededForRecovery(entry: ConsumerEntry): boolean {
  return entry.kind === 'queue' ? entry.jobType.neededForRecovery : entry.stream.neededForRecovery;
}

/** The job type named `name`; unknown is a usage error listing the known ones. */
export function findJobType(context: CliContext, name: string): ResolvedJobType {
  const found = context.config.jobTypes.find((j) => j.name === name);
  if (found === undefined) {
    throw new UsageError(
      `unknown job type "${name}"; known job types: ${context.config.jobTypes.map((j) => j.name).join(', ')}`,
    );
  }
  return found;
}

/** An event source mapping of the stack. */
export interface DeployedMapping {
  readonly uuid: string;
  readonly functionName: string;
  readonly state: string;
}

/** What the stack deployed, indexed for the commands. */
export interface PipelineResources {
  /** Queue name → URL, for the stack's queues. */
  readonly queueUrls: ReadonlyMap<string, string>;
  /** Table names the stack deployed. */
  readonly tables: ReadonlySet<string>;
  readonly mappings: readonly DeployedMapping[];
}

/** Reads the stack's queues, tables and event source mappings (each mapping through the Lambda endpoint). */
export async function discoverResources(context: CliContext): Promise<PipelineResources> {
  const resources = await listStackResources(context.clients.cloudformation, context.stackName);
  if (resources.length === 0) {
    throw new CommandFailedError(
      `stack ${context.stackName} has no resources: is stage "${context.stage}" deployed?`,
    );
  }
  const queueUrls = new Map<string, string>();
  await Promise.all(
    resources
      .filter((r) => r.type === 'AWS::SQS::Queue')
      .map(async (r) => {
        const name = queueNameFromUrl(r.physicalId);
        // The deployed URL may name another host than the configured endpoint: ask for it.
        const { QueueUrl } = await context.clients.sqs.send(new GetQueueUrlCommand({ QueueName: name }));
        if (QueueUrl !== undefined) queueUrls.set(name, QueueUrl);
      }),
  );
  const tables = new Set(resources.filter((r) => r.type === 'AWS::DynamoDB::Table').map((r) => r.physicalId));
  const mappings = await Promise.all(
    resources
      .filter((r) => r.type === 'AWS::Lambda::EventSourceMapping')
      .map(async (r): Promise<DeployedMapping> => {
        const m = await context.clients.lambda.send(new GetEventSourceMappingCommand({ UUID: r.physicalId }));
        const arn = m.FunctionArn ?? '';
        return {
          uuid: m.UUID ?? r.physicalId,
          functionName: arn.slice(arn.lastIndexOf(':') + 1),
          state: m.State ?? 'Unknown',
        };
      }),
  );
  return { queueUrls, tables, mappings };
}

/** The URL of a queue the config names; a missing one means the stack and the config disagree. */
export function queueUrl(resources: PipelineResources, name: string): string {
  const url = resources.queueUrls.get(name);
  if (url === undefined)
    throw new CommandFailedError(`queue ${name} is not in the stack: is it deployed with this config?`);
  return url;
}

/** A consumer's event source mapping: the one whose function is `<stack>-<consumer>`. */
export function mappingOf(
  context: CliContext,
  resources: PipelineResources,
  consumer: string,
): DeployedMapping {
  const found = resources.mappings.find(
    (m) => m.functionName === `${context.stackName}-${consumer}` || m.functionName.endsWith(`-${consumer}`),
  );
  if (found === undefined)
    throw new CommandFailedError(`no event source mapping of ${consumer} in stack ${context.stackName}`);
  return found;
}

/** A table the config's naming derives (`tenang-<stage>-<name>`), checked against the stack. */
export function tableName(context: CliContext, resources: PipelineResources, name: string): string {
  const table = `tenang-${context.stage}-${name}`;
  if (!resources.tables.has(table))
    throw new CommandFailedError(`table ${table} is not in stack ${context.stackName}`);
  return table;
}
