/**
 * The local platform: the whole pipeline on one machine. It provisions the synthesized app into
 * moto with a real `cdk deploy`, then plays the Lambda service: a function host per deployed
 * function, the SQS and DynamoDB stream event source mappings as deployed, the Lambda control
 * plane that keeps their Enabled state, EventBridge's part for the flag reconciler, and the HTTP
 * API's routes; fake payment and messaging providers stand in for the real ones.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import { GetParametersByPathCommand, SSMClient } from '@aws-sdk/client-ssm';
import { AlarmEvaluator, type AlarmEvaluatorDeps } from './alarms/evaluator';
import type { AlarmNotification, NotificationFanOut } from './alarms/state';
import { confirmPendingSubscriptions, fanOut, type ConfirmedSubscription } from './alarm-delivery';
import { queueNameFromUrl } from '../adapters/aws/deployment';
import { readLocalDeployment, type LocalDeployment } from './deployment';
import { INJECTED_POINT_LINE } from '../adapters/crash';
import { startLocalEnv, type LocalEnv } from './env';
import { startFakeProvider, type FakeProvider } from './fake-provider';
import { FunctionHost, type InvokeResult } from './function-host';
import { startLocalHttpApi, type LocalHttpApi } from './http-api';
import { DEFAULT_ACCOUNT_CONCURRENCY, startLambdaControl, type LambdaControl } from './lambda-control';
import { LocalEnvError } from './errors';
import { provisionIntoEmulator, type Provisioned } from './provision';
import { localAppDirectory } from './project';
import { SqsEventSource } from './sqs-event-source';
import { StreamEventSource } from './stream-event-source';
import { IamAuthorizer, type LocalCredentials } from './iam/authorizer';
import { readDeployedPolicies } from './iam/deployed-policies';
import { iamUsageOf } from './iam/usage';
import { SOURCE_ARN_HEADER, startIamProxy, type IamProxy } from './iam/iam-proxy';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import type { ResolveContext } from './template';
import { pipelineFromTemplate, type PipelineConfig } from '../config';

/**
 * The switch that turns IAM enforcement off, for debugging only: `TENANG_IAM=off`. On by
 * default everywhere a local platform runs (npm start, drills, scenarios, chaos, tests).
 */
export const IAM_SWITCH_VARIABLE = 'TENANG_IAM';

/** Whether this process's local platforms enforce IAM. */
export function iamEnforced(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env[IAM_SWITCH_VARIABLE] ?? 'on').toLowerCase() !== 'off';
}

/**
 * The account's Lambda concurrency quota the platform answers GetAccountSettings with, e.g.
 * `TENANG_LOCAL_ACCOUNT_CONCURRENCY=10` to rehearse a new account's small quota with
 * `tenang preflight`. @default 1000, AWS's default quota
 */
export const ACCOUNT_CONCURRENCY_VARIABLE = 'TENANG_LOCAL_ACCOUNT_CONCURRENCY';

/** The quota TENANG_LOCAL_ACCOUNT_CONCURRENCY gives, or the default; a bad value is refused. */
export function accountConcurrencyFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[ACCOUNT_CONCURRENCY_VARIABLE]?.trim();
  if (raw === undefined || raw === '') return DEFAULT_ACCOUNT_CONCURRENCY;
  const quota = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(quota) || quota < 1)
    throw new LocalEnvError(
      `${ACCOUNT_CONCURRENCY_VARIABLE} must be a whole number of at least 1 (the account's Lambda concurrency quota), got '${raw}'.`,
    );
  return quota;
}

/** Where platforms leave the grants their requests used (read by `npm run iam-report`). */
export const IAM_USAGE_DIR_VARIABLE = 'TENANG_IAM_USAGE_DIR';

let usageFiles = 0;

