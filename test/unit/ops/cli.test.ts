import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CloudFormationClient,
  GetTemplateCommand,
  ListStackResourcesCommand,
} from '@aws-sdk/client-cloudformation';
import {
  GetEventSourceMappingCommand,
  LambdaClient,
  UpdateEventSourceMappingCommand,
} from '@aws-sdk/client-lambda';
import { GetQueueUrlCommand, SQSClient, QueueDoesNotExist } from '@aws-sdk/client-sqs';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { CommanderError } from 'commander';
import { exitCodeFor, runCaptured, type CapturedRun } from '../../../bin/tenang';
import { pauseFlagSchema } from '../../../lib/core/flags';
import { CommandFailedError, UsageError } from '../../../lib/ops/cli-context';
import { DegradeOptionsSchema } from '../../../lib/ops/commands/degrade';
import { DlqReplayOptionsSchema } from '../../../lib/ops/commands/dlq';
import { PauseOptionsSchema } from '../../../lib/ops/commands/pause';
import { parseOptions } from '../../../lib/ops/options';

const cfn = mockClient(CloudFormationClient);
const lambda = mockClient(LambdaClient);
const sqs = mockClient(SQSClient);
const ssm = mockClient(SSMClient);
const UUID = '0f4b8a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b';
const savedEnv = { ...process.env };

function cli(...argv: string[]): Promise<CapturedRun> {
  return runCaptured(argv);
}

beforeEach(() => {
  for (const m of [cfn, lambda, sqs, ssm]) m.reset();
  Object.assign(process.env, { AWS_REGION: 'eu-west-1', TENANG_STAGE: 'unit', TENANG_ACTOR: 'tester' });
  cfn.on(ListStackResourcesCommand).resolves({
    StackResourceSummaries: [
      {
        LogicalResourceId: 'Esm',
        ResourceType: 'AWS::Lambda::EventSourceMapping',
        PhysicalResourceId: UUID,
        ResourceStatus: 'CREATE_COMPLETE',
        LastUpdatedTimestamp: new Date(),
      },
    ],
  });
});

afterAll(() => {
  process.env = savedEnv;
});

