/**
 * The local platform's SQS event source mapping and Lambda control plane against moto: what
 * the Lambda service does with a batch's outcome, FIFO groups, and the Enabled state kept
 * outside moto.
 */
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import {
  CreateEventSourceMappingCommand,
  DeleteEventSourceMappingCommand,
  GetEventSourceMappingCommand,
  LambdaClient,
  UpdateEventSourceMappingCommand,
} from '@aws-sdk/client-lambda';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import type { InvokeResult } from '../../lib/local/function-host';
import { startLambdaControl, type LambdaControl } from '../../lib/local/lambda-control';
import { SqsEventSource, type SqsMappingSpec } from '../../lib/local/sqs-event-source';
import { sqsClient, uniqueName } from '../helpers/aws';
import { createMotoFunction, type MotoFunction } from '../helpers/moto-lambda';

jest.setTimeout(30_000);

const ok = (result: unknown): InvokeResult => ({ status: 'ok', result, durationMs: 1, coldStart: false });

async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  deadlineMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('Class: SqsEventSource (moto)', () => {
  let sqs: SQSClient;
  const queues: string[] = [];
  let source: SqsEventSource | undefined;

  async function queue(fifo: boolean): Promise<{ url: string; arn: string }> {
    const name = uniqueName('esm') + (fifo ? '.fifo' : '');
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: { VisibilityTimeout: '1', ...(fifo ? { FifoQueue: 'true' } : {}) },
      }),
    );
    if (QueueUrl === undefined) throw new Error('no queue url');
    queues.push(QueueUrl);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    return { url: QueueUrl, arn: Attributes?.QueueArn ?? '' };
  }

  async function depth(url: string): Promise<{ visible: number; inFlight: number }> {
    const { Attributes = {} } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return {
      visible: Number(Attributes.ApproximateNumberOfMessages),
      inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible),
    };
  }

  function spec(q: { url: string; arn: string }, overrides: Partial<SqsMappingSpec> = {}): SqsMappingSpec {
    return {
      uuid: 'local',
      functionName: 'test-fn',
      queueUrl: q.url,
      queueArn: q.arn,
      batchSize: 10,
      batchingWindowSeconds: 0,
      maxConcurrency: 1,
      reportBatchItemFailures: true,
      ...overrides,
    };
  }

  beforeAll(() => {
    sqs = sqsClient();
  });

  afterEach(async () => {
    await source?.stop();
    source = undefined;
  });

  afterAll(async () => {
    for (const url of queues) await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    sqs.destroy();
  });

  it('when the function reports two failures, only those two stay in the queue', async () => {
    // Prepare
    const q = await queue(false);
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: q.url,
        Entries: [1, 2, 3, 4, 5].map((n) => ({ Id: `m${n}`, MessageBody: `body-${n}` })),
      }),
    );
    const seen: string[] = [];
    source = new SqsEventSource(spec(q, { batchingWindowSeconds: 1 }), sqs, {
      isEnabled: () => true,
      invoke: (event: SQSEvent) => {
        seen.push(...event.Records.map((r) => r.body));
        const failed = event.Records.filter((r) => r.body === 'body-2' || r.body === 'body-4');
        return Promise.resolve(
          ok({ batchItemFailures: failed.map((r) => ({ itemIdentifier: r.messageId })) }),
        );
      },
    });

    // Act
    source.start();
    await until(() => source!.stats.deleted === 3, 'three deletions');
    await source.stop();

    // Assess
    // The two failures come back after the 1 s visibility timeout and fail again: never deleted.
    expect(source.stats.deleted).toBe(3);
    expect(source.stats.returned).toBeGreaterThanOrEqual(2);
    expect(seen.filter((b) => !['body-2', 'body-4'].includes(b)).sort()).toEqual([
      'body-1',
      'body-3',
      'body-5',
    ]);
    await until(
      async () => (await depth(q.url)).visible === 2,
      'the two failures to return after the visibility timeout',
    );
  });

  it('when an invocation fails as a whole, no message of its batch is deleted', async () => {
    // Prepare
    const q = await queue(false);
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: q.url,
        Entries: [
          { Id: 'a', MessageBody: 'a' },
          { Id: 'b', MessageBody: 'b' },
        ],
      }),
    );
    source = new SqsEventSource(spec(q, { batchingWindowSeconds: 1 }), sqs, {
      isEnabled: () => true,
      invoke: () =>
        Promise.resolve({
          status: 'timeout',
          errorType: 'Sandbox.Timedout',
          errorMessage: 'x',
          durationMs: 1,
          coldStart: false,
        }),
    });

    // Act
    source.start();
    await until(() => source!.stats.batches >= 1, 'one batch');
    await source.stop();

    // Assess
    expect(source.stats.deleted).toBe(0);
    expect(source.stats.invocationErrors).toBeGreaterThanOrEqual(1);
    await until(async () => (await depth(q.url)).visible === 2, 'both messages to return');
  });

  it('when a reported failure is not in the batch, the whole batch is treated as failed', async () => {
    // Prepare
    const q = await queue(false);
    await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: q.url, Entries: [{ Id: 'a', MessageBody: 'a' }] }),
    );
    source = new SqsEventSource(spec(q), sqs, {
      isEnabled: () => true,
      invoke: () => Promise.resolve(ok({ batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] })),
    });

    // Act
    source.start();
    await until(() => source!.stats.batches >= 1, 'one batch');
    await source.stop();

    // Assess
    expect(source.stats.deleted).toBe(0);
  });

  it('when two pollers serve a FIFO queue, two batches of one message group are never in flight together', async () => {
    // Prepare
    const q = await queue(true);
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: q.url,
        Entries: ['a1', 'a2', 'a3', 'b1', 'b2'].map((body) => ({
          Id: body,
          MessageBody: body,
          MessageGroupId: body.slice(0, 1),
          MessageDeduplicationId: body,
        })),
      }),
    );
    const inFlight = new Set<string>();
    let overlaps = 0;
    const order: string[] = [];
    source = new SqsEventSource(spec(q, { batchSize: 1, maxConcurrency: 2 }), sqs, {
      isEnabled: () => true,
      invoke: async (event) => {
        const groups = event.Records.map((r) => r.attributes.MessageGroupId ?? '');
        for (const g of groups) {
          if (inFlight.has(g)) overlaps += 1;
          inFlight.add(g);
        }
        order.push(...event.Records.map((r) => r.body));
        await new Promise((r) => setTimeout(r, 100));
        for (const g of groups) inFlight.delete(g);
        return ok({ batchItemFailures: [] });
      },
    });

    // Act
    source.start();
    await until(() => source!.stats.deleted === 5, 'all five messages');

    // Assess
    expect(overlaps).toBe(0);
    expect(order.filter((b) => b.startsWith('a'))).toEqual(['a1', 'a2', 'a3']);
    expect(order.filter((b) => b.startsWith('b'))).toEqual(['b1', 'b2']);
  });

  it('when the mapping is disabled, nothing is received until it is enabled', async () => {
    // Prepare
    const q = await queue(false);
    await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: q.url, Entries: [{ Id: 'a', MessageBody: 'a' }] }),
    );
    let enabled = false;
    source = new SqsEventSource(spec(q), sqs, {
      isEnabled: () => enabled,
      invoke: () => Promise.resolve(ok(null)),
    });

    // Act
    source.start();
    await new Promise((r) => setTimeout(r, 600));
    const whileDisabled = { ...source.stats };
    enabled = true;
    await until(() => source!.stats.deleted === 1, 'the message after enabling');

    // Assess
    expect(whileDisabled.batches).toBe(0);
    expect((await depth(q.url)).visible).toBe(0);
  });

  it('when the mapping is disabled while a poll is waiting, that poll still delivers what it receives (as the Lambda service does) and the source is busy until it is done; nothing later is delivered', async () => {
    // Prepare: the pollers are waiting on an empty queue when the mapping is disabled.
    const q = await queue(false);
    let enabled = true;
    let invocations = 0;
    let finish: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (finish = resolve));
    source = new SqsEventSource(spec(q), sqs, {
      isEnabled: () => enabled,
      invoke: async () => {
        invocations += 1;
        await running;
        return ok(null);
      },
    });
    source.start();
    await new Promise((r) => setTimeout(r, 300));

    // Act
    enabled = false;
    await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: q.url, Entries: [{ Id: 'a', MessageBody: 'a' }] }),
    );
    await until(() => invocations === 1, 'the waiting poll to deliver the message');
    const busyWhileRunning = source.busy;
    finish();
    await until(() => !source!.busy, 'the delivery to finish');
    await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: q.url, Entries: [{ Id: 'b', MessageBody: 'b' }] }),
    );
    await new Promise((r) => setTimeout(r, 1_500));

    // Assess
    expect(busyWhileRunning).toBe(true);
    expect(invocations).toBe(1);
    expect(source.stats.deleted).toBe(1);
    expect(source.busy).toBe(false);
    expect(await depth(q.url)).toEqual({ visible: 1, inFlight: 0 });
  });
});

