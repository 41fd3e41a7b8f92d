import {
  GetEventSourceMappingCommand,
  LambdaClient,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateEventSourceMappingCommand,
  type GetEventSourceMappingCommandInput,
  type UpdateEventSourceMappingCommandInput,
} from '@aws-sdk/client-lambda';
import { GetParametersCommand, SSMClient, type GetParametersCommandInput } from '@aws-sdk/client-ssm';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { ScheduledEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import type * as ReconcilerModule from '../../../lambdas/flag-reconciler';
import { LambdaMappingControl } from '../../../lib/adapters/aws/lambda-mappings';
import { SsmFlagReader } from '../../../lib/adapters/aws/ssm-flags';

const STAGE = 'unit';
const PAYMENT_ID = '0b6c3f4e-8d2a-4c1b-9f3e-1a2b3c4d5e6f';
const NOTIFY_ID = '1c7d4a5f-9e3b-4d2c-8a4f-2b3c4d5e6f70';
const INVENTORY_ID = '2d8e5b6a-af4c-4e3d-9b5a-3c4d5e6f7081';
const MAPPINGS = {
  'payment-consumer': PAYMENT_ID,
  'notification-consumer': NOTIFY_ID,
  'inventory-consumer': INVENTORY_ID,
};
const flagName = (consumer: string): string => `/tenang/${STAGE}/flags/pause/${consumer}`;

const NOW = new Date('2030-06-01T12:00:00.000Z');
const PAUSED = JSON.stringify({ paused: true, reason: 'provider outage', until: '2030-06-01T13:00:00Z' });
const PAUSED_OVERDUE = JSON.stringify({ paused: true, reason: 'migration', until: '2030-06-01T11:00:00Z' });
const NOT_PAUSED = JSON.stringify({ paused: false });

const scheduledEvent: ScheduledEvent = {
  version: '0',
  id: 'e-1',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: NOW.toISOString(),
  region: 'eu-west-1',
  resources: ['arn:aws:events:eu-west-1:123456789012:rule/periodic'],
  detail: {},
};

const ssmMock = mockClient(SSMClient);
const lambdaMock = mockClient(LambdaClient);

/** SSM parameters by name, served by the GetParameters mock the way SSM does (missing → InvalidParameters). */
const parameters = new Map<string, string>();
/** Mapping states by UUID, served and changed by the Lambda mocks. */
const states = new Map<string, string>();

function serveParameters(): void {
  ssmMock.on(GetParametersCommand).callsFake((input: GetParametersCommandInput) => {
    const names = input.Names ?? [];
    return {
      Parameters: names
        .filter((name) => parameters.has(name))
        .map((name) => ({ Name: name, Value: parameters.get(name), Type: 'String' })),
      InvalidParameters: names.filter((name) => !parameters.has(name)),
    };
  });
}

function serveMappings(): void {
  lambdaMock.on(GetEventSourceMappingCommand).callsFake((input: GetEventSourceMappingCommandInput) => {
    const state = input.UUID === undefined ? undefined : states.get(input.UUID);
    if (state === undefined) throw new ResourceNotFoundException({ message: 'not found', $metadata: {} });
    return { UUID: input.UUID, State: state };
  });
  lambdaMock.on(UpdateEventSourceMappingCommand).callsFake((input: UpdateEventSourceMappingCommandInput) => {
    if (input.UUID === undefined || !states.has(input.UUID)) {
      throw new ResourceNotFoundException({ message: 'not found', $metadata: {} });
    }
    states.set(input.UUID, input.Enabled === true ? 'Enabling' : 'Disabling');
    return { UUID: input.UUID, State: states.get(input.UUID) };
  });
}

/** Everything written to stdout (Powertools Logger and Metrics both write there), one JSON document per line. */
function captureStdout(): { documents: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(
      ...chunk
        .toString()
        .split('\n')
        .filter((l) => l.trim().length > 0),
    );
    return true;
  });
  return { documents: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

const isEmf = (doc: Record<string, unknown>): boolean => '_aws' in doc;

/** Runs `action` with `env` merged into process.env, then restores process.env. */
async function withEnv<T>(env: Record<string, string | undefined>, action: () => Promise<T>): Promise<T> {
  const saved = { ...process.env };
  try {
    for (const [key, value] of Object.entries(env)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    return await action();
  } finally {
    process.env = saved;
  }
}

/**
 * Loads the handler module in a fresh module registry (its module scope runs again). Its SDK
 * classes are fresh copies too, so the mocks above do not reach them: only for init failures.
 */
function loadIsolated(env: Record<string, string | undefined>): Promise<void> {
  return withEnv(env, () =>
    jest.isolateModulesAsync(async () => {
      await import('../../../lambdas/flag-reconciler');
    }),
  );
}

/** Runs `action`, expecting it to throw or reject, and returns what it threw. */
async function thrownBy(action: () => unknown): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

const validEnv = { TENANG_STAGE: STAGE, TENANG_MAPPINGS: JSON.stringify(MAPPINGS) };
let reconciler: typeof ReconcilerModule;

beforeAll(async () => {
  // Loaded once, in the shared registry, so the SDK mocks reach the module's own clients.
  reconciler = await withEnv(validEnv, () => import('../../../lambdas/flag-reconciler'));
});

const savedEnv = { ...process.env };

beforeEach(() => {
  ssmMock.reset();
  lambdaMock.reset();
  parameters.clear();
  states.clear();
  serveParameters();
  serveMappings();
  // Metrics are disabled in dev mode; these tests read what they emit.
  process.env.POWERTOOLS_DEV = 'false';
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
});

afterEach(() => {
  jest.restoreAllMocks();
  process.env = { ...savedEnv };
});

/** A handler over SDK clients (mocked) with a fixed clock; build it after captureStdout(). */
function newHandler(logLevel: 'INFO' | 'SILENT' = 'SILENT') {
  return reconciler.createHandler({
    config: reconciler.parseReconcilerEnv(validEnv),
    flags: new SsmFlagReader(new SSMClient({ region: 'eu-west-1' })),
    mappings: new LambdaMappingControl(new LambdaClient({ region: 'eu-west-1' })),
    logger: new Logger({ serviceName: reconciler.SERVICE_NAME, logLevel }),
    metrics: new Metrics({ namespace: 'tenang', serviceName: reconciler.SERVICE_NAME }),
    now: () => NOW,
  });
}

describe('Function: parseReconcilerEnv', () => {
  it('when both variables are valid, it returns the stage and the consumer → mapping UUIDs', () => {
    // Act
    const config = reconciler.parseReconcilerEnv(validEnv);

    // Assess
    expect(config).toEqual({ stage: STAGE, mappings: MAPPINGS });
  });

  it('when both variables are missing, it lists both in one error', async () => {
    // Act
    const error = await thrownBy(() => reconciler.parseReconcilerEnv({}));

    // Assess
    expect(error).toBeInstanceOf(reconciler.ReconcilerEnvError);
    expect((error as ReconcilerModule.ReconcilerEnvError).problems).toEqual([
      'TENANG_STAGE: is not set',
      'TENANG_MAPPINGS: is not set',
    ]);
  });

  it('when the stage is invalid and a mapping has a bad consumer name and a bad UUID, it lists every problem', async () => {
    // Prepare
    const env = {
      TENANG_STAGE: 'Prod!',
      TENANG_MAPPINGS: JSON.stringify({
        Payment_Consumer: PAYMENT_ID,
        'notification-consumer': 'not-a-uuid',
      }),
    };

    // Act
    const error = (await thrownBy(() =>
      reconciler.parseReconcilerEnv(env),
    )) as ReconcilerModule.ReconcilerEnvError;

    // Assess
    expect(error.problems).toHaveLength(3);
    expect(error.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^TENANG_STAGE: /),
        expect.stringMatching(/^TENANG_MAPPINGS\.Payment_Consumer: consumer name must be kebab-case/),
        expect.stringMatching(
          /^TENANG_MAPPINGS\.notification-consumer: must be an event source mapping UUID/,
        ),
      ]),
    );
    expect(error.message).toContain('Invalid flag-reconciler environment');
  });

  it.each([
    { case: 'not JSON', value: '{payment', says: 'must be a JSON object' },
    { case: 'a JSON array', value: '["x"]', says: 'TENANG_MAPPINGS: ' },
    { case: 'an empty object', value: '{}', says: 'must name at least one consumer' },
  ])('when TENANG_MAPPINGS is $case, it says so', async ({ value, says }) => {
    // Act
    const error = (await thrownBy(() =>
      reconciler.parseReconcilerEnv({ TENANG_STAGE: STAGE, TENANG_MAPPINGS: value }),
    )) as ReconcilerModule.ReconcilerEnvError;

    // Assess
    expect(error.problems).toEqual([expect.stringContaining(says)]);
  });
});