/** Writes what this platform's requests used, one file per platform run. */
function writeIamUsage(iam: IamAuthorizer, projectRoot: string): void {
  const dir = process.env[IAM_USAGE_DIR_VARIABLE] ?? path.join(projectRoot, 'reports', 'iam');
  try {
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `usage-${process.pid}-${Date.now()}-${usageFiles++}.json`);
    fs.writeFileSync(file, JSON.stringify(iamUsageOf(iam)));
  } catch {
    // The report is an aid; a read-only checkout must not fail the platform's stop.
  }
}

/** The stack's context with what only the emulator knows (table stream ARNs) filled in. */
async function withEmulatorAttributes(
  ctx: ResolveContext,
  dynamodb: DynamoDBClient,
): Promise<ResolveContext> {
  const attributes = new Map(ctx.attributes ?? []);
  for (const r of ctx.resources.values()) {
    if (r.type !== 'AWS::DynamoDB::Table') continue;
    if (ctx.template.Resources[r.logicalId]?.Properties?.StreamSpecification === undefined) continue;
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: r.physicalId }));
    if (Table?.LatestStreamArn !== undefined)
      attributes.set(`${r.logicalId}.StreamArn`, Table.LatestStreamArn);
  }
  return { ...ctx, attributes };
}

/** Crash points armed on a function's next invocations. */
interface ArmedCrashes {
  readonly points: readonly string[];
  /** Invocations still to arm, or (untilReached) points still to be reached. */
  remaining: number;
  /** Count only the invocations that reached a point. */
  readonly untilReached?: boolean;
}

/** Options of LocalPlatform.start. */
export interface PlatformOptions {
  /** @default 'dev' */
  readonly stage?: string;
  readonly log: (line: string) => void;
  /** Every line a function writes (logs, EMF metrics). @default dropped */
  readonly onFunctionOutput?: (line: string, functionName: string) => void;
  /** The ids of the messages a queue mapping of `functionName` deleted (its jobs done), told after each delete. @default dropped */
  readonly onMessagesDeleted?: (functionName: string, messageIds: readonly string[]) => void;
  /** How often the flag reconciler runs without a flag change, ms (AWS: every minute). @default 10000 */
  readonly reconcileEveryMs?: number;
  /** The app to deploy (its cdk.json's directory). @default the nearest cdk.json at or above the working directory */
  readonly projectRoot?: string;
  /**
   * Alarm evaluation timing (short periods for scenarios; `now` a clock that runs faster than
   * real time, so an age objective of minutes is crossed in seconds). @default each alarm's own
   * period on the real clock, evaluated every second
   */
  readonly alarms?: Pick<
    AlarmEvaluatorDeps,
    'periodSeconds' | 'periodScale' | 'intervalMs' | 'publishMetrics' | 'now'
  >;
  /**
   * The account's Lambda concurrency quota (GetAccountSettings' ConcurrentExecutions).
   * @default TENANG_LOCAL_ACCOUNT_CONCURRENCY, else 1000
   */
  readonly accountConcurrency?: number;
  /**
   * Node.js options every function instance starts with: modules it preloads before the handler
   * (this repository's chaos harness preloads its SDK fault injection so). @default none
   */
  readonly functionExecArgv?: readonly string[];
}

/** Endpoint variables that point a function at the local stand-ins. */
const PROVIDER_VARIABLES = { payment: 'PAYMENT_PROVIDER_URL', messaging: 'MESSAGING_PROVIDER_URL' } as const;

/** A running local pipeline. */
export class LocalPlatform {
  private readonly crashes = new Map<string, ArmedCrashes>();
  private readonly instanceEnvironment = new Map<string, Readonly<Record<string, string>>>();
  private reconcilerSuspended = false;
  /** The flag reconciler's runs under way. */
  private readonly reconciling = new Set<Promise<InvokeResult>>();
  private readonly timers: NodeJS.Timeout[] = [];
  private lastFlags = '';

