import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { paymentCapture } from '../../../examples/reference/jobs/payment-capture';
import { jobIdempotencyKeyPrefix } from '../../../lib/adapters/define-job';
import { loadPipelineConfig } from '../../../lib/config';
import { referencePipeline } from '../../../examples/reference/pipeline';
import { makeEnvelope, type JobEnvelope, type JobTypeName } from '../../../lib/core/envelope';
import { decideReplay, filteredOut, type DeadLetter, type EffectCheck } from '../../../lib/core/replay';
import type { ReceivedDeadLetter } from '../../../lib/ops/dlq/messages';
import { executeReplay, planReplay, summarize, type ReplayAuditRecord } from '../../../lib/ops/dlq/replay';
import { DynamoDbEffectChecker, paymentIdempotencyRecordId } from '../../../lib/ops/replay-effects';

const config = loadPipelineConfig(referencePipeline('unit', 'eu-west-1'));
const jobType = (name: string) => {
  const j = config.jobTypes.find((x) => x.name === name);
  if (j === undefined) throw new Error(name);
  return j;
};
const NOW = new Date('2026-03-01T12:00:00Z');

function paymentBody(orderId: string, paymentId: string): string {
  return JSON.stringify(
    makeEnvelope(
      'payment.capture',
      { orderId, paymentId, amountMinor: 100, currency: 'EUR' },
      { idempotencyKey: `payment:${paymentId}:capture`, correlationId: `c-${orderId}`, now: NOW },
    ),
  );
}

function deadLetter(overrides: Partial<ReceivedDeadLetter> = {}): ReceivedDeadLetter {
  return {
    messageId: 'm-1',
    receiptHandle: 'rh-1',
    body: paymentBody('o-1', 'p-1'),
    errorClass: 'ProviderUnavailableError',
    errorMessage: 'down',
    attempts: 5,
    firstFailureAt: new Date('2026-03-01T10:00:00Z'),
    lastFailureAt: new Date('2026-03-01T11:00:00Z'),
    correlationId: 'c-o-1',
    sentAt: new Date('2026-03-01T11:00:00Z'),
    groupId: 'o-1',
    receiveCount: 1,
    jobType: 'payment.capture',
    ...overrides,
  };
}

const sqsMock = mockClient(SQSClient);
const ddbMock = mockClient(DynamoDBClient);

beforeEach(() => {
  sqsMock.reset();
  ddbMock.reset();
  sqsMock.on(SendMessageCommand).resolves({ MessageId: 'new-1' });
  sqsMock.on(DeleteMessageCommand).resolves({});
  sqsMock.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [], Failed: [] });
});

describe('Module: core/replay', () => {
  const message: DeadLetter = deadLetter();
  const notDone = (): Promise<EffectCheck> => Promise.resolve({ done: false });

  it('when the error class is not in the filter, it skips the message as filtered without checking the effect', async () => {
    // Prepare
    const effect = jest.fn(notDone);

    // Act
    const decision = await decideReplay(
      message,
      { errorClasses: ['ValidationError'], since: undefined },
      { ok: true },
      effect,
    );

    // Assess
    expect(decision.action).toBe('skip-filtered');
    expect(effect).not.toHaveBeenCalled();
  });

  it('when the message last failed before --since, it is filtered out', () => {
    expect(filteredOut(message, { errorClasses: [], since: new Date('2026-03-01T11:30:00Z') })).toContain(
      'before',
    );
    expect(
      filteredOut(message, { errorClasses: [], since: new Date('2026-03-01T10:30:00Z') }),
    ).toBeUndefined();
  });

  it('when the body is not a valid job, it fails it (a replay would fail again)', async () => {
    const decision = await decideReplay(
      message,
      { errorClasses: [], since: undefined },
      { ok: false, problem: 'not JSON' },
      notDone,
    );
    expect(decision).toEqual({ action: 'fail', reason: expect.stringContaining('not JSON') as string });
  });

  it('when the effect already happened, it skips the message as already done with the evidence', async () => {
    const decision = await decideReplay(message, { errorClasses: [], since: undefined }, { ok: true }, () =>
      Promise.resolve({ done: true, evidence: 'order o-1 is already PAID' }),
    );
    expect(decision).toEqual({
      action: 'skip-already-done',
      reason: 'already done: order o-1 is already PAID',
    });
  });

  it('when the effect did not happen, it replays', async () => {
    const decision = await decideReplay(
      message,
      { errorClasses: [], since: undefined },
      { ok: true },
      notDone,
    );
    expect(decision.action).toBe('replay');
  });
});