describe('Module: lambdas/flag-reconciler', () => {
  it('when loaded without its environment, it fails at init listing every missing variable', async () => {
    // Act
    const error = await thrownBy(() => loadIsolated({ TENANG_STAGE: undefined, TENANG_MAPPINGS: undefined }));

    // Assess
    expect(error).toMatchObject({
      name: 'ReconcilerEnvError',
      problems: ['TENANG_STAGE: is not set', 'TENANG_MAPPINGS: is not set'],
    });
  });

  it('when loaded with a valid environment, its handler reconciles through the SDK clients', async () => {
    // Prepare
    captureStdout();
    parameters.set(flagName('payment-consumer'), PAUSED);
    states.set(PAYMENT_ID, 'Enabled').set(NOTIFY_ID, 'Enabled').set(INVENTORY_ID, 'Enabled');

    // Act
    const outcomes = await reconciler.handler(scheduledEvent);

    // Assess
    expect(lambdaMock).toHaveReceivedCommandTimes(UpdateEventSourceMappingCommand, 1);
    expect(lambdaMock).toHaveReceivedCommandWith(UpdateEventSourceMappingCommand, {
      UUID: PAYMENT_ID,
      Enabled: false,
    });
    expect(outcomes.map((o) => [o.consumer, o.paused, o.enabledAfter])).toEqual([
      ['payment-consumer', true, false],
      ['notification-consumer', false, true],
      ['inventory-consumer', false, true],
    ]);
  });
});

