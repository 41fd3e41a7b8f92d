/**
 * Provisions the pipeline into the emulator with a real `cdk synth` + `cdk bootstrap` +
 * `cdk deploy`: what runs locally is what would be deployed. The only difference is the
 * `tenang:target=emulator` context switch (see lib/infra/target.ts).
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { listStackResources, type DeployedResource } from '../adapters/aws/deployment';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SNSClient } from '@aws-sdk/client-sns';
import { provisionAlarms, type ProvisionedAlarms } from './alarm-provisioner';
import { provisionSubscriptions } from './subscription-provisioner';
import { provisionTimeToLive } from './ttl-provisioner';
import { readTemplate, type ResolveContext } from './template';
import { stackName } from '../infra/app';
import { ALARM_EMAIL_CONTEXT_KEY, STAGE_CONTEXT_KEY, TARGET_CONTEXT_KEY } from '../infra/target';
import { synthCacheEnabled, synthKey, withSynthCache } from './synth-cache';
import { LOCAL_ALARM_EMAIL } from './names';
import { cdkCommand } from './project';

/** Raised when a cdk step fails; carries the tail of its output. */
export class ProvisionError extends Error {
  public constructor(
    message: string,
    public readonly outputTail: string,
  ) {
    super(`${message}\n${outputTail}`);
    this.name = 'ProvisionError';
  }
}

/** Options of provisionIntoEmulator. */
export interface ProvisionOptions {
  /** The app's directory (where its cdk.json is): the assembly and synth cache go to its .tenang/. */
  readonly projectRoot: string;
  /** Environment for the cdk CLI: endpoint, region, credentials. */
  readonly env: Readonly<Record<string, string>>;
  /** @default 'dev' */
  readonly stage?: string;
  /** Progress lines. @default no output */
  readonly log?: (line: string) => void;
}

/** What was provisioned. */
export interface Provisioned {
  readonly stackName: string;
  /** The emulator-target cloud assembly (bundled function assets live here). */
  readonly assemblyDir: string;
  /** How the template's references resolve in this deployment. */
  readonly context: ResolveContext;
  readonly alarms: ProvisionedAlarms;
}

/** moto's account; used when no deployed ARN names another. */
const EMULATOR_ACCOUNT = '123456789012';

/** Builds the reference-resolution context of a deployed stack. */
export async function deploymentContext(
  cfn: CloudFormationClient,
  assemblyDir: string,
  stackName: string,
  region: string,
): Promise<ResolveContext> {
  const deployed = await listStackResources(cfn, stackName);
  const resources = new Map<string, DeployedResource>(deployed.map((r) => [r.logicalId, r]));
  const anArn = deployed.map((r) => r.physicalId).find((id) => id.startsWith('arn:aws:'));
  return {
    region,
    accountId: anArn?.split(':')[4] || EMULATOR_ACCOUNT,
    template: readTemplate(assemblyDir, stackName),
    resources,
  };
}

const OUTPUT_TAIL_LINES = 40;

function runCdk(projectRoot: string, args: string[], env: Readonly<Record<string, string>>): Promise<string> {
  // The app's cdk, else tenang's; neither is a LocalEnvError naming the install command.
  const cdkBin = cdkCommand(projectRoot);
  return new Promise((resolve, reject) => {
    const child = spawn(cdkBin, [...args, '--no-notices'], {
      cwd: projectRoot,
      env: { ...process.env, ...env, CDK_DISABLE_CLI_TELEMETRY: 'true', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', (err) => reject(new ProvisionError(`cannot run ${cdkBin}: ${err.message}`, '')));
    child.on('close', (code) => {
      if (code === 0) resolve(output);
      else {
        const tail = output.trimEnd().split('\n').slice(-OUTPUT_TAIL_LINES).join('\n');
        reject(new ProvisionError(`cdk ${args[0] ?? ''} failed with exit code ${String(code)}`, tail));
      }
    });
  });
}

export { LOCAL_ALARM_EMAIL } from './names';

/** Synthesizes for the emulator, bootstraps its environment and deploys; re-running changes nothing. */
export async function provisionIntoEmulator(opts: ProvisionOptions): Promise<Provisioned> {
  const log = opts.log ?? ((): void => undefined);
  const stage = opts.stage ?? 'dev';
  // One assembly per emulator: platforms on different emulators (parallel tests) never share
  // a cdk output directory, which the cdk CLI locks.
  const emulatorPort = new URL(opts.env.AWS_ENDPOINT_URL ?? 'http://localhost:0').port || 'default';
  const assemblyDir = path.join(opts.projectRoot, '.tenang', `cdk.out-${stage}-${emulatorPort}`);
  const context = [
    '-c',
    `${TARGET_CONTEXT_KEY}=emulator`,
    '-c',
    `${STAGE_CONTEXT_KEY}=${stage}`,
    '-c',
    `${ALARM_EMAIL_CONTEXT_KEY}=${LOCAL_ALARM_EMAIL}`,
  ];

  const synth = (outputDir: string): Promise<string> =>
    runCdk(opts.projectRoot, ['synth', ...context, '--output', outputDir, '--quiet'], opts.env);
  if (synthCacheEnabled(opts.env) && synthCacheEnabled()) {
    const key = synthKey(opts.projectRoot, context, { ...process.env, ...opts.env });
    log(
      "synthesizing the app for the emulator (cdk-nag AwsSolutions + Serverless), or reusing the same sources' assembly…",
    );
    const found = await withSynthCache(
      opts.projectRoot,
      key,
      assemblyDir,
      async (dir) => void (await synth(dir)),
    );
    log(
      found === 'hit'
        ? `reused the assembly synthesized from the same sources (.tenang/synth-cache/${key})`
        : 'synthesized',
    );
  } else {
    log('synthesizing the app for the emulator (cdk-nag AwsSolutions + Serverless)…');
    await synth(assemblyDir);
  }
  log('bootstrapping the emulator environment…');
  await runCdk(opts.projectRoot, ['bootstrap', '--app', assemblyDir], opts.env);
  log(`deploying stack ${stackName(stage)} into the emulator…`);
  // Direct UpdateStack: moto's change sets fail on updates of an existing stack.
  await runCdk(
    opts.projectRoot,
    ['deploy', '--app', assemblyDir, '--require-approval', 'never', '--method', 'direct'],
    opts.env,
  );

  const clientConfig = { endpoint: opts.env.AWS_ENDPOINT_URL, region: opts.env.AWS_REGION };
  const cfn = new CloudFormationClient(clientConfig);
  const cloudwatch = new CloudWatchClient(clientConfig);
  try {
    const context = await deploymentContext(
      cfn,
      assemblyDir,
      stackName(stage),
      opts.env.AWS_REGION ?? 'us-east-1',
    );
    log("creating the alarms (the emulator's CloudFormation skips them)…");
    const alarms = await provisionAlarms(cloudwatch, context);
    log("subscribing the topics' subscribers (the emulator's CloudFormation skips them)…");
    const sns = new SNSClient(clientConfig);
    try {
      await provisionSubscriptions(sns, context);
    } finally {
      sns.destroy();
    }
    log("turning on the tables' time to live (the emulator's CloudFormation skips it)…");
    const dynamodb = new DynamoDBClient(clientConfig);
    try {
      await provisionTimeToLive(dynamodb, context);
    } finally {
      dynamodb.destroy();
    }
    return { stackName: stackName(stage), assemblyDir, context, alarms };
  } finally {
    cfn.destroy();
    cloudwatch.destroy();
  }
}