  private constructor(
    public readonly env: LocalEnv,
    public readonly provisioned: Provisioned,
    public readonly deployment: LocalDeployment,
    public readonly control: LambdaControl,
    public readonly hosts: ReadonlyMap<string, FunctionHost>,
    public readonly sqsSources: readonly SqsEventSource[],
    public readonly streamSources: readonly StreamEventSource[],
    public readonly api: LocalHttpApi,
    public readonly providers: {
      readonly payment: FakeProvider;
      readonly messaging: FakeProvider;
      /** A recording fake per other provider the job types declare, by its variable (`<NAME>_PROVIDER_URL`). */
      readonly declared: ReadonlyMap<string, FakeProvider>;
    },
    /** CloudWatch's part: metric alarm states in moto, composite alarms here. */
    public readonly alarms: AlarmEvaluator,
    private readonly clients: {
      readonly sqs: SQSClient;
      readonly ssm: SSMClient;
      readonly streams: DynamoDBStreamsClient;
      readonly cloudwatch: CloudWatchClient;
      readonly sns: SNSClient;
    },
    private readonly opts: PlatformOptions,
    /** IAM as the platform enforces it (undefined with TENANG_IAM=off): denials and used grants. */
    public readonly iam: IamAuthorizer | undefined,
    private readonly owned: {
      readonly proxy: IamProxy | undefined;
      readonly clients: readonly { destroy(): void }[];
      readonly projectRoot: string;
      /** What every function gets on top of its deployed environment: endpoints, providers, credentials. */
      readonly endpointEnv: Readonly<Record<string, string>>;
    },
  ) {}

  /** The directory of the app the platform deployed (its cdk.json's). */
  public get projectRoot(): string {
    return this.owned.projectRoot;
  }

  /** The pipeline config the stack was deployed with (its template's metadata). */
  public get config(): PipelineConfig {
    return (this.deployedConfig ??= pipelineFromTemplate(
      this.provisioned.context.template,
      `stack ${this.provisioned.stackName}`,
    ));
  }

  private deployedConfig: PipelineConfig | undefined;