describe('Function: createHandler', () => {
  it('when a consumer is paused, it disables exactly its mapping by UUID, sending Enabled only', async () => {
    // Prepare
    captureStdout();
    const handler = newHandler();
    parameters.set(flagName('payment-consumer'), PAUSED).set(flagName('notification-consumer'), NOT_PAUSED);
    states.set(PAYMENT_ID, 'Enabled').set(NOTIFY_ID, 'Enabled').set(INVENTORY_ID, 'Enabled');

    // Act
    await handler(scheduledEvent);

    // Assess
    expect(lambdaMock).toHaveReceivedCommandTimes(UpdateEventSourceMappingCommand, 1);
    expect(lambdaMock.commandCalls(UpdateEventSourceMappingCommand)[0]?.args[0].input).toEqual({
      UUID: PAYMENT_ID,
      Enabled: false,
    });
    expect(states.get(PAYMENT_ID)).toBe('Disabling');
  });

  it('when run, it reads all flags in one GetParameters call (plus a fresh read before and after each update) and treats missing ones as not paused', async () => {
    // Prepare
    captureStdout();
    const handler = newHandler();
    states.set(PAYMENT_ID, 'Disabled').set(NOTIFY_ID, 'Enabled').set(INVENTORY_ID, 'Enabled');

    // Act
    const outcomes = await handler(scheduledEvent);

    // Assess
    expect(ssmMock.commandCalls(GetParametersCommand).map((c) => c.args[0].input.Names)).toEqual([
      Object.keys(MAPPINGS).map(flagName),
      // Only the payment consumer's mapping needed an update.
      [flagName('payment-consumer')],
      [flagName('payment-consumer')],
    ]);
    expect(outcomes.every((o) => !o.paused && o.invalid === undefined)).toBe(true);
    expect(lambdaMock).toHaveReceivedCommandWith(UpdateEventSourceMappingCommand, {
      UUID: PAYMENT_ID,
      Enabled: true,
    });
  });

  it('when a flag changes between two runs a second apart, the second run sees the change (no cache)', async () => {
    // Prepare
    captureStdout();
    const handler = newHandler();
    states.set(PAYMENT_ID, 'Enabled').set(NOTIFY_ID, 'Enabled').set(INVENTORY_ID, 'Enabled');
    parameters.set(flagName('payment-consumer'), NOT_PAUSED);
    await handler(scheduledEvent);

    // Act
    parameters.set(flagName('payment-consumer'), PAUSED);
    const outcomes = await handler(scheduledEvent);

    // Assess: one batch read per run, and the fresh reads around the second run's update.
    expect(ssmMock).toHaveReceivedCommandTimes(GetParametersCommand, 4);
    expect(outcomes[0]).toMatchObject({ consumer: 'payment-consumer', paused: true, changed: true });
    expect(lambdaMock).toHaveReceivedCommandWith(UpdateEventSourceMappingCommand, {
      UUID: PAYMENT_ID,
      Enabled: false,
    });
  });

  it('when run, it publishes Paused, PauseOverdue and FlagInvalid per consumer, each with its own consumer dimension', async () => {
    // Prepare
    const stdout = captureStdout();
    const handler = newHandler();
    parameters
      .set(flagName('payment-consumer'), PAUSED)
      .set(flagName('notification-consumer'), PAUSED_OVERDUE)
      .set(flagName('inventory-consumer'), 'paused please');
    states.set(PAYMENT_ID, 'Disabled').set(NOTIFY_ID, 'Disabled').set(INVENTORY_ID, 'Enabled');

    // Act
    await handler(scheduledEvent);

    // Assess
    const emf = stdout.documents().filter(isEmf);
    expect(emf).toHaveLength(3);
    for (const doc of emf) {
      expect(doc._aws).toMatchObject({
        CloudWatchMetrics: [
          {
            Namespace: 'tenang',
            Dimensions: [['service', 'consumer']],
            Metrics: [
              { Name: 'Paused', Unit: 'Count' },
              { Name: 'PauseOverdue', Unit: 'Count' },
              { Name: 'FlagInvalid', Unit: 'Count' },
            ],
          },
        ],
      });
    }
    const values = emf.map((d) => [d.consumer, d.Paused, d.PauseOverdue, d.FlagInvalid, d.service]);
    expect(values).toEqual([
      ['payment-consumer', 1, 0, 0, 'flag-reconciler'],
      ['notification-consumer', 1, 1, 0, 'flag-reconciler'],
      ['inventory-consumer', 0, 0, 1, 'flag-reconciler'],
    ]);
  });

  it('when triggered by a Parameter Store Change event, it logs the changed flag and still reconciles every consumer', async () => {
    // Prepare
    const stdout = captureStdout();
    const handler = newHandler('INFO');
    parameters.set(flagName('notification-consumer'), PAUSED);
    states.set(PAYMENT_ID, 'Disabled').set(NOTIFY_ID, 'Enabled').set(INVENTORY_ID, 'Enabled');
    const event = {
      version: '0',
      id: 'e-2',
      'detail-type': 'Parameter Store Change' as const,
      source: 'aws.ssm',
      account: '123456789012',
      time: NOW.toISOString(),
      region: 'eu-west-1',
      resources: [],
      detail: { name: flagName('notification-consumer'), operation: 'Update', type: 'String' },
    };

    // Act
    await handler(event);

    // Assess
    const logs = stdout.documents().filter((d) => !isEmf(d));
    expect(logs).toContainEqual(
      expect.objectContaining({
        message: 'Reconciling pause flags',
        trigger: 'Parameter Store Change',
        changedFlag: flagName('notification-consumer'),
      }),
    );
    expect(lambdaMock).toHaveReceivedCommandWith(UpdateEventSourceMappingCommand, {
      UUID: PAYMENT_ID,
      Enabled: true,
    });
    expect(lambdaMock).toHaveReceivedCommandWith(UpdateEventSourceMappingCommand, {
      UUID: NOTIFY_ID,
      Enabled: false,
    });
  });

  it('when the event has no usual shape, it still reconciles', async () => {
    // Prepare
    captureStdout();
    const handler = newHandler();
    states.set(PAYMENT_ID, 'Disabled').set(NOTIFY_ID, 'Enabled').set(INVENTORY_ID, 'Enabled');

    // Act
    const outcomes = await handler({} as ScheduledEvent);

    // Assess
    expect(outcomes).toHaveLength(3);
    expect(lambdaMock).toHaveReceivedCommandWith(UpdateEventSourceMappingCommand, {
      UUID: PAYMENT_ID,
      Enabled: true,
    });
  });

  it('when one mapping is in use and another is gone, it reconciles the third, publishes all, and throws naming both', async () => {
    // Prepare
    const stdout = captureStdout();
    const handler = newHandler();
    parameters.set(flagName('payment-consumer'), PAUSED).set(flagName('inventory-consumer'), PAUSED);
    states.set(PAYMENT_ID, 'Enabled').set(INVENTORY_ID, 'Enabled'); // NOTIFY_ID does not exist
    lambdaMock
      .on(UpdateEventSourceMappingCommand, { UUID: PAYMENT_ID })
      .rejects(new ResourceInUseException({ message: 'mapping is being updated', $metadata: {} }));

    // Act
    const run = handler(scheduledEvent);

    // Assess
    await expect(run).rejects.toMatchObject({
      name: 'ReconciliationError',
      failures: [
        expect.objectContaining({
          consumer: 'payment-consumer',
          step: 'update',
          error: expect.objectContaining({ name: 'MappingBusyError' }),
        }),
        expect.objectContaining({
          consumer: 'notification-consumer',
          step: 'observe',
          error: expect.objectContaining({ name: 'MappingNotFoundError' }),
        }),
      ],
    });
    await expect(run).rejects.toThrow(
      /payment-consumer \(update: MappingBusyError.*notification-consumer \(observe: MappingNotFoundError/,
    );
    expect(states.get(INVENTORY_ID)).toBe('Disabling');
    expect(
      stdout
        .documents()
        .filter(isEmf)
        .map((d) => d.consumer),
    ).toEqual(['payment-consumer', 'notification-consumer', 'inventory-consumer']);
  });

  it('when SSM cannot be read, it throws without updating any mapping', async () => {
    // Prepare
    captureStdout();
    const handler = newHandler();
    states.set(PAYMENT_ID, 'Disabled');
    ssmMock
      .on(GetParametersCommand)
      .rejects(Object.assign(new Error('not authorized'), { name: 'AccessDeniedException' }));

    // Act
    const run = handler(scheduledEvent);

    // Assess
    await expect(run).rejects.toThrow('not authorized');
    expect(lambdaMock).not.toHaveReceivedCommand(UpdateEventSourceMappingCommand);
  });
});
