/**
 * The flag reconciler against moto: real SSM parameters and real (disabled-at-start) SQS event
 * source mappings. No message is ever sent to the queues: an enabled mapping in moto consumes
 * its queue by itself.
 */
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import {
  CreateEventSourceMappingCommand,
  DeleteEventSourceMappingCommand,
  GetEventSourceMappingCommand,
  LambdaClient,
} from '@aws-sdk/client-lambda';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DeleteParametersCommand, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { ScheduledEvent } from 'aws-lambda';
import type * as ReconcilerModule from '../../lambdas/flag-reconciler';
import { LambdaMappingControl } from '../../lib/adapters/aws/lambda-mappings';
import { SsmFlagReader } from '../../lib/adapters/aws/ssm-flags';
import { pauseFlagName } from '../../lib/config/derive';
import type { ConsumerReconciliation } from '../../lib/core/reconcile';
import { sqsClient, uniqueName } from '../helpers/aws';
import { createMotoFunction, type MotoFunction } from '../helpers/moto-lambda';

jest.setTimeout(30_000);

const PAUSED = JSON.stringify({ paused: true, reason: 'integration test', setBy: 'jest' });
const NOT_PAUSED = JSON.stringify({ paused: false });
const CONSUMERS = ['payment-consumer', 'notification-consumer'] as const;
type Consumer = (typeof CONSUMERS)[number];

const scheduledEvent: ScheduledEvent = {
  version: '0',
  id: 'integration',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: new Date().toISOString(),
  region: 'us-east-1',
  resources: [],
  detail: {},
};

/** Client settings for the emulator named by AWS_ENDPOINT_URL (set by the integration globalSetup). */
function emulatorConfig(): { endpoint: string; region: string } {
  const endpoint = process.env.AWS_ENDPOINT_URL;
  const region = process.env.AWS_REGION;
  if (endpoint === undefined || region === undefined) {
    throw new Error('AWS_ENDPOINT_URL and AWS_REGION must be set: run through the jest integration project.');
  }
  return { endpoint, region };
}

/** Runs `action` with `env` merged into process.env, then restores process.env. */
async function withEnv<T>(env: Record<string, string>, action: () => Promise<T>): Promise<T> {
  const saved = { ...process.env };
  try {
    Object.assign(process.env, env);
    return await action();
  } finally {
    process.env = saved;
  }
}

/** Runs the handler once and returns its outcomes and the EMF documents it printed (kept out of the test output). */
async function reconcileOnce(
  handler: ReturnType<typeof ReconcilerModule.createHandler>,
): Promise<{ outcomes: ConsumerReconciliation[]; emf: Record<string, unknown>[] }> {
  const lines: string[] = [];
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(
      ...chunk
        .toString()
        .split('\n')
        .filter((l) => l.trim().length > 0),
    );
    return true;
  });
  try {
    const outcomes = await handler(scheduledEvent);
    const docs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    return { outcomes, emf: docs.filter((d) => '_aws' in d) };
  } finally {
    write.mockRestore();
  }
}