  /** Brings everything up; stop() undoes it. */
  public static async start(opts: PlatformOptions): Promise<LocalPlatform> {
    const projectRoot = opts.projectRoot ?? localAppDirectory();
    const stage = opts.stage ?? 'dev';
    // Read first: a bad value is refused before anything is started.
    const accountConcurrency = opts.accountConcurrency ?? accountConcurrencyFromEnv();
    const env = await startLocalEnv({ log: opts.log, projectRoot });
    Object.assign(process.env, env.env);
    const started: { close(): Promise<void> }[] = [];
    try {
      const provisioned = await provisionIntoEmulator({ projectRoot, env: env.env, stage, log: opts.log });
      const config = { endpoint: env.endpoint, region: env.region };
      const lambda = new LambdaClient(config);
      const sqs = new SQSClient(config);
      const dynamodb = new DynamoDBClient(config);
      const deployment = await readLocalDeployment(
        { lambda, sqs, dynamodb },
        provisioned.assemblyDir,
        provisioned.context,
      );
      const iam = iamEnforced()
        ? new IamAuthorizer(readDeployedPolicies(await withEmulatorAttributes(provisioned.context, dynamodb)))
        : undefined;
      lambda.destroy();
      dynamodb.destroy();

      // Created so the platform's stop() can close it even if a later step fails. Bound late: the
      // control plane's Invoke (e.g. `tenang dlq replay`) reaches the function hosts made below.
      let platform: LocalPlatform | undefined = undefined;
      const control = await startLambdaControl({
        upstream: env.endpoint,
        accountConcurrency,
        invoke: (fn, payload) => {
          if (platform === undefined) return Promise.reject(new Error('platform not started'));
          return platform.hosts.has(fn) ? platform.invoke(fn, payload) : Promise.resolve(undefined);
        },
        busy: (uuid) =>
          [...(platform?.sqsSources ?? []), ...(platform?.streamSources ?? [])].some(
            (s) => s.spec.uuid === uuid && s.busy,
          ),
      });
      started.push(control);
      if (accountConcurrency !== DEFAULT_ACCOUNT_CONCURRENCY)
        opts.log(`Lambda account concurrency quota: ${accountConcurrency} (GetAccountSettings)`);
      // IAM: every request a function makes, and the Lambda service's own on its behalf, goes
      // through the proxy with its execution role's credentials.
      const proxy: IamProxy | undefined =
        iam === undefined
          ? undefined
          : await startIamProxy({
              upstream: env.endpoint,
              lambdaUpstream: control.url,
              authorizer: iam,
              log: opts.log,
            });
      if (proxy !== undefined) started.push(proxy);
      if (iam === undefined) opts.log(`IAM is not enforced (${IAM_SWITCH_VARIABLE}=off)`);
      // One set of role credentials per function: its instances and the pollers acting for it share them.
      const credentialsByFunction = new Map<string, LocalCredentials>();
      if (iam !== undefined)
        for (const fn of deployment.functions.values())
          credentialsByFunction.set(fn.name, iam.credentialsForRole(fn.roleArn, fn.name));
      const roleCredentials = (fn: string): LocalCredentials | undefined => credentialsByFunction.get(fn);
      /** An SDK client config acting as `fn`'s execution role (the Lambda service's own requests). */
      const asRole = (fn: string): { endpoint: string; region: string; credentials?: LocalCredentials } => {
        const credentials = roleCredentials(fn);
        return credentials === undefined || proxy === undefined
          ? config
          : { endpoint: proxy.url, region: env.region, credentials };
      };
      const roleClients: { destroy(): void }[] = [];
      const roleClient = <C extends { destroy(): void }>(client: C): C => {
        roleClients.push(client);
        return client;
      };
      const payment = await startFakeProvider({ kind: 'charges' });
      started.push(payment);
      const messaging = await startFakeProvider({ kind: 'messages' });
      started.push(messaging);
      // Lambda hands every function credentials through its environment; so does the local host.
      const credentials = {
        AWS_ACCESS_KEY_ID: env.env.AWS_ACCESS_KEY_ID ?? process.env.AWS_ACCESS_KEY_ID ?? 'testing',
        AWS_SECRET_ACCESS_KEY:
          env.env.AWS_SECRET_ACCESS_KEY ?? process.env.AWS_SECRET_ACCESS_KEY ?? 'testing',
      };
      // Every other provider a job type declares (its <NAME>_PROVIDER_URL) gets a recording fake.
      const declaredProviders = new Map<string, FakeProvider>();
      for (const fn of deployment.functions.values())
        for (const variable of Object.keys(fn.environment))
          if (
            variable.endsWith('_PROVIDER_URL') &&
            !Object.values<string>(PROVIDER_VARIABLES).includes(variable) &&
            !declaredProviders.has(variable)
          ) {
            const fake = await startFakeProvider({ kind: 'records' });
            started.push(fake);
            declaredProviders.set(variable, fake);
          }
      const endpointEnv: Record<string, string> = {
        ...credentials,
        ...env.env,
        AWS_ENDPOINT_URL_LAMBDA: control.url,
        [PROVIDER_VARIABLES.payment]: payment.url,
        [PROVIDER_VARIABLES.messaging]: messaging.url,
        ...Object.fromEntries([...declaredProviders].map(([variable, fake]) => [variable, fake.url])),
      };
      const cloudwatch = new CloudWatchClient(config);
      // CloudWatch's alarm actions: published to the SNS topic as the service principal
      // cloudwatch.amazonaws.com on behalf of the alarm (aws:SourceArn), checked by the proxy.
      const sns = roleClient(
        new SNSClient(
          iam === undefined || proxy === undefined
            ? config
            : {
                endpoint: proxy.url,
                region: env.region,
                credentials: iam.credentialsForService('cloudwatch.amazonaws.com'),
              },
        ),
      );
      // SNS's own view of the topic (who is subscribed), read after each publish.
      const snsAdmin = roleClient(new SNSClient(config));
      const { accountId, region } = provisioned.context;
      const notify = async (n: AlarmNotification): Promise<NotificationFanOut> => {
        const alarmArn = n.alarmArn ?? `arn:aws:cloudwatch:${region}:${accountId}:alarm:${n.alarm}`;
        const publish = new PublishCommand({
          TopicArn: n.target,
          Subject: `${n.state}: "${n.alarm}" in ${region}`.slice(0, 100),
          Message: JSON.stringify({
            AlarmName: n.alarm,
            AlarmArn: alarmArn,
            NewStateValue: n.state,
            NewStateReason: n.reason,
            StateChangeTime: n.at.toISOString(),
            Region: region,
            AWSAccountId: accountId,
          }),
        });
        publish.middlewareStack.add(
          (next) => (args) => {
            (args.request as { headers: Record<string, string> }).headers[SOURCE_ARN_HEADER] = alarmArn;
            return next(args);
          },
          { step: 'build', name: 'tenangSourceArn' },
        );
        await sns.send(publish);
        return fanOut(snsAdmin, {
          topicArn: n.target,
          subject: publish.input.Subject ?? '',
          message: publish.input.Message ?? '',
        });
      };
      const alarms = new AlarmEvaluator({
        ...opts.alarms,
        notify,
        cloudwatch,
        sqs,
        compositeAlarms: provisioned.alarms.compositeAlarms,
        alarmNamePrefix: `tenang-${stage}-`,
        deletedMessages: (queueName) =>
          platform?.sqsSources
            .filter((s) => queueNameFromUrl(s.spec.queueUrl) === queueName)
            .reduce((n, s) => n + s.stats.deleted, 0),
        iteratorAgeMs: (fn) =>
          platform?.streamSources.find((s) => s.spec.functionName === fn)?.stats.iteratorAgeMs,
        log: (line) => opts.log(`alarms: ${line}`),
      });
      const userOutput = opts.onFunctionOutput ?? ((): void => undefined);
      const output = (line: string, fn: string): void => {
        if (INJECTED_POINT_LINE.test(line)) platform?.pointReached(fn);
        alarms.recordOutput(line, fn);
        userOutput(line, fn);
      };
      const hosts = new Map<string, FunctionHost>();
      for (const fn of deployment.functions.values()) {
        // Lambda hands each function its role's session credentials through its environment.
        const credentials = roleCredentials(fn.name);
        const functionEnv =
          credentials === undefined || proxy === undefined
            ? endpointEnv
            : {
                ...endpointEnv,
                AWS_ENDPOINT_URL: proxy.url,
                AWS_ENDPOINT_URL_LAMBDA: proxy.url,
                AWS_ACCESS_KEY_ID: credentials.accessKeyId,
                AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
              };
        hosts.set(fn.name, new FunctionHost(fn, functionEnv, output, opts.functionExecArgv));
      }

      const invoke = (fn: string, event: unknown): Promise<InvokeResult> => {
        if (platform === undefined) throw new Error('platform not started');
        return platform.invoke(fn, event);
      };
      const streams = new DynamoDBStreamsClient(config);
      const sqsSources = deployment.sqsMappings.map(
        (m) =>
          new SqsEventSource(
            m,
            iam === undefined ? sqs : roleClient(new SQSClient(asRole(m.functionName))),
            {
              isEnabled: () => control.isEnabled(m.uuid),
              invoke: (e) => invoke(m.functionName, e),
              onDeleted: (ids) => opts.onMessagesDeleted?.(m.functionName, ids),
            },
            opts.log,
          ),
      );
      const streamSources = deployment.streamMappings.map(
        (m) =>
          new StreamEventSource(
            m,
            iam === undefined ? streams : roleClient(new DynamoDBStreamsClient(asRole(m.functionName))),
            iam === undefined ? sqs : roleClient(new SQSClient(asRole(m.functionName))),
            { isEnabled: () => control.isEnabled(m.uuid), invoke: (e) => invoke(m.functionName, e) },
            opts.log,
          ),
      );
      const api = await startLocalHttpApi(deployment.routes, (fn, e) => invoke(fn, e));
      platform = new LocalPlatform(
        env,
        provisioned,
        deployment,
        control,
        hosts,
        sqsSources,
        streamSources,
        api,
        { payment, messaging, declared: declaredProviders },
        alarms,
        { sqs, ssm: new SSMClient(config), streams, cloudwatch, sns: snsAdmin },
        opts,
        iam,
        { proxy, clients: roleClients, projectRoot, endpointEnv },
      );
      await platform.reconcile('start');
      for (const s of sqsSources) s.start();
      for (const s of streamSources) await s.start();
      platform.playEventBridge(stage, opts.reconcileEveryMs ?? 10_000);
      alarms.start();
      opts.log(
        `local pipeline running: ${hosts.size} functions, ${sqsSources.length} queue and ${streamSources.length} stream mappings, HTTP API at ${api.url}`,
      );
      return platform;
    } catch (error) {
      for (const s of started.reverse()) await s.close().catch(() => undefined);
      await env.stop();
      throw error;
    }
  }

