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
import { makeEnvelope, type JobEnvelope } from '../../../lib/core/envelope';
import { decideReplay, filteredOut, type DeadLetter, type EffectCheck } from '../../../lib/core/replay';
import type { ReceivedDeadLetter } from '../../../lib/ops/dlq/messages';
import { executeReplay, planReplay, summarize, type ReplayAuditRecord } from '../../../lib/ops/dlq/replay';
import { DynamoDbEffectChecker, jobIdempotencyRecordId } from '../../../lib/ops/replay-effects';

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
  const checker = (): DynamoDbEffectChecker =>
    new DynamoDbEffectChecker(
      new DynamoDBClient({ region: 'eu-west-1' }),
      { idempotency: 'idem' },
      () => NOW,
    );
  /** A job of a job type the kit knows only by its declaration. */
  const invoiceJob = (idempotencyKey: string): JobEnvelope =>
    makeEnvelope('invoice.issue', { invoiceId: 'inv-1' }, { idempotencyKey, correlationId: 'c', now: NOW });
  const recordOf = (status: string, expiresInSeconds = 60) => ({
    Item: { status: { S: status }, expiration: { N: String(NOW.getTime() / 1000 + expiresInSeconds) } },
  });

  it.each([
    ['invoice.issue', 'inv-9'],
    [paymentCapture.name, 'payment:p-9:capture'],
  ])(
    'when computing the record id of a %s job, it is what Powertools stores for the job runner',
    (type, key) => {
      // Prepare: the runner keys a job module's records on its job type.
      class Exposed extends DynamoDBPersistenceLayer {
        public key(data: unknown): string {
          return this.getHashedIdempotencyKey(data as never);
        }
      }
      const layer = new Exposed({ tableName: 'idem' });
      layer.configure({
        config: new IdempotencyConfig({ eventKeyJmesPath: 'idempotencyKey' }),
        keyPrefix: jobIdempotencyKeyPrefix(type),
      });

      // Act
      const expected = layer.key({ idempotencyKey: key, payload: {} });

      // Assess
      expect(jobIdempotencyRecordId(type, key)).toBe(expected);
    },
  );

  it('when the job’s idempotency record is COMPLETED, the job is done, and only the idempotency table was read', async () => {
    // Prepare
    ddbMock
      .on(GetItemCommand, {
        TableName: 'idem',
        Key: { id: { S: jobIdempotencyRecordId('invoice.issue', 'k-1') } },
      })
      .resolves(recordOf('COMPLETED'));

    // Act
    const check = await checker().check(invoiceJob('k-1'));

    // Assess
    expect(check).toEqual({ done: true, evidence: 'idempotency record of invoice.issue k-1 is COMPLETED' });
    expect(ddbMock).toHaveReceivedCommandTimes(GetItemCommand, 1);
    expect(ddbMock).toHaveReceivedCommandWith(GetItemCommand, { TableName: 'idem', ConsistentRead: true });
  });

  it.each([
    ['INPROGRESS', recordOf('INPROGRESS')],
    ['COMPLETED but past its expiry', recordOf('COMPLETED', -60)],
    ['absent', {}],
  ])('when the record is %s, the job is not done', async (_what, answer) => {
    // Prepare
    ddbMock.on(GetItemCommand, { TableName: 'idem' }).resolves(answer);

    // Act
    const check = await checker().check(invoiceJob('k-2'));

    // Assess
    expect(check).toEqual({ done: false });
  });

  it('when a job type keeps no record there (the reference capture keeps it on its order), its job is not done: the consumer’s guard decides', async () => {
    // Prepare: the order is PAID and holds the capture's COMPLETED record; the checker reads neither.
    ddbMock.on(GetItemCommand, { TableName: 'idem' }).resolves({});
    ddbMock.on(GetItemCommand, { TableName: 'orders' }).resolves({
      Item: { state: { S: 'PAID' }, idempotency: { M: { status: { S: 'COMPLETED' } } } },
    });

    // Act
    const check = await checker().check(JSON.parse(paymentBody('o-1', 'p-1')) as JobEnvelope);

    // Assess
    expect(check).toEqual({ done: false });
    expect(ddbMock).not.toHaveReceivedCommandWith(GetItemCommand, { TableName: 'orders' });
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
  const effect = (job: JobEnvelope): Promise<EffectCheck> =>
    Promise.resolve(
      (job as JobEnvelope<{ orderId: string }>).payload.orderId === 'o-1'
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

  it('when a valid envelope carries a payload its consumer would refuse, it is decided on its effect: the CLI checks the envelope, the consumer the payload', async () => {
    // Prepare
    const body = JSON.stringify(
      makeEnvelope('payment.capture', { orderId: 7 }, { idempotencyKey: 'k', correlationId: 'c', now: NOW }),
    );
    const notAnEnvelope = JSON.stringify({ type: 'payment.capture', payload: {} });

    // Act
    const plan = await planReplay(
      jobType('payment.capture'),
      [deadLetter({ messageId: 'odd', body }), deadLetter({ messageId: 'bad', body: notAnEnvelope })],
      { errorClasses: [], since: undefined },
      () => Promise.resolve({ done: false }),
    );

    // Assess
    expect(plan.map((p) => [p.message.messageId, p.decision.action])).toEqual([
      ['odd', 'replay'],
      ['bad', 'fail'],
    ]);
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
