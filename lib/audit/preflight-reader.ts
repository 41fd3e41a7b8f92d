/**
 * Reads what the preflight checks judge (preflight.ts) from the account, read-only: Lambda
 * GetAccountSettings, DescribeStacks and ListStackResources of the stage's stack, DescribeTable
 * and DescribeLogGroups for its fixed names, DescribeStream for its streams' shards, the
 * bootstrap's SSM parameter (or the CDKToolkit stack's outputs), and AWS's public SSM
 * parameters of the region's services.
 *
 * A fact the endpoint will not give (access denied, an operation the emulator does not
 * implement) becomes a `Reading` with the reason, and its check is reported `skipped`; every
 * other error (credentials, network, throttling) propagates to the CLI's error funnel.
 */
import {
  DescribeStacksCommand,
  GetTemplateCommand,
  type CloudFormationClient,
} from '@aws-sdk/client-cloudformation';
import { paginateDescribeLogGroups, type CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, type DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { GetAccountSettingsCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { GetParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { listStackResources } from '../adapters/aws/deployment';
import {
  BOOTSTRAP_STACK,
  DEFAULT_ASSUMED_SHARDS,
  stageFromTemplate,
  type AccountConcurrency,
  type BootstrapState,
  type PreflightFacts,
  type Reading,
  type StackPresence,
  type StageModel,
} from './preflight';

/** The clients the preflight reads with (the CLI context's clients satisfy it). */
export interface PreflightClients {
  readonly cloudformation: CloudFormationClient;
  readonly lambda: LambdaClient;
  readonly dynamodb: DynamoDBClient;
  readonly streams: DynamoDBStreamsClient;
  readonly logs: CloudWatchLogsClient;
  readonly ssm: SSMClient;
}

/** Error names AWS answers when the caller may not make the call. */
const ACCESS_DENIED = new Set(['AccessDeniedException', 'AccessDenied', 'UnauthorizedOperation']);

/**
 * Why the endpoint gave no answer to a read, or undefined for any other error (which is thrown
 * on): access denied, or an endpoint that does not implement the operation (moto 5.2.1 answers
 * GetAccountSettings with an HTML 404 page, which the SDK cannot parse).
 */
export function unansweredReason(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  if (ACCESS_DENIED.has(error.name)) return `not allowed (${error.name}: ${firstLine(error.message)})`;
  if (
    error.name === 'UnknownOperationException' ||
    error.name === 'SyntaxError' ||
    /Deserialization error/i.test(error.message) ||
    status === 404
  )
    return `the endpoint does not implement it (${error.name}: ${firstLine(error.message)})`;
  return undefined;
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? '';
}

/** Runs a read; an unanswered one becomes the reason, anything else is thrown. */
async function reading<T>(what: string, read: () => Promise<T>): Promise<Reading<T>> {
  try {
    return { ok: true, value: await read() };
  } catch (error) {
    const reason = unansweredReason(error);
    if (reason === undefined) throw error;
    return { ok: false, reason: `${what}: ${reason}` };
  }
}

/** CloudFormation's answer for an unknown stack: a ValidationError that says so. */
function isMissingStack(error: unknown): boolean {
  return error instanceof Error && error.name === 'ValidationError' && /does not exist/i.test(error.message);
}

/** Whether the stack exists (DescribeStacks), and its resources' physical ids when it does. */
export async function stackPresence(cfn: CloudFormationClient, stackName: string): Promise<StackPresence> {
  let status: string;
  try {
    const { Stacks = [] } = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
    status = Stacks[0]?.StackStatus ?? 'UNKNOWN';
  } catch (error) {
    if (isMissingStack(error)) return { exists: false };
    throw error;
  }
  const resources = await listStackResources(cfn, stackName);
  return {
    exists: true,
    status,
    physicalIds: new Set(resources.map((r) => r.physicalId).filter((id) => id !== '')),
  };
}

/** The deployed template, parsed (CDK deploys JSON; a YAML one yields an empty template). */
export async function deployedTemplate(cfn: CloudFormationClient, stackName: string): Promise<unknown> {
  const { TemplateBody } = await cfn.send(new GetTemplateCommand({ StackName: stackName }));
  try {
    return JSON.parse(TemplateBody ?? '{}');
  } catch {
    return {};
  }
}

async function accountConcurrency(lambda: LambdaClient): Promise<AccountConcurrency> {
  const { AccountLimit } = await lambda.send(new GetAccountSettingsCommand({}));
  return {
    limit: AccountLimit?.ConcurrentExecutions ?? 0,
    unreserved: AccountLimit?.UnreservedConcurrentExecutions ?? 0,
  };
}

/** A table's stream ARN when the table exists, null when it does not. */
async function describeTable(
  dynamodb: DynamoDBClient,
  name: string,
): Promise<{ streamArn: string | undefined } | null> {
  try {
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: name }));
    return { streamArn: Table?.LatestStreamArn };
  } catch (error) {
    if (error instanceof Error && error.name === 'ResourceNotFoundException') return null;
    throw error;
  }
}