  /**
   * Confirms the pending SNS subscriptions (e-mail, HTTP/S) as their owners would by following
   * the confirmation link: AWS, and this platform, deliver nothing to them until then. `which`
   * picks them (default: all); returns those confirmed.
   */
  public confirmSubscriptions(
    which?: (s: { topicArn: string; protocol: string; endpoint: string }) => boolean,
  ): Promise<ConfirmedSubscription[]> {
    return confirmPendingSubscriptions(this.env.endpoint, this.clients.sns, which);
  }

  /** Invocations served per function since the start (pollers, Invoke, the platform's own). */
  private readonly invocationCounts = new Map<string, number>();

  /** How many invocations of `functionName` were started (e.g. a drill proves the CLI invoked it). */
  public invocationCount(functionName: string): number {
    return this.invocationCounts.get(functionName) ?? 0;
  }

  /** Invokes a function once, as the Lambda service would. */
  public async invoke(functionName: string, event: unknown): Promise<InvokeResult> {
    const host = this.hosts.get(functionName);
    if (host === undefined) throw new Error(`no deployed function ${functionName}`);
    this.invocationCounts.set(functionName, this.invocationCount(functionName) + 1);
    const armed = this.crashes.get(functionName);
    // An arming is deleted when its count is spent, so one found here still has some left.
    const crashPoints = armed?.points;
    if (armed !== undefined && armed.untilReached !== true) {
      armed.remaining -= 1;
      if (armed.remaining <= 0) this.crashes.delete(functionName);
    }
    const result = await host.invoke(event, {
      crashPoints,
      environment: this.instanceEnvironment.get(functionName),
    });
    this.alarms.recordInvocation(functionName, result);
    return result;
  }