describe('Function: startLambdaControl (moto)', () => {
  let control: LambdaControl;
  let moto: LambdaClient;
  let viaControl: LambdaClient;
  let cfn: CloudFormationClient;
  let sqs: SQSClient;
  let fn: MotoFunction | undefined;
  let queueUrl: string | undefined;
  let uuid = '';

  beforeAll(async () => {
    const endpoint = process.env.AWS_ENDPOINT_URL ?? '';
    const region = process.env.AWS_REGION ?? 'us-east-1';
    moto = new LambdaClient({ endpoint, region });
    cfn = new CloudFormationClient({ endpoint, region });
    sqs = sqsClient();
    control = await startLambdaControl({ upstream: endpoint });
    viaControl = new LambdaClient({ endpoint: control.url, region });
    fn = await createMotoFunction(cfn, moto, uniqueName('lc-fn'), uniqueName('lc-role'));
    const created = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('lc') }));
    queueUrl = created.QueueUrl;
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    const mapping = await moto.send(
      new CreateEventSourceMappingCommand({
        FunctionName: fn.functionName,
        EventSourceArn: Attributes?.QueueArn,
        BatchSize: 1,
        Enabled: false,
      }),
    );
    uuid = mapping.UUID ?? '';
  });

  afterAll(async () => {
    if (uuid) await moto.send(new DeleteEventSourceMappingCommand({ UUID: uuid }));
    await fn?.delete();
    if (queueUrl) await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
    await control.close();
    for (const c of [moto, viaControl, cfn, sqs]) c.destroy();
  });

  it('when a mapping is disabled through the control plane, moto keeps it disabled and the control plane reports it', async () => {
    // Act
    await viaControl.send(new UpdateEventSourceMappingCommand({ UUID: uuid, Enabled: false }));

    // Assess
    expect(control.isEnabled(uuid)).toBe(false);
    expect((await viaControl.send(new GetEventSourceMappingCommand({ UUID: uuid }))).State).toBe('Disabled');
  });

  it('when a disabled mapping is still delivering, the control plane reports Disabling until it is done, then Disabled', async () => {
    // Prepare
    let busy = true;
    const withPollers = await startLambdaControl({
      upstream: process.env.AWS_ENDPOINT_URL ?? '',
      busy: (id) => id === uuid && busy,
    });
    const client = new LambdaClient({
      endpoint: withPollers.url,
      region: process.env.AWS_REGION ?? 'us-east-1',
    });
    try {
      // Act
      const updated = await client.send(new UpdateEventSourceMappingCommand({ UUID: uuid, Enabled: false }));
      const whileBusy = (await client.send(new GetEventSourceMappingCommand({ UUID: uuid }))).State;
      busy = false;
      const afterwards = (await client.send(new GetEventSourceMappingCommand({ UUID: uuid }))).State;

      // Assess
      expect([updated.State, whileBusy, afterwards]).toEqual(['Disabling', 'Disabling', 'Disabled']);
    } finally {
      client.destroy();
      await withPollers.close();
    }
  });

  it('when a mapping is enabled through the control plane, moto still has it disabled (it would consume the queue)', async () => {
    // Act
    const updated = await viaControl.send(new UpdateEventSourceMappingCommand({ UUID: uuid, Enabled: true }));

    // Assess
    expect(updated.State).toBe('Enabled');
    expect(control.isEnabled(uuid)).toBe(true);
    expect((await viaControl.send(new GetEventSourceMappingCommand({ UUID: uuid }))).State).toBe('Enabled');
    expect((await moto.send(new GetEventSourceMappingCommand({ UUID: uuid }))).State).toBe('Disabled');
  });
});