describe('Function: flag-reconciler handler (moto)', () => {
  const stage = uniqueName('fr');
  const functionName = uniqueName('fr-fn');
  const stackName = uniqueName('fr-role');
  let sqs: SQSClient;
  let ssm: SSMClient;
  let lambda: LambdaClient;
  let cfn: CloudFormationClient;
  let handler: ReturnType<typeof ReconcilerModule.createHandler>;
  const queueUrls: string[] = [];
  const mappingIds = new Map<Consumer, string>();
  let motoFunction: MotoFunction | undefined;

  const flagOf = (consumer: Consumer): string => pauseFlagName(stage, consumer);
  const mappingOf = (consumer: Consumer): string => {
    const id = mappingIds.get(consumer);
    if (id === undefined) throw new Error(`no mapping for ${consumer}: beforeAll failed`);
    return id;
  };
  const setFlag = (consumer: Consumer, value: string) =>
    ssm.send(
      new PutParameterCommand({ Name: flagOf(consumer), Value: value, Type: 'String', Overwrite: true }),
    );
  const stateOf = async (consumer: Consumer): Promise<string | undefined> =>
    (await lambda.send(new GetEventSourceMappingCommand({ UUID: mappingOf(consumer) }))).State;

  beforeAll(async () => {
    const config = emulatorConfig();
    sqs = sqsClient();
    ssm = new SSMClient(config);
    lambda = new LambdaClient(config);
    cfn = new CloudFormationClient(config);

    motoFunction = await createMotoFunction(cfn, lambda, functionName, stackName);

    for (const consumer of CONSUMERS) {
      const { QueueUrl } = await sqs.send(
        new CreateQueueCommand({ QueueName: uniqueName(`fr-${consumer}`) }),
      );
      if (QueueUrl === undefined) throw new Error('CreateQueue returned no QueueUrl');
      queueUrls.push(QueueUrl);
      const attributes = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
      );
      const mapping = await lambda.send(
        new CreateEventSourceMappingCommand({
          FunctionName: functionName,
          EventSourceArn: attributes.Attributes?.QueueArn,
          BatchSize: 1,
          // Created disabled: an enabled mapping in moto consumes its queue by itself.
          Enabled: false,
        }),
      );
      if (mapping.UUID === undefined) throw new Error('CreateEventSourceMapping returned no UUID');
      mappingIds.set(consumer, mapping.UUID);
    }

    // The module parses its environment when loaded: load it once the mapping UUIDs exist.
    const env = {
      TENANG_STAGE: stage,
      TENANG_MAPPINGS: JSON.stringify(Object.fromEntries(mappingIds)),
    };
    const reconciler = await withEnv(env, () => import('../../lambdas/flag-reconciler'));
    handler = reconciler.createHandler({
      config: reconciler.parseReconcilerEnv(env),
      flags: new SsmFlagReader(ssm),
      mappings: new LambdaMappingControl(lambda),
      logger: new Logger({ serviceName: reconciler.SERVICE_NAME, logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'tenang', serviceName: reconciler.SERVICE_NAME }),
    });
  });

  afterAll(async () => {
    if (lambda === undefined) return; // beforeAll failed before creating anything
    for (const uuid of mappingIds.values()) {
      await lambda.send(new DeleteEventSourceMappingCommand({ UUID: uuid }));
    }
    for (const url of queueUrls) await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    await ssm.send(new DeleteParametersCommand({ Names: CONSUMERS.map(flagOf) }));
    await motoFunction?.delete();
    for (const client of [sqs, ssm, lambda, cfn]) client.destroy();
  });

  it('when both mappings start disabled and only one consumer is paused, it enables the other one', async () => {
    // Prepare
    await setFlag('payment-consumer', PAUSED);
    await setFlag('notification-consumer', NOT_PAUSED);
    expect(await stateOf('payment-consumer')).toBe('Disabled');
    expect(await stateOf('notification-consumer')).toBe('Disabled');

    // Act
    const { outcomes, emf } = await reconcileOnce(handler);

    // Assess
    expect(await stateOf('payment-consumer')).toBe('Disabled');
    expect(await stateOf('notification-consumer')).toBe('Enabled');
    expect(outcomes.map((o) => [o.consumer, o.paused, o.changed])).toEqual([
      ['payment-consumer', true, false],
      ['notification-consumer', false, true],
    ]);
    expect(emf.map((d) => [d.consumer, d.Paused])).toEqual([
      ['payment-consumer', 1],
      ['notification-consumer', 0],
    ]);
  });

  it('when a running consumer is paused, it disables its mapping', async () => {
    // Prepare
    await setFlag('notification-consumer', NOT_PAUSED);
    await reconcileOnce(handler);
    expect(await stateOf('notification-consumer')).toBe('Enabled');

    // Act
    await setFlag('notification-consumer', PAUSED);
    const { outcomes } = await reconcileOnce(handler);

    // Assess
    expect(await stateOf('notification-consumer')).toBe('Disabled');
    expect(outcomes.find((o) => o.consumer === 'notification-consumer')).toMatchObject({
      paused: true,
      reason: 'integration test',
      changed: true,
      stateAfter: 'Disabled',
    });
  });

  it('when a paused consumer is resumed, it enables its mapping', async () => {
    // Prepare
    await setFlag('payment-consumer', PAUSED);
    await reconcileOnce(handler);
    expect(await stateOf('payment-consumer')).toBe('Disabled');

    // Act
    await setFlag('payment-consumer', NOT_PAUSED);
    await reconcileOnce(handler);

    // Assess
    expect(await stateOf('payment-consumer')).toBe('Enabled');
  });

  it('when nothing changed since the last run, it sends no update', async () => {
    // Prepare
    await reconcileOnce(handler);

    // Act
    const { outcomes } = await reconcileOnce(handler);

    // Assess
    expect(outcomes.map((o) => o.changed)).toEqual([false, false]);
  });

  it('when a flag holds an invalid value, it keeps the consumer running and reports the flag invalid', async () => {
    // Prepare
    await setFlag('payment-consumer', PAUSED);
    await reconcileOnce(handler);

    // Act
    await setFlag('payment-consumer', 'pause it please');
    const { outcomes, emf } = await reconcileOnce(handler);

    // Assess
    expect(await stateOf('payment-consumer')).toBe('Enabled');
    expect(outcomes[0]).toMatchObject({ consumer: 'payment-consumer', paused: false, invalid: 'not JSON' });
    expect(emf[0]).toMatchObject({ consumer: 'payment-consumer', FlagInvalid: 1, Paused: 0 });
  });
});
