/**
 * What every `tenang` command gets: the stage's pipeline config, AWS clients for the configured
 * endpoint (AWS, or the local platform through AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_LAMBDA),
 * output helpers and the clock. Commands live in lib/ops/commands/<name>.ts and export
 * `register(program, context)`; only bin/tenang.ts calls process.exit.
 */
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { Command } from 'commander';
import { stageConfig } from '../adapters/lambda-env';
import type { PipelineConfig } from '../config';
import { stackName } from '../infra/app';

/** A usage error: wrong or missing options (exit code 2). */
export class UsageError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A command that ran and found a failure to report (exit code 1), e.g. an unconverged pause. */
export class CommandFailedError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'CommandFailedError';
  }
}

/** The AWS clients a command may use; built lazily, destroyed by the CLI at exit. */
export interface CliClients {
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  readonly streams: DynamoDBStreamsClient;
  readonly ssm: SSMClient;
  readonly lambda: LambdaClient;
  readonly cloudwatch: CloudWatchClient;
  readonly cloudformation: CloudFormationClient;
}

/** How a destructive command asks before acting. */
export interface Prompt {
  /** Whether a person can answer (stdin is a terminal). */
  readonly interactive: boolean;
  /** Asks a yes/no question; true only for an explicit yes. */
  confirm(question: string): Promise<boolean>;
}

/** Never asks: not interactive, every question answered no. */
export const NO_PROMPT: Prompt = { interactive: false, confirm: () => Promise.resolve(false) };

/** What a command runs with. */
export interface CliContext {
  readonly stage: string;
  readonly region: string;
  readonly config: PipelineConfig;
  readonly stackName: string;
  readonly clients: CliClients;
  /** Human output (tables, messages). */
  readonly out: (text: string) => void;
  /** Progress and warnings (stderr). */
  readonly err: (text: string) => void;
  readonly now: () => Date;
  /** Who acts (for flags' setBy and audit logs). */
  readonly actor: string;
  /** Asks before destructive actions. @default NO_PROMPT */
  readonly prompt?: Prompt;
  /** The environment the context was built from (e.g. the cache connection's variables). @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

/** A command module's entry point. */
export type RegisterCommand = (program: Command, context: () => CliContext) => void;

/** Builds the context from the environment (TENANG_STAGE, AWS_REGION, AWS_ENDPOINT_URL…). */
export function contextFromEnv(
  opts: { stage?: string; out?: (t: string) => void; err?: (t: string) => void; prompt?: Prompt } = {},
  env: NodeJS.ProcessEnv = process.env,
): CliContext {
  const stage = opts.stage ?? env.TENANG_STAGE ?? 'dev';
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const config = stageConfig(stage, region);
  // Endpoints from `env`, not only from process.env (which the SDK reads by itself): a drill or
  // a test hands the CLI another environment than its own process's.
  const base = (service: string): { region: string; endpoint?: string } => {
    const endpoint = env[`AWS_ENDPOINT_URL_${service}`] ?? env.AWS_ENDPOINT_URL;
    return endpoint === undefined || endpoint === '' ? { region } : { region, endpoint };
  };
  let clients: CliClients | undefined;
  const lazy = (): CliClients =>
    (clients ??= {
      // SQS through the configured endpoint: deployed queue URLs name the regional host.
      sqs: new SQSClient({ ...base('SQS'), useQueueUrlAsEndpoint: false }),
      dynamodb: new DynamoDBClient(base('DYNAMODB')),
      // The SDK's own variable for this service is AWS_ENDPOINT_URL_DYNAMODB_STREAMS.
      streams: new DynamoDBStreamsClient(base('DYNAMODB_STREAMS')),
      ssm: new SSMClient(base('SSM')),
      lambda: new LambdaClient(base('LAMBDA')),
      cloudwatch: new CloudWatchClient(base('CLOUDWATCH')),
      cloudformation: new CloudFormationClient(base('CLOUDFORMATION')),
    });
  return {
    stage,
    region,
    config,
    stackName: stackName(stage),
    get clients(): CliClients {
      return lazy();
    },
    out: opts.out ?? ((t) => process.stdout.write(t.endsWith('\n') ? t : `${t}\n`)),
    err: opts.err ?? ((t) => process.stderr.write(t.endsWith('\n') ? t : `${t}\n`)),
    now: () => new Date(),
    actor: env.TENANG_ACTOR ?? env.USER ?? 'tenang-cli',
    prompt: opts.prompt ?? NO_PROMPT,
    env,
  };
}
