/**
 * What every `tenang` command gets: the stage's pipeline config, AWS clients for the configured
 * endpoint (AWS, or the local platform through AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_LAMBDA),
 * output helpers and the clock. Commands live in lib/ops/commands/<name>.ts and export
 * `register(program, context)`; only bin/tenang.ts calls process.exit.
 */
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { Command } from 'commander';
import { silenceSdkNodeVersionWarning } from '../adapters/aws/clients';
import { deployedPipelineConfig } from '../adapters/aws/deployment';
import { decodePipeline, PIPELINE_VARIABLE, type PipelineConfig } from '../config';
import { stackName } from '../infra/stack-name';

/** A usage error: wrong or missing options (exit code 2). */
export class UsageError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A command that ran and found a failure to report (exit code 1), e.g. an unconverged pause. */
export class CommandFailedError extends Error {
  /** `options.cause`: the error behind it (the CLI tells a credentials failure by it). */
  public constructor(message: string, options?: ErrorOptions) {
    super(message, options);
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
  /** CloudWatch Logs (`tenang preflight` looks up retained log groups). */
  readonly logs: CloudWatchLogsClient;
  readonly sns: SNSClient;
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
  /**
   * Reads the pipeline config from the deployed stack when TENANG_PIPELINE does not give it (the
   * CLI calls it before every command's action; a failure is reported when `config` is read).
   * @default nothing to load
   */
  readonly loadConfig?: () => Promise<void>;
}

/** A command module's entry point. */
export type RegisterCommand = (program: Command, context: () => CliContext) => void;

/** Commands that read no pipeline config, with the options for which that holds. */
const CONFIG_FREE = new WeakMap<Command, (options: Record<string, unknown>) => boolean>();

/**
 * Marks `command` as needing no pipeline config (for the options `when` accepts): the CLI then
 * makes no call for it before the action (no GetTemplate, no wait on the credential chain).
 */
export function configFree(
  command: Command,
  when: (options: Record<string, unknown>) => boolean = () => true,
): Command {
  CONFIG_FREE.set(command, when);
  return command;
}

/** Whether the action about to run needs the pipeline config (see configFree). */
export function needsConfig(command: Command): boolean {
  const when = CONFIG_FREE.get(command);
  return when === undefined || !when(command.optsWithGlobals());
}

/** Commands that answer in JSON for more than --json (e.g. audit's --format json). */
const JSON_ANSWER = new WeakMap<Command, (options: Record<string, unknown>) => boolean>();

/**
 * Marks `command` as answering in JSON also when `when` holds for its options (beyond --json): the
 * CLI then reports its errors as a JSON object on stdout too.
 */
export function answersInJson(
  command: Command,
  when: (options: Record<string, unknown>) => boolean,
): Command {
  JSON_ANSWER.set(command, when);
  return command;
}

/** Whether the action about to run answers in JSON: --json (the program's or its own), or answersInJson. */
export function wantsJson(command: Command): boolean {
  const options = command.optsWithGlobals();
  return options.json === true || JSON_ANSWER.get(command)?.(options) === true;
}

/** Builds the context from the environment (TENANG_STAGE, AWS_REGION, AWS_ENDPOINT_URL…). */
export function contextFromEnv(
  opts: { stage?: string; out?: (t: string) => void; err?: (t: string) => void; prompt?: Prompt } = {},
  env: NodeJS.ProcessEnv = process.env,
): CliContext {
  const stage = opts.stage ?? env.TENANG_STAGE ?? 'dev';
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  // The app's declaration: from TENANG_PIPELINE (tests, a checkout of the app) or, by default,
  // from the deployed stack's template, which carries the one it was built with.
  let config: PipelineConfig | undefined =
    env[PIPELINE_VARIABLE] === undefined || env[PIPELINE_VARIABLE] === ''
      ? undefined
      : decodePipeline(env[PIPELINE_VARIABLE], PIPELINE_VARIABLE, stage, region);
  let configError: Error | undefined;
  // Endpoints from `env`, not only from process.env (which the SDK reads by itself): a drill or
  // a test hands the CLI another environment than its own process's.
  const base = (service: string): { region: string; endpoint?: string } => {
    const endpoint = env[`AWS_ENDPOINT_URL_${service}`] ?? env.AWS_ENDPOINT_URL;
    return endpoint === undefined || endpoint === '' ? { region } : { region, endpoint };
  };
  let clients: CliClients | undefined;
  const lazy = (): CliClients => {
    // The SDK warns about the Node.js version when it creates the first client: not on every command.
    if (clients === undefined) silenceSdkNodeVersionWarning();
    return (clients ??= {
      // SQS through the configured endpoint: deployed queue URLs name the regional host.
      sqs: new SQSClient({ ...base('SQS'), useQueueUrlAsEndpoint: false }),
      dynamodb: new DynamoDBClient(base('DYNAMODB')),
      // The SDK's own variable for this service is AWS_ENDPOINT_URL_DYNAMODB_STREAMS.
      streams: new DynamoDBStreamsClient(base('DYNAMODB_STREAMS')),
      ssm: new SSMClient(base('SSM')),
      lambda: new LambdaClient(base('LAMBDA')),
      cloudwatch: new CloudWatchClient(base('CLOUDWATCH')),
      cloudformation: new CloudFormationClient(base('CLOUDFORMATION')),
      // The SDK's own variable for this service is AWS_ENDPOINT_URL_CLOUDWATCH_LOGS.
      logs: new CloudWatchLogsClient(base('CLOUDWATCH_LOGS')),
      sns: new SNSClient(base('SNS')),
    });
  };
  const name = stackName(stage);
  return {
    stage,
    region,
    get config(): PipelineConfig {
      if (config !== undefined) return config;
      throw new CommandFailedError(
        `no pipeline config for stage "${stage}": ${configError?.message ?? 'not loaded'} (set ${PIPELINE_VARIABLE} to the app's declaration as JSON to operate without the stack)`,
        { cause: configError },
      );
    },
    async loadConfig(): Promise<void> {
      if (config !== undefined || configError !== undefined) return;
      try {
        config = await deployedPipelineConfig(lazy().cloudformation, name, stage, region);
      } catch (error) {
        configError = error instanceof Error ? error : new Error(String(error));
      }
    },
    stackName: name,
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