  /**
   * A function host of its own that runs another bundle as `functionName` is deployed: its
   * timeout, memory and environment (`variant.environment` on top), with the platform's endpoints
   * and providers; for comparing handlers in the same host (bench/handler-time.ts). Its requests go
   * to the emulator directly with the platform's own credentials, not through the IAM proxy, which
   * would hold the other bundle to a role granted for the deployed one. Invocations through it
   * are not the platform's: no mapping, alarm or invocation count sees them. The caller stops it.
   */
  public functionHostLike(
    functionName: string,
    variant: {
      /** The host's function name (AWS_LAMBDA_FUNCTION_NAME). */
      readonly name: string;
      readonly bundleFile: string;
      /** @default 'handler' */
      readonly handlerName?: string;
      /** @default none */
      readonly environment?: Readonly<Record<string, string>>;
    },
    opts: {
      /** @default dropped */
      readonly onOutput?: (line: string, functionName: string) => void;
      /** Node.js options of its instances. @default none */
      readonly execArgv?: readonly string[];
    } = {},
  ): FunctionHost {
    const deployed = this.hosts.get(functionName);
    if (deployed === undefined) throw new Error(`no deployed function ${functionName}`);
    return new FunctionHost(
      {
        ...deployed.spec,
        name: variant.name,
        bundleFile: variant.bundleFile,
        handlerName: variant.handlerName ?? 'handler',
        environment: { ...deployed.spec.environment, ...variant.environment },
      },
      this.owned.endpointEnv,
      opts.onOutput,
      opts.execArgv,
    );
  }