describe('Class: DynamoDbEffectChecker', () => {
  const tables = { orders: 'orders', idempotency: 'idem', dedup: 'dedup', inventory: 'inv' };
  const checker = (): DynamoDbEffectChecker =>
    new DynamoDbEffectChecker(new DynamoDBClient({ region: 'eu-west-1' }), tables, () => NOW);
  const job = <T extends JobTypeName>(body: string): JobEnvelope<T> => JSON.parse(body) as JobEnvelope<T>;

  it('when computing a payment record id, it matches what Powertools stores for the payment consumer', () => {
    // Prepare: the runner keys the job module's records on its job type.
    class Exposed extends DynamoDBPersistenceLayer {
      public key(data: unknown): string {
        return this.getHashedIdempotencyKey(data as never);
      }
    }
    const layer = new Exposed({ tableName: 'idem' });
    layer.configure({
      config: new IdempotencyConfig({ eventKeyJmesPath: 'idempotencyKey' }),
      keyPrefix: jobIdempotencyKeyPrefix(paymentCapture.name),
    });

    // Act
    const expected = layer.key({ idempotencyKey: 'payment:p-9:capture', payload: {} });

    // Assess
    expect(paymentIdempotencyRecordId('p-9')).toBe(expected);
  });

  it('when the idempotency record is COMPLETED, the capture is done', async () => {
    ddbMock
      .on(GetItemCommand, { TableName: 'idem', Key: { id: { S: paymentIdempotencyRecordId('p-1') } } })
      .resolves({
        Item: { status: { S: 'COMPLETED' }, expiration: { N: String(NOW.getTime() / 1000 + 60) } },
      });
    await expect(checker().check(job(paymentBody('o-1', 'p-1')))).resolves.toEqual({
      done: true,
      evidence: 'idempotency record payment:p-1:capture is COMPLETED',
    });
  });

  it.each(['PAID', 'RESERVED'])(
    'when the record is absent but the order is %s, the capture is done',
    async (state) => {
      ddbMock.on(GetItemCommand, { TableName: 'idem' }).resolves({});
      ddbMock.on(GetItemCommand, { TableName: 'orders' }).resolves({ Item: { state: { S: state } } });
      await expect(checker().check(job(paymentBody('o-1', 'p-1')))).resolves.toEqual({
        done: true,
        evidence: `order o-1 is already ${state}`,
      });
    },
  );

  it('when the record on the order is COMPLETED, the capture is done, whatever the order’s state', async () => {
    ddbMock.on(GetItemCommand, { TableName: 'idem' }).resolves({});
    ddbMock.on(GetItemCommand, { TableName: 'orders' }).resolves({
      Item: {
        state: { S: 'CANCELLED' },
        idempotency: {
          M: {
            id: { S: paymentIdempotencyRecordId('p-1') },
            status: { S: 'COMPLETED' },
            expiration: { N: String(NOW.getTime() / 1000 + 60) },
          },
        },
      },
    });
    await expect(checker().check(job(paymentBody('o-1', 'p-1')))).resolves.toEqual({
      done: true,
      evidence: 'idempotency record payment:p-1:capture on order o-1 is COMPLETED',
    });
  });

  it('when the record on the order is another payment’s, it is not this capture’s evidence', async () => {
    ddbMock.on(GetItemCommand, { TableName: 'idem' }).resolves({});
    ddbMock.on(GetItemCommand, { TableName: 'orders' }).resolves({
      Item: {
        state: { S: 'PENDING' },
        idempotency: {
          M: { id: { S: paymentIdempotencyRecordId('p-2') }, status: { S: 'COMPLETED' } },
        },
      },
    });
    await expect(checker().check(job(paymentBody('o-1', 'p-1')))).resolves.toEqual({ done: false });
  });

  it('when the record is INPROGRESS and the order PENDING, the capture is not done', async () => {
    ddbMock.on(GetItemCommand, { TableName: 'idem' }).resolves({ Item: { status: { S: 'INPROGRESS' } } });
    ddbMock.on(GetItemCommand, { TableName: 'orders' }).resolves({ Item: { state: { S: 'PENDING' } } });
    await expect(checker().check(job(paymentBody('o-1', 'p-1')))).resolves.toEqual({ done: false });
  });

  it('when a notification dedup record is done, it is done; in-flight or expired, it is not', async () => {
    const body = JSON.stringify(
      makeEnvelope(
        'notification.send',
        { orderId: 'o-2', template: 'order-paid', recipient: 'a@example.com', orderVersion: 1 },
        { idempotencyKey: 'k', correlationId: 'c', now: NOW },
      ),
    );
    const future = String(NOW.getTime() / 1000 + 60);
    ddbMock
      .on(GetItemCommand, { Key: { dedupKey: { S: 'notification:o-2:order-paid' } } })
      .resolvesOnce({
        Item: { status: { S: 'done' }, expiration: { N: future } },
      })
      .resolvesOnce({ Item: { status: { S: 'in-flight' }, expiration: { N: future } } })
      .resolvesOnce({
        Item: { status: { S: 'done' }, expiration: { N: String(NOW.getTime() / 1000 - 60) } },
      });
    await expect(checker().check(job(body))).resolves.toMatchObject({ done: true });
    await expect(checker().check(job(body))).resolves.toEqual({ done: false });
    await expect(checker().check(job(body))).resolves.toEqual({ done: false });
  });

  it('when the SKU holds a reservation for the order, the reservation is done', async () => {
    const body = JSON.stringify(
      makeEnvelope(
        'inventory.reserve',
        { orderId: 'o-3', sku: 's-1', quantity: 1 },
        { idempotencyKey: 'k', correlationId: 'c', now: NOW },
      ),
    );
    ddbMock
      .on(GetItemCommand, { TableName: 'inv' })
      .resolvesOnce({
        Item: { sku: { S: 's-1' }, reservations: { M: { 'o-3': { M: { quantity: { N: '1' } } } } } },
      })
      .resolvesOnce({ Item: { sku: { S: 's-1' }, reservations: { M: {} } } });
    await expect(checker().check(job(body))).resolves.toMatchObject({ done: true });
    await expect(checker().check(job(body))).resolves.toEqual({ done: false });
  });
});