/** Open shards of a stream: those with no ending sequence number. */
async function openShards(streams: DynamoDBStreamsClient, streamArn: string): Promise<number> {
  let open = 0;
  let start: string | undefined;
  do {
    const { StreamDescription } = await streams.send(
      new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: start }),
    );
    for (const shard of StreamDescription?.Shards ?? [])
      if (shard.SequenceNumberRange?.EndingSequenceNumber === undefined) open += 1;
    start = StreamDescription?.LastEvaluatedShardId;
  } while (start !== undefined);
  return open;
}

/** Which of `names` exist as log groups (one prefix listing per name: the names are few). */
async function existingLogGroups(logs: CloudWatchLogsClient, names: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const name of names) {
    for await (const page of paginateDescribeLogGroups({ client: logs }, { logGroupNamePrefix: name }))
      for (const g of page.logGroups ?? []) if (g.logGroupName === name) found.add(name);
  }
  return found;
}

function isParameterNotFound(error: unknown): boolean {
  return error instanceof Error && error.name === 'ParameterNotFound';
}

/** The bootstrap's version: its SSM parameter, else the CDKToolkit stack's BootstrapVersion output. */
async function bootstrapState(
  clients: Pick<PreflightClients, 'ssm' | 'cloudformation'>,
  parameter: string,
): Promise<BootstrapState> {
  try {
    const { Parameter } = await clients.ssm.send(new GetParameterCommand({ Name: parameter }));
    const version = Number(Parameter?.Value);
    return {
      version: Number.isFinite(version) ? version : undefined,
      from: `SSM parameter ${parameter} = ${Parameter?.Value ?? '(empty)'}`,
    };
  } catch (error) {
    if (!isParameterNotFound(error)) throw error;
  }
  try {
    const { Stacks = [] } = await clients.cloudformation.send(
      new DescribeStacksCommand({ StackName: BOOTSTRAP_STACK }),
    );
    const output = Stacks[0]?.Outputs?.find((o) => o.OutputKey === 'BootstrapVersion')?.OutputValue;
    const version = Number(output);
    return {
      version: output !== undefined && Number.isFinite(version) ? version : undefined,
      from: `no SSM parameter ${parameter}; stack ${BOOTSTRAP_STACK} has BootstrapVersion ${output ?? '(none)'}`,
    };
  } catch (error) {
    if (!isMissingStack(error)) throw error;
  }
  return {
    version: undefined,
    from: `neither SSM parameter ${parameter} nor stack ${BOOTSTRAP_STACK} exists`,
  };
}

/**
 * Per service, whether the region offers it: AWS's public parameter
 * `/aws/service/global-infrastructure/regions/<region>/services/<service>` exists for each
 * service a region offers (Systems Manager, "Calling public parameters for AWS services,
 * Regions, …"). AWS serves that path from a subset of regions only; when even Lambda is missing,
 * the region does not serve it and the reading says so instead of failing every service.
 */
async function regionServices(
  ssm: SSMClient,
  region: string,
  services: readonly string[],
): Promise<ReadonlyMap<string, boolean>> {
  const offered = new Map<string, boolean>();
  for (const service of [...new Set(['lambda', ...services])]) {
    try {
      await ssm.send(
        new GetParameterCommand({
          Name: `/aws/service/global-infrastructure/regions/${region}/services/${service}`,
        }),
      );
      offered.set(service, true);
    } catch (error) {
      if (!isParameterNotFound(error)) throw error;
      offered.set(service, false);
    }
  }
  if (offered.get('lambda') !== true)
    throw new RegionListUnavailableError(
      `the SSM endpoint of ${region} does not serve /aws/service/global-infrastructure (AWS serves it from some regions only)`,
    );
  return offered;
}