describe('Function: exitCodeFor (the error funnel)', () => {
  it('when a command raises a UsageError, it prints the message and returns 2', () => {
    const err = jest.fn();
    expect(exitCodeFor(new UsageError('--reason is required'), err)).toBe(2);
    expect(err).toHaveBeenCalledWith('error: --reason is required');
  });

  it('when commander reports a usage problem, it returns 2 without printing twice', () => {
    const err = jest.fn();
    expect(exitCodeFor(new CommanderError(1, 'commander.missingArgument', 'missing'), err)).toBe(2);
    expect(err).not.toHaveBeenCalled();
  });

  it('when commander displayed the help, it returns 0', () => {
    expect(exitCodeFor(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'), jest.fn())).toBe(0);
  });

  it('when a command failed, it prints one line and returns 1', () => {
    const err = jest.fn();
    expect(exitCodeFor(new CommandFailedError('mapping did not converge'), err)).toBe(1);
    expect(err).toHaveBeenCalledWith('error: mapping did not converge');
  });

  it('when AWS answers with an error, it prints its name and message on one line and returns 1', () => {
    // Prepare
    const err = jest.fn();
    const error = new QueueDoesNotExist({
      message: 'The specified queue does not exist.\nmore',
      $metadata: {},
    });

    // Act
    const code = exitCodeFor(error, err);

    // Assess
    expect(code).toBe(1);
    expect(err).toHaveBeenCalledWith('error: AWS QueueDoesNotExist: The specified queue does not exist.');
  });

  it('when the error is unexpected, it prints the stack and returns 1', () => {
    const err = jest.fn();
    expect(exitCodeFor(new TypeError('x is undefined'), err)).toBe(1);
    expect(String(err.mock.calls[0]?.[0])).toMatch(
      /unexpected error[\s\S]*TypeError: x is undefined\n\s+at /,
    );
  });
});

describe('Function: run', () => {
  it('when asked for help, it prints the commands with examples and returns 0', async () => {
    const result = await cli('--help');
    expect(result.code).toBe(0);
    expect(result.out).toContain('Examples:');
    expect(result.out).toMatch(/status[\s\S]*pause[\s\S]*resume[\s\S]*degrade[\s\S]*dlq/);
  });

  it('when a command is unknown, it returns 2', async () => {
    expect((await cli('explode')).code).toBe(2);
  });

  it('when pause has no reason, it is a usage error (2) and nothing is written', async () => {
    const result = await cli('pause', 'payment-consumer', '--for', '30m');
    expect(result.code).toBe(2);
    expect(result.err).toContain('--reason');
    expect(ssm).not.toHaveReceivedCommand(PutParameterCommand);
  });

  it('when the consumer is unknown, it returns 2 and lists the known ones', async () => {
    const result = await cli('pause', 'nobody', '--reason', 'x', '--for', '30m');
    expect(result.code).toBe(2);
    expect(result.err).toContain(
      'known consumers: payment-consumer, notification-consumer, inventory-consumer, cache-invalidator, outbox-relay',
    );
  });

  it('when the consumer is needed for recovery, it refuses without --force (2)', async () => {
    const result = await cli('pause', 'outbox-relay', '--reason', 'x', '--for', '30m');
    expect(result.code).toBe(2);
    expect(result.err).toContain('needed for recovery');
    expect(result.err).toContain('--force');
    expect(ssm).not.toHaveReceivedCommand(PutParameterCommand);
  });

  it('when pausing, it writes the flag with until and setBy, disables the mapping and waits for Disabled', async () => {
    // Prepare
    jest.useFakeTimers({
      now: new Date('2026-03-01T12:00:00Z'),
      doNotFake: ['setTimeout', 'nextTick', 'setImmediate', 'queueMicrotask'],
    });
    lambda
      .on(GetEventSourceMappingCommand)
      .resolvesOnce({
        UUID,
        FunctionArn: 'arn:aws:lambda:eu-west-1:1:function:tenang-unit-payment-consumer',
        State: 'Enabled',
      })
      .resolvesOnce({ UUID, State: 'Disabling' })
      .resolves({ UUID, State: 'Disabled' });
    lambda.on(UpdateEventSourceMappingCommand).resolves({ UUID, State: 'Disabling' });
    ssm.on(PutParameterCommand).resolves({ Version: 2 });

    // Act
    const result = await cli('pause', 'payment-consumer', '--reason', 'provider outage', '--for', '2h');
    jest.useRealTimers();

    // Assess
    expect(result.code).toBe(0);
    expect(result.out).toContain('paused payment-consumer until 2026-03-01T14:00:00.000Z');
    const put = ssm.commandCalls(PutParameterCommand)[0]?.args[0].input;
    expect(put?.Name).toBe('/tenang/unit/flags/pause/payment-consumer');
    expect(pauseFlagSchema().parse(JSON.parse(put?.Value ?? ''))).toEqual({
      paused: true,
      reason: 'provider outage',
      until: '2026-03-01T14:00:00.000Z',
      setBy: 'tester',
    });
    expect(lambda).toHaveReceivedCommandWith(UpdateEventSourceMappingCommand, { UUID, Enabled: false });
    expect(lambda).toHaveReceivedCommandTimes(GetEventSourceMappingCommand, 3);
  });

  /**
   * Runs the CLI with a mapping that reports `first`, then `later` for good, on a clock that jumps
   * a whole convergence wait at every reading, so the wait runs out at once.
   */
  async function convergeRun(first: string, later: string, ...argv: string[]) {
    lambda
      .on(GetEventSourceMappingCommand)
      .resolvesOnce({
        UUID,
        FunctionArn: 'arn:aws:lambda:eu-west-1:1:function:tenang-unit-payment-consumer',
        State: first as never,
      })
      .resolves({ UUID, State: later as never });
    lambda.on(UpdateEventSourceMappingCommand).resolves({});
    ssm.on(PutParameterCommand).resolves({});
    const { CONVERGE_TIMEOUT_MS } = await import('../../../lib/ops/pause-control');
    const now = jest.spyOn(Date, 'now');
    let t = 0;
    now.mockImplementation(() => (t += CONVERGE_TIMEOUT_MS));
    try {
      return await cli(...argv);
    } finally {
      now.mockRestore();
    }
  }

  it('when the mapping never reaches the state, it fails with 1 and says the flag is written', async () => {
    // Act
    const result = await convergeRun('Disabled', 'Enabling', 'resume', 'payment-consumer');

    // Assess
    expect(result.code).toBe(1);
    expect(result.err).toContain('flag /tenang/unit/flags/pause/payment-consumer is written');
    expect(result.err).toContain('Enabling');
  });

  it('when a pause leaves the mapping Disabling past the wait (a batch still running), it succeeds and says so', async () => {
    // Act
    const result = await convergeRun(
      'Enabled',
      'Disabling',
      'pause',
      'payment-consumer',
      '--reason',
      'provider outage',
      '--for',
      '2h',
    );

    // Assess
    expect(result.code).toBe(0);
    expect(result.out).toContain(
      'Enabled → Disabling; batches received before the pause are still finishing',
    );
  });

  it('when replaying without --yes and without a terminal, it is a usage error before touching the DLQ', async () => {
    const result = await cli('dlq', 'replay', 'payment.capture');
    expect(result.code).toBe(2);
    expect(result.err).toContain('--yes');
    expect(sqs).not.toHaveReceivedCommand(GetQueueUrlCommand);
  });

  it('when the stage is not a stage name, it is a usage error', async () => {
    expect((await cli('--stage', 'Bad Stage', 'status')).code).toBe(2);
  });
});

describe('The pipeline config read from the deployed stack', () => {
  let dir: string;
  beforeEach(() => {
    // No declaration in the environment: the CLI would read the stack's template.
    delete process.env.TENANG_PIPELINE;
    cfn.on(GetTemplateCommand).rejects(new Error('Stack with id tenang-unit does not exist'));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-cli-'));
  });
  afterEach(() => {
    process.env.TENANG_PIPELINE = savedEnv.TENANG_PIPELINE;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('when a command needs it, it is read once before the action, and its absence is explained', async () => {
    // Act
    const result = await cli('pause', 'payment-consumer', '--for', '30m', '--reason', 'drill');
    // Assess
    expect(cfn).toHaveReceivedCommandTimes(GetTemplateCommand, 1);
    expect(result.code).toBe(1);
    expect(result.err).toContain('no pipeline config for stage "unit"');
  });

  it('when drills are listed, no AWS call is made for the config', async () => {
    // Act
    const result = await cli('drill', '--list');
    // Assess
    expect(cfn.calls()).toHaveLength(0);
    expect(result.code).toBe(0);
    expect(result.out).toContain('dlq-not-empty');
  });

  it('when the audit is given a template, no AWS call is made for the config', async () => {
    // Prepare
    const template = path.join(dir, 'template.json');
    fs.writeFileSync(template, JSON.stringify({ Resources: {} }));
    // Act
    const result = await cli('audit', '--template', template, '--json');
    // Assess
    expect(cfn.calls()).toHaveLength(0);
    expect(result.code).toBe(0);
  });
});

describe('Option schemas', () => {
  it('when pause options are complete, the duration becomes milliseconds', () => {
    expect(parseOptions(PauseOptionsSchema, { reason: 'r', for: '30m' })).toMatchObject({
      reason: 'r',
      for: 1_800_000,
    });
  });

  it('when pause options lack both reason and duration, the usage error names both', () => {
    expect(() => parseOptions(PauseOptionsSchema, {})).toThrow(/--reason[\s\S]*--for/);
  });

  it('when replay options are given as text, they are typed, with defaults', () => {
    expect(
      parseOptions(DlqReplayOptionsSchema, { rate: '2/s', max: '7', errorClass: ['A', 'B'] }),
    ).toMatchObject({
      rate: 2,
      max: 7,
      errorClass: ['A', 'B'],
    });
    expect(parseOptions(DlqReplayOptionsSchema, {})).toMatchObject({ rate: 5, max: 100 });
    expect(() => parseOptions(DlqReplayOptionsSchema, { rate: 'fast' })).toThrow('--rate');
  });

  it('when degrade is turned on without a reason, it is a usage error; off needs none', () => {
    expect(() => parseOptions(DegradeOptionsSchema, { mode: 'on' })).toThrow(UsageError);
    expect(parseOptions(DegradeOptionsSchema, { mode: 'off' })).toEqual({ mode: 'off' });
    expect(() => parseOptions(DegradeOptionsSchema, { mode: 'maybe' })).toThrow(UsageError);
  });
});