describe('Function: planReplay and executeReplay', () => {
  const sqs = new SQSClient({ region: 'eu-west-1' });
  const run = (dryRun: boolean, audit: ReplayAuditRecord[], sleep = jest.fn(() => Promise.resolve())) => ({
    jobType: jobType('payment.capture'),
    sourceUrl: 'https://sqs/src.fifo',
    dlqUrl: 'https://sqs/dlq.fifo',
    dryRun,
    ratePerSecond: 1000,
    actor: 'tester',
    stage: 'unit',
    now: () => NOW,
    audit: (r: ReplayAuditRecord) => audit.push(r),
    sleep,
  });
  const messages = [
    deadLetter({ messageId: 'done', receiptHandle: 'rh-done', body: paymentBody('o-1', 'p-1') }),
    deadLetter({
      messageId: 'todo',
      receiptHandle: 'rh-todo',
      body: paymentBody('o-2', 'p-2'),
      groupId: 'o-2',
    }),
    deadLetter({ messageId: 'other', receiptHandle: 'rh-other', errorClass: 'ValidationError' }),
    deadLetter({ messageId: 'poison', receiptHandle: 'rh-poison', body: '{"not": "a job"' }),
  ];
  const effect = (job: JobEnvelope<string>): Promise<EffectCheck> =>
    Promise.resolve(
      (job as JobEnvelope<'payment.capture'>).payload.orderId === 'o-1'
        ? { done: true, evidence: 'order o-1 is already PAID' }
        : { done: false },
    );
  const filter = { errorClasses: ['ProviderUnavailableError'], since: undefined };

  it('when run for real, it deletes the done job, re-sends the other to its group with a fresh dedup id, and releases the rest', async () => {
    // Prepare
    const audit: ReplayAuditRecord[] = [];
    const plan = await planReplay(jobType('payment.capture'), messages, filter, effect);

    // Act
    const outcomes = await executeReplay(sqs, plan, run(false, audit));

    // Assess
    expect(outcomes.map((o) => [o.message.messageId, o.outcome])).toEqual([
      ['done', 'skipped-already-done'],
      ['todo', 'replayed'],
      ['other', 'skipped-filtered'],
      ['poison', 'failed'],
    ]);
    expect(sqsMock).toHaveReceivedCommandTimes(SendMessageCommand, 1);
    const sent = sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input;
    expect(sent).toMatchObject({
      QueueUrl: 'https://sqs/src.fifo',
      MessageGroupId: 'o-2',
      MessageBody: paymentBody('o-2', 'p-2'),
    });
    expect(sent?.MessageDeduplicationId).toMatch(/^replay-/);
    expect(sqsMock.commandCalls(DeleteMessageCommand).map((c) => c.args[0].input.ReceiptHandle)).toEqual([
      'rh-done',
      'rh-todo',
    ]);
    expect(sqsMock).toHaveReceivedCommandWith(ChangeMessageVisibilityBatchCommand, {
      Entries: [
        { Id: '0', ReceiptHandle: 'rh-other', VisibilityTimeout: 0 },
        { Id: '1', ReceiptHandle: 'rh-poison', VisibilityTimeout: 0 },
      ],
    });
    expect(summarize(outcomes)).toEqual({
      replayed: 1,
      'skipped-already-done': 1,
      'skipped-filtered': 1,
      failed: 1,
    });
    expect(audit.map((a) => [a.messageId, a.decision, a.actor, a.dryRun])).toEqual([
      ['done', 'skip-already-done', 'tester', false],
      ['todo', 'replay', 'tester', false],
      ['other', 'skip-filtered', 'tester', false],
      ['poison', 'fail', 'tester', false],
    ]);
  });

  it('when it is a dry run, it sends and deletes nothing and makes every message visible again', async () => {
    // Prepare
    const audit: ReplayAuditRecord[] = [];
    const plan = await planReplay(jobType('payment.capture'), messages, filter, effect);

    // Act
    const outcomes = await executeReplay(sqs, plan, run(true, audit));

    // Assess
    expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
    expect(sqsMock).not.toHaveReceivedCommand(DeleteMessageCommand);
    expect(sqsMock.commandCalls(ChangeMessageVisibilityBatchCommand)[0]?.args[0].input.Entries).toHaveLength(
      4,
    );
    expect(summarize(outcomes)).toEqual({
      replayed: 1,
      'skipped-already-done': 1,
      'skipped-filtered': 1,
      failed: 1,
    });
    expect(audit.every((a) => a.dryRun)).toBe(true);
  });

  it('when sending fails, the message counts as failed, is not deleted and becomes visible again', async () => {
    // Prepare
    sqsMock.on(SendMessageCommand).rejects(new Error('throttled'));
    const plan = await planReplay(
      jobType('payment.capture'),
      [messages[1] as ReceivedDeadLetter],
      filter,
      effect,
    );

    // Act
    const outcomes = await executeReplay(sqs, plan, run(false, []));

    // Assess
    expect(outcomes[0]).toMatchObject({ outcome: 'failed', error: 'Error: throttled' });
    expect(sqsMock).not.toHaveReceivedCommand(DeleteMessageCommand);
    expect(sqsMock).toHaveReceivedCommandTimes(ChangeMessageVisibilityBatchCommand, 1);
  });

  it('when the rate is 2/s, it waits between sends', async () => {
    // Prepare
    const sleep = jest.fn(() => Promise.resolve());
    const many = [1, 2, 3].map((n) =>
      deadLetter({
        messageId: `m${n}`,
        receiptHandle: `rh${n}`,
        body: paymentBody(`o-${n + 10}`, `p-${n + 10}`),
      }),
    );
    const plan = await planReplay(
      jobType('payment.capture'),
      many,
      { errorClasses: [], since: undefined },
      () => Promise.resolve({ done: false }),
    );

    // Act
    await executeReplay(sqs, plan, { ...run(false, [], sleep), ratePerSecond: 2 });

    // Assess
    expect(sleep).toHaveBeenCalledTimes(2);
    for (const [ms] of sleep.mock.calls as unknown as [number][]) expect(ms).toBeGreaterThan(400);
  });
});