/** The region's service list is not served where it was asked (a reason, not a failure). */
class RegionListUnavailableError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'RegionListUnavailableError';
  }
}

/** What the preflight reads besides the stage model. */
export interface PreflightReadOptions {
  readonly region: string;
  /** Shards per stream that does not exist yet. */
  readonly assumedShards: number;
  /** The stack's presence, when the caller has read it already. @default read here */
  readonly stack?: StackPresence;
}

/** Reads every fact the preflight checks judge, for `stage`. */
export async function readPreflightFacts(
  clients: PreflightClients,
  stage: StageModel,
  options: PreflightReadOptions,
): Promise<PreflightFacts> {
  const stack = options.stack ?? (await stackPresence(clients.cloudformation, stage.stackName));
  const concurrency = await reading('GetAccountSettings', () => accountConcurrency(clients.lambda));

  const streamTables = new Set(
    stage.mappings.map((m) => m.streamTable).filter((t): t is string => t !== undefined),
  );
  const tableNames = [...new Set([...stage.retainedTables, ...streamTables])];
  const existing = await reading('DescribeTable / DescribeLogGroups', async () => {
    const described = await Promise.all(
      tableNames.map(async (t) => [t, await describeTable(clients.dynamodb, t)] as const),
    );
    return {
      tables: new Set(described.filter(([, d]) => d !== null).map(([t]) => t)),
      logGroups: await existingLogGroups(clients.logs, stage.retainedLogGroups),
      streams: described.flatMap(([t, d]) => (d?.streamArn === undefined ? [] : [[t, d.streamArn] as const])),
    };
  });
  const streamShards = new Map<string, number>();
  if (existing.ok)
    for (const [table, arn] of existing.value.streams)
      if (streamTables.has(table)) streamShards.set(table, await openShards(clients.streams, arn));

  const required = stage.bootstrap;
  const bootstrap: Reading<BootstrapState> =
    required === undefined
      ? { ok: true, value: { version: undefined, from: 'not needed' } }
      : await reading('the CDK bootstrap', () => bootstrapState(clients, required.parameter));

  let services: Reading<ReadonlyMap<string, boolean>>;
  try {
    services = await reading("the region's services", () =>
      regionServices(clients.ssm, options.region, stage.services),
    );
  } catch (error) {
    if (!(error instanceof RegionListUnavailableError)) throw error;
    services = { ok: false, reason: error.message };
  }

  return {
    stage,
    region: options.region,
    concurrency,
    streamShards,
    assumedShards: options.assumedShards,
    stack,
    existing: existing.ok
      ? { ok: true, value: { tables: existing.value.tables, logGroups: existing.value.logGroups } }
      : existing,
    bootstrap,
    services,
  };
}

/** Whether `clients` can read the preflight (the CLI's can; a test's live-audit clients may not). */
export function hasPreflightClients(clients: object): clients is PreflightClients {
  return ['cloudformation', 'lambda', 'dynamodb', 'streams', 'logs', 'ssm'].every((k) => k in clients);
}

/**
 * The preflight of a deployed stack (`tenang audit --live`): the stage model from its deployed
 * template, the stack's resources as already listed, the region the clients call.
 */
export async function readLivePreflight(
  clients: PreflightClients,
  stackName: string,
  resources: readonly { readonly physicalId: string }[],
  progress: (line: string) => void,
): Promise<PreflightFacts> {
  progress('reading the preflight: account concurrency, retained names, bootstrap, region services');
  const stage = stageFromTemplate(
    await deployedTemplate(clients.cloudformation, stackName),
    stackName,
    `deployed stack ${stackName}`,
  );
  const stack: StackPresence = {
    exists: true,
    status: 'deployed',
    physicalIds: new Set(resources.map((r) => r.physicalId).filter((id) => id !== '')),
  };
  return readPreflightFacts(clients, stage, {
    region: await clients.lambda.config.region(),
    assumedShards: DEFAULT_ASSUMED_SHARDS,
    stack,
  });
}