  /** The next invocation of `functionName` crashes at `points` (its process is killed there). */
  public crashNextInvocation(functionName: string, points: readonly string[]): void {
    this.crashInvocations(functionName, points, 1);
  }

  /** An invocation of `functionName` printed that it reached an armed point: an until-reached arming counts it. */
  private pointReached(functionName: string): void {
    const armed = this.crashes.get(functionName);
    if (armed?.untilReached !== true) return;
    armed.remaining -= 1;
    if (armed.remaining <= 0) this.crashes.delete(functionName);
  }

  /**
   * The next `count` invocations of `functionName` crash at `points`; `count` 0 disarms. With
   * `untilReached`, every invocation is armed until `count` of them reached a point (counted when
   * the function prints "injected crash/hang at", before it dies or hangs): one that never gets
   * there (a duplicate, a retry failing earlier) does not use up the arming. Invocations already
   * running when the count is reached keep their arming.
   */
  public crashInvocations(
    functionName: string,
    points: readonly string[],
    count: number,
    opts: { readonly untilReached?: boolean } = {},
  ): void {
    if (count <= 0) this.crashes.delete(functionName);
    else this.crashes.set(functionName, { points, remaining: count, untilReached: opts.untilReached });
  }

  /**
   * `functionName`'s role loses its grant of `action` (e.g. `dynamodb:PutItem`) on the table
   * `tableName` of this deployment, as a deploy that dropped it would leave it: the platform's
   * IAM enforcement denies those requests with AWS's AccessDeniedException from now on, until
   * restoreGrants. Needs IAM enforced (it is by default); refused otherwise.
   */
  public withholdTableGrant(functionName: string, action: string, tableName: string): void {
    const host = this.hosts.get(functionName);
    if (host === undefined) throw new Error(`no deployed function ${functionName}`);
    if (this.iam === undefined)
      throw new Error(
        `cannot withhold ${action} from ${functionName}: IAM is not enforced on this platform (${IAM_SWITCH_VARIABLE}=off)`,
      );
    const { accountId, region } = this.iam.policies;
    this.iam.withhold(
      this.roleArnOf(functionName),
      action,
      `arn:aws:dynamodb:${region}:${accountId}:table/${tableName}`,
    );
  }

  private roleArnOf(functionName: string): string {
    const roleArn = this.deployment.functions.get(functionName)?.roleArn;
    if (roleArn === undefined || roleArn === '')
      throw new Error(`deployed function ${functionName} has no role`);
    return roleArn;
  }

  /** Every grant withheld from `functionName`'s role is back (the fixed deploy). */
  public restoreGrants(functionName: string): void {
    const host = this.hosts.get(functionName);
    if (host === undefined) throw new Error(`no deployed function ${functionName}`);
    if (this.iam !== undefined) this.iam.restoreGrants(this.roleArnOf(functionName));
  }

