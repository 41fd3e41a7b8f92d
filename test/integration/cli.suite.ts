/**
 * The `tenang` CLI against the whole local platform (moto, the bundled functions, the
 * Lambda control plane): pause and resume, status, DLQ list and replay. Driven through `run()`
 * with the platform's endpoints in process.env, on the platform shared-platform.test.ts shares.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { GetItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetEventSourceMappingCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SendMessageCommand,
  SQSClient,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import { GetParameterCommand, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { runCaptured, type CapturedRun } from '../../bin/tenang';
import { DLQ_ATTRIBUTE } from '../../lib/adapters/aws/sqs-job-runner';
import { makeEnvelope } from '../../lib/core/envelope';
import type { LocalPlatform } from '../../lib/local/platform';
import { until as pollUntil } from '../../lib/drills/drill';
import type { SharedPlatform } from '../helpers/shared-platform';

const STAGE = 'dev';

/** The drills' poll, with these suites' 30 s deadline. */
const until = <T>(probe: () => Promise<T | undefined>, what: string, deadlineMs = 30_000): Promise<T> =>
  pollUntil(probe, what, deadlineMs);

/** Registers the suite on the platform `shared` gives. */
export function describeCli(shared: () => SharedPlatform): void {
  describe('CLI: tenang (whole local platform)', () => {
    let platform: LocalPlatform;
    let sqs: SQSClient;
    let ddb: DynamoDBClient;
    let ssm: SSMClient;
    let auditDir: string;
    let savedEnv: NodeJS.ProcessEnv = {};

    function cli(...argv: string[]): Promise<CapturedRun> {
      return runCaptured(argv);
    }

    async function url(queueName: string): Promise<string> {
      const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: queueName }));
      if (QueueUrl === undefined) throw new Error(`no queue ${queueName}`);
      return QueueUrl;
    }

    async function counts(queueName: string): Promise<{ visible: number; hidden: number }> {
      const { Attributes: a = {} } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: await url(queueName),
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return {
        visible: Number(a.ApproximateNumberOfMessages),
        hidden: Number(a.ApproximateNumberOfMessagesNotVisible),
      };
    }

    const mappingUuid = (consumer: string): string => {
      const m = platform.deployment.sqsMappings.find((s) => s.functionName.endsWith(`-${consumer}`));
      if (m === undefined) throw new Error(`no mapping of ${consumer}`);
      return m.uuid;
    };

    const messagesFor = (orderId: string): number =>
      platform.providers.messaging.ledger().filter((e) => JSON.stringify(e.body).includes(orderId)).length;

    function notificationJob(orderId: string): string {
      return JSON.stringify(
        makeEnvelope(
          'notification.send',
          { orderId, template: 'order-shipped', recipient: 'buyer@example.com', orderVersion: 2 },
          {
            idempotencyKey: `notification:${orderId}:order-shipped`,
            correlationId: `c-${orderId}`,
            now: new Date(),
          },
        ),
      );
    }

    /** The attributes the job runner puts on a dead-lettered message. */
    function deadLetterAttributes(
      errorClass: string,
      correlationId: string,
    ): Record<string, MessageAttributeValue> {
      const now = new Date().toISOString();
      const s = (v: string): MessageAttributeValue => ({ DataType: 'String', StringValue: v });
      return {
        [DLQ_ATTRIBUTE.errorClass]: s(errorClass),
        [DLQ_ATTRIBUTE.errorKind]: s('transient'),
        [DLQ_ATTRIBUTE.errorMessage]: s('provider failed on every attempt'),
        [DLQ_ATTRIBUTE.attempts]: { DataType: 'Number', StringValue: '4' },
        [DLQ_ATTRIBUTE.firstFailureAt]: s(now),
        [DLQ_ATTRIBUTE.lastFailureAt]: s(now),
        [DLQ_ATTRIBUTE.correlationId]: s(correlationId),
      };
    }

    beforeAll(async () => {
      ({ platform } = shared());
      savedEnv = { ...process.env };
      process.env.AWS_ENDPOINT_URL_LAMBDA = platform.control.url;
      process.env.TENANG_STAGE = STAGE;
      process.env.TENANG_ACTOR = 'jest';
      const config = { endpoint: platform.env.endpoint, region: platform.env.region };
      sqs = new SQSClient({ ...config, useQueueUrlAsEndpoint: false });
      ddb = new DynamoDBClient(config);
      ssm = new SSMClient(config);
      auditDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-cli-audit-'));
    });

    afterAll(async () => {
      for (const c of [sqs, ddb, ssm]) c?.destroy();
      process.env = savedEnv;
      if (auditDir !== undefined) fs.rmSync(auditDir, { recursive: true, force: true });
    });

    it('when a consumer is paused, its mapping is Disabled and its queue holds work; status shows the reason; resume drains it', async () => {
      // Prepare
      const orderId = `o-${randomUUID()}`;
      const uuid = mappingUuid('notification-consumer');

      // Act
      const paused = await cli(
        'pause',
        'notification-consumer',
        '--reason',
        'messaging provider outage',
        '--for',
        '30m',
      );
      const enabledAfterPause = platform.control.isEnabled(uuid);
      // No wait: pause returns once the mapping is Disabled, i.e. once no poll is left waiting.
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: await url('tenang-dev-notification-send'),
          MessageBody: notificationJob(orderId),
        }),
      );
      await new Promise((r) => setTimeout(r, 4_000));
      const held = await counts('tenang-dev-notification-send');
      const sentWhilePaused = messagesFor(orderId);
      const status = await cli('status', '--json');
      const resumed = await cli('resume', 'notification-consumer');
      await until(
        async () => (messagesFor(orderId) === 1 ? true : undefined),
        'the held notification to be sent',
      );
      const drained = await until(async () => {
        const c = await counts('tenang-dev-notification-send');
        return c.visible + c.hidden === 0 ? c : undefined;
      }, 'the queue to drain');

      // Assess
      expect(paused).toMatchObject({ code: 0, err: '' });
      expect(enabledAfterPause).toBe(false);
      expect(held.visible + held.hidden).toBeGreaterThanOrEqual(1);
      expect(sentWhilePaused).toBe(0);
      expect(status.code).toBe(0);
      const consumers = (JSON.parse(status.out) as { consumers: Record<string, unknown>[] }).consumers;
      expect(consumers.find((c) => c.consumer === 'notification-consumer')).toMatchObject({
        paused: true,
        pauseReason: 'messaging provider outage',
        pauseSetBy: 'jest',
        pauseOverdue: false,
        mappingState: 'Disabled',
        drift: false,
        // Notifications expire into their side queue (B5): none has, so it holds nothing.
        expiredDepth: 0,
      });
      // Payments never expire: no side queue, no figure.
      expect(consumers.find((c) => c.consumer === 'payment-consumer')).not.toHaveProperty('expiredDepth');
      expect(consumers.find((c) => c.consumer === 'payment-consumer')).toMatchObject({
        paused: false,
        mappingState: 'Enabled',
        // A quiet consumer: none of its alarms is in ALARM (moto ignores the state filter by prefix).
        alarms: [],
      });
      expect(resumed.code).toBe(0);
      expect(platform.control.isEnabled(uuid)).toBe(true);
      expect(drained).toEqual({ visible: 0, hidden: 0 });
      expect(messagesFor(orderId)).toBe(1);
    });

    it('when pause returns, the control plane reports the mapping Disabled', async () => {
      // Prepare
      const uuid = mappingUuid('inventory-consumer');
      const lambda = new LambdaClient({ endpoint: platform.control.url, region: platform.env.region });

      // Act
      const paused = await cli('pause', 'inventory-consumer', '--reason', 'stock migration', '--for', '1h');
      const { State: whilePaused } = await lambda.send(new GetEventSourceMappingCommand({ UUID: uuid }));
      const resumed = await cli('resume', 'inventory-consumer');
      const { State: afterResume } = await lambda.send(new GetEventSourceMappingCommand({ UUID: uuid }));
      lambda.destroy();

      // Assess
      expect(paused.code).toBe(0);
      expect(whilePaused).toBe('Disabled');
      expect(resumed.code).toBe(0);
      expect(afterResume).toBe('Enabled');
    });

    it('when the consumer is unknown or needed for recovery, pause is a usage error and writes no flag', async () => {
      // Act
      const unknown = await cli('pause', 'nobody', '--reason', 'x', '--for', '5m');
      const recovery = await cli('pause', 'outbox-relay', '--reason', 'x', '--for', '5m');
      const noReason = await cli('pause', 'payment-consumer', '--for', '5m');
      const flag = await ssm
        .send(new GetParameterCommand({ Name: `/tenang/${STAGE}/flags/pause/outbox-relay` }))
        .then((r) => r.Parameter?.Value)
        .catch((error: unknown) => (error instanceof ParameterNotFound ? undefined : Promise.reject(error)));

      // Assess
      expect(unknown.code).toBe(2);
      expect(unknown.err).toContain(
        'payment-consumer, notification-consumer, inventory-consumer, cache-invalidator, outbox-relay',
      );
      expect(recovery.code).toBe(2);
      expect(recovery.err).toContain('needed for recovery');
      expect(noReason.code).toBe(2);
      expect(noReason.err).toContain('--reason');
      expect(flag === undefined || (JSON.parse(flag) as { paused: boolean }).paused === false).toBe(true);
    });

    it('when a poison message is in a DLQ, dlq list shows it without consuming it', async () => {
      // Prepare
      const marker = randomUUID();
      const body = `{"poison": "${marker}"`;
      await sqs.send(
        new SendMessageCommand({ QueueUrl: await url('tenang-dev-inventory-reserve'), MessageBody: body }),
      );
      await until(async () => {
        const c = await counts('tenang-dev-inventory-reserve-dlq');
        return c.visible >= 1 ? true : undefined;
      }, 'the poison message in the DLQ');

      // Act
      const listed = await cli('dlq', 'list', 'inventory.reserve', '--json');
      const table = await cli('dlq', 'list', 'inventory.reserve');
      const after = await counts('tenang-dev-inventory-reserve-dlq');

      // Assess
      expect(listed.code).toBe(0);
      const messages = (JSON.parse(listed.out) as { messages: Record<string, unknown>[] }).messages;
      const poison = messages.find((m) => String(m.body).includes(marker));
      expect(poison).toMatchObject({ errorClass: 'ValidationError', attempts: 1 });
      expect(table.code).toBe(0);
      expect(table.out).toContain('ValidationError');
      expect(after).toEqual({ visible: messages.length, hidden: 0 });
    });

    it('when replaying, a dry run changes nothing; a real run sends back a payment already PAID, which its consumer drops without charging, and a failed notification, each effect once', async () => {
      // Prepare: an order captured through the API, whose capture job is also in the DLQ.
      const created = await fetch(`${platform.api.url}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          customerEmail: 'buyer@example.com',
          lines: [{ sku: 'sku-cli', quantity: 1 }],
          amountMinor: 1500,
          currency: 'EUR',
        }),
      });
      const orderId = String(((await created.json()) as { orderId: string }).orderId);
      const paymentId = `pay-${randomUUID()}`;
      const paid = await fetch(`${platform.api.url}/orders/${orderId}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': paymentId },
        body: JSON.stringify({ paymentId, amountMinor: 1500, currency: 'EUR' }),
      });
      expect(paid.status).toBe(202);
      await until(async () => {
        const { Item } = await ddb.send(
          new GetItemCommand({ TableName: 'tenang-dev-orders', Key: { orderId: { S: orderId } } }),
        );
        return Item?.state?.S === 'PAID' ? true : undefined;
      }, 'the order to be PAID');
      const charges = (): number =>
        platform.providers.payment.ledger().filter((e) => e.idempotencyKey === `payment:${paymentId}:capture`)
          .length;
      expect(charges()).toBe(1);
      const paymentJob = makeEnvelope(
        'payment.capture',
        { orderId, paymentId, amountMinor: 1500, currency: 'EUR' },
        { idempotencyKey: `payment:${paymentId}:capture`, correlationId: `c-${orderId}`, now: new Date() },
      );
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: await url('tenang-dev-payment-capture-dlq.fifo'),
          MessageBody: JSON.stringify(paymentJob),
          MessageGroupId: orderId,
          MessageDeduplicationId: randomUUID(),
          MessageAttributes: deadLetterAttributes('ProviderUnavailableError', `c-${orderId}`),
        }),
      );
      // A notification whose provider failed on every attempt: its effect never happened.
      const notifyOrder = `o-${randomUUID()}`;
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: await url('tenang-dev-notification-send-dlq'),
          MessageBody: notificationJob(notifyOrder),
          MessageAttributes: deadLetterAttributes('ProviderUnavailableError', `c-${notifyOrder}`),
        }),
      );
      const before = {
        payments: await counts('tenang-dev-payment-capture-dlq.fifo'),
        notes: await counts('tenang-dev-notification-send-dlq'),
      };
      const audit = (name: string): string => path.join(auditDir, `${name}.jsonl`);

      // Act: dry runs
      const dryPayment = await cli(
        'dlq',
        'replay',
        'payment.capture',
        '--dry-run',
        '--json',
        '--audit-log',
        audit('dry-payment'),
      );
      const dryNotes = await cli(
        'dlq',
        'replay',
        'notification.send',
        '--dry-run',
        '--json',
        '--audit-log',
        audit('dry-notes'),
      );
      const afterDry = {
        payments: await counts('tenang-dev-payment-capture-dlq.fifo'),
        notes: await counts('tenang-dev-notification-send-dlq'),
      };
      await new Promise((r) => setTimeout(r, 2_000));
      const notesAfterDry = messagesFor(notifyOrder);

      // Act: without --yes and without a terminal, nothing happens
      const refused = await cli('dlq', 'replay', 'notification.send');

      // Act: the real replays
      const realPayment = await cli(
        'dlq',
        'replay',
        'payment.capture',
        '--yes',
        '--json',
        '--audit-log',
        audit('payment'),
      );
      const realNotes = await cli(
        'dlq',
        'replay',
        'notification.send',
        '--yes',
        '--rate',
        '10/s',
        '--json',
        '--audit-log',
        audit('notes'),
      );
      await until(
        async () => (messagesFor(notifyOrder) === 1 ? true : undefined),
        'the replayed notification to be sent',
      );
      const again = await cli(
        'dlq',
        'replay',
        'notification.send',
        '--yes',
        '--json',
        '--audit-log',
        audit('again'),
      );
      await new Promise((r) => setTimeout(r, 2_000));

      // Assess: the dry runs decided without changing anything
      type Replay = {
        summary: Record<string, number>;
        messages: { correlationId: string; outcome: string; reason: string }[];
      };
      expect(dryPayment.code).toBe(0);
      expect(dryNotes.code).toBe(0);
      const dp = JSON.parse(dryPayment.out) as Replay;
      // The capture keeps its idempotency record on its order, not on tenang's table: nothing there
      // says it is done, so it is replayed, and the consumer's guard (the order is PAID) drops it.
      expect(dp.messages.find((m) => m.correlationId === `c-${orderId}`)).toMatchObject({
        outcome: 'replayed',
        reason: 'no record says its effect happened',
      });
      const dn = JSON.parse(dryNotes.out) as Replay;
      expect(dn.messages.find((m) => m.correlationId === `c-${notifyOrder}`)).toMatchObject({
        outcome: 'replayed',
      });
      expect(afterDry).toEqual(before);
      expect(afterDry.notes.hidden + afterDry.payments.hidden).toBe(0);
      expect(notesAfterDry).toBe(0);
      expect(fs.readFileSync(audit('dry-notes'), 'utf8')).toContain('"dryRun":true');
      expect(refused.code).toBe(2);
      expect(refused.err).toContain('--yes');

      // Assess: the real runs
      expect(realPayment.code).toBe(0);
      const rp = JSON.parse(realPayment.out) as Replay;
      expect(rp.messages.find((m) => m.correlationId === `c-${orderId}`)?.outcome).toBe('replayed');
      expect(rp.summary.replayed).toBe(1);
      expect(realNotes.code).toBe(0);
      const rn = JSON.parse(realNotes.out) as Replay;
      expect(rn.messages.find((m) => m.correlationId === `c-${notifyOrder}`)?.outcome).toBe('replayed');
      expect(JSON.parse(again.out)).toMatchObject({ summary: { replayed: 0 } });
      // The replayed capture was consumed as a duplicate: off its queue, not back in the DLQ, no charge.
      await until(async () => {
        const q = await counts('tenang-dev-payment-capture.fifo');
        return q.visible + q.hidden === 0 ? true : undefined;
      }, 'the replayed capture to be consumed');
      expect(await counts('tenang-dev-payment-capture-dlq.fifo')).toEqual({ visible: 0, hidden: 0 });
      expect(await counts('tenang-dev-notification-send-dlq')).toEqual({ visible: 0, hidden: 0 });
      expect(charges()).toBe(1);
      expect(messagesFor(notifyOrder)).toBe(1);
      const lines = fs
        .readFileSync(audit('payment'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.find((l) => l.correlationId === `c-${orderId}`)).toMatchObject({
        actor: 'jest',
        decision: 'replay',
        outcome: 'replayed',
        dryRun: false,
      });
    });
  });
}