  /**
   * Every later instance of `functionName` gets `variables` on top of its deployed environment
   * (the platform's time compression, e.g. TENANG_PERMISSION_HOLD_BASE_SECONDS for drills); an
   * empty object lifts them. Instances started before keep theirs but are no longer chosen.
   */
  public setInstanceEnvironment(functionName: string, variables: Readonly<Record<string, string>>): void {
    if (Object.keys(variables).length === 0) this.instanceEnvironment.delete(functionName);
    else this.instanceEnvironment.set(functionName, variables);
  }

  /**
   * Stops (or restarts) EventBridge's part: while suspended, neither a flag change nor the
   * schedule runs the flag reconciler — a disabled rule or a broken reconciler, for drills.
   * Suspending resolves once a run already under way has ended: that run still reads the flags,
   * so it would enforce a flag the caller writes next.
   */
  public async suspendReconciler(suspended: boolean): Promise<void> {
    this.reconcilerSuspended = suspended;
    if (suspended) await Promise.allSettled([...this.reconciling]);
  }

  /** The deployed function whose name ends with `-<logical>`, e.g. `payment-consumer`. */
  public functionNamed(suffix: string): string {
    const found = [...this.hosts.keys()].find((n) => n.endsWith(`-${suffix}`));
    if (found === undefined) throw new Error(`no deployed function named *-${suffix}`);
    return found;
  }

  /** Runs the flag reconciler now (what EventBridge does on a flag change). */
  public async reconcile(reason: string): Promise<InvokeResult | undefined> {
    if (this.reconcilerSuspended) return undefined;
    const fn = this.functionNamed('flag-reconciler');
    const run = this.invoke(fn, {
      version: '0',
      id: `local-${Date.now()}`,
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: this.provisioned.context.accountId,
      time: new Date().toISOString(),
      region: this.provisioned.context.region,
      resources: [],
      detail: { reason },
    });
    this.reconciling.add(run);
    let result: InvokeResult;
    try {
      result = await run;
    } finally {
      this.reconciling.delete(run);
    }
    if (result.status !== 'ok') this.opts.log(`flag reconciler: ${result.status}: ${result.errorMessage}`);
    return result;
  }

  /** Plays EventBridge: reconcile when a flag changes (polled) and on a schedule. */
  private playEventBridge(stage: string, everyMs: number): void {
    const flagsPath = `/tenang/${stage}/flags/`;
    const poll = setInterval(() => {
      void this.clients.ssm
        .send(new GetParametersByPathCommand({ Path: flagsPath, Recursive: true }))
        .then(async ({ Parameters = [] }) => {
          const snapshot = JSON.stringify(Parameters.map((p) => [p.Name, p.Version]));
          if (snapshot !== this.lastFlags) {
            const first = this.lastFlags === '';
            this.lastFlags = snapshot;
            if (!first) await this.reconcile('flag changed');
          }
        })
        .catch((error: unknown) => this.opts.log(`flag watch: ${String(error)}`));
    }, 1_000);
    const schedule = setInterval(() => void this.reconcile('schedule'), everyMs);
    this.timers.push(poll, schedule);
  }

  /** A CloudWatch client for the emulator. */
  public cloudwatch(): CloudWatchClient {
    return new CloudWatchClient({ endpoint: this.env.endpoint, region: this.env.region });
  }

  /** Stops every mapping, function, server and emulator this platform started. */
  public async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.alarms.stop();
    await Promise.all([...this.sqsSources, ...this.streamSources].map((s) => s.stop()));
    await Promise.all([...this.hosts.values()].map((h) => h.stop()));
    await this.api.close();
    await this.owned.proxy?.close();
    for (const c of this.owned.clients) c.destroy();
    if (this.iam !== undefined) writeIamUsage(this.iam, this.owned.projectRoot);
    await this.control.close();
    await this.providers.payment.close();
    await this.providers.messaging.close();
    for (const fake of this.providers.declared.values()) await fake.close();
    for (const c of Object.values(this.clients)) c.destroy();
    await this.env.stop();
  }
}
