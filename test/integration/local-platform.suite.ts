/**
 * The local platform end to end: the app deployed into moto by `cdk deploy`, its bundled
 * functions run by the local Lambda service, driven through the HTTP API and the queues.
 * On the platform shared-platform.test.ts shares between suites; every test uses its own orders.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { DynamoDbInventoryStore } from '../../examples/reference/domain/dynamodb-inventory-store';
import { pauseFlagName } from '../../lib/config';
import { makeEnvelope } from '../../lib/core/envelope';
import type { LocalPlatform } from '../../lib/local/platform';
import { streamRecord } from '../helpers/dynamodb-stream';
import { until as pollUntil } from '../../lib/drills/drill';
import type { SharedPlatform } from '../helpers/shared-platform';

/** The drills' poll, with these suites' 30 s deadline. */
const until = <T>(probe: () => Promise<T | undefined>, what: string, deadlineMs = 30_000): Promise<T> =>
  pollUntil(probe, what, deadlineMs);

/** Registers the suite on the platform `shared` gives. */
export function describeLocalPlatform(shared: () => SharedPlatform): void {
  describe('Class: LocalPlatform (moto + Redis, bundled functions)', () => {
    let platform: LocalPlatform;
    let sqs: SQSClient;
    let ddb: DynamoDBClient;
    let ssm: SSMClient;
    const stage = 'dev';
    const table = (name: string): string => `tenang-${stage}-${name}`;
    const queueUrl = (name: string): string => {
      const m = platform.deployment.sqsMappings.find((s) => s.queueUrl.endsWith(`/tenang-${stage}-${name}`));
      if (m === undefined) throw new Error(`no mapping for queue ${name}`);
      return m.queueUrl;
    };
    const dlqUrl = (name: string): string =>
      queueUrl(name).replace(
        `tenang-${stage}-${name}`,
        `tenang-${stage}-${name.replace('.fifo', '')}-dlq${name.endsWith('.fifo') ? '.fifo' : ''}`,
      );

    async function post(
      path: string,
      body: unknown,
      headers: Record<string, string> = {},
    ): Promise<{ status: number; body: Record<string, unknown> }> {
      const r = await fetch(`${platform.api.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    }

    async function newOrder(sku: string, amountMinor = 1500): Promise<string> {
      const created = await post('/orders', {
        customerEmail: 'buyer@example.com',
        lines: [{ sku, quantity: 1 }],
        amountMinor,
        currency: 'EUR',
      });
      expect(created.status).toBe(201);
      return String(created.body.orderId);
    }

    async function orderState(orderId: string): Promise<string | undefined> {
      const { Item } = await ddb.send(
        new GetItemCommand({ TableName: table('orders'), Key: { orderId: { S: orderId } } }),
      );
      return Item?.state?.S;
    }

    async function queueDepth(url: string): Promise<number> {
      const { Attributes = {} } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return (
        Number(Attributes.ApproximateNumberOfMessages) +
        Number(Attributes.ApproximateNumberOfMessagesNotVisible)
      );
    }

    beforeAll(async () => {
      ({ platform } = shared());
      const config = { endpoint: platform.env.endpoint, region: platform.env.region };
      sqs = new SQSClient({ ...config, useQueueUrlAsEndpoint: false });
      ddb = new DynamoDBClient(config);
      ssm = new SSMClient(config);
      await new DynamoDbInventoryStore(ddb, table('inventory')).seed('sku-platform', 1_000);
    });

    afterAll(async () => {
      for (const c of [sqs, ddb, ssm]) c?.destroy();
    });

    it('when a payment is posted to the HTTP API, it is captured once and the order, cache, notification and stock follow', async () => {
      // Prepare
      const orderId = await newOrder('sku-platform');
      const key = `pay-${randomUUID()}`;

      // Act
      const accepted = await post(
        `/orders/${orderId}/payments`,
        { paymentId: key, amountMinor: 1500, currency: 'EUR' },
        { 'idempotency-key': key },
      );
      await until(
        async () => ((await orderState(orderId)) === 'PAID' ? true : undefined),
        'the order to be PAID',
      );
      const read = await until(async () => {
        const r = await fetch(`${platform.api.url}/orders/${orderId}`);
        const body = (await r.json()) as { state?: string };
        return body.state === 'PAID' ? r : undefined;
      }, 'the cache to serve PAID');
      await until(
        async () =>
          platform.providers.messaging.ledger().some((e) => JSON.stringify(e.body).includes(orderId))
            ? true
            : undefined,
        'the order-paid notification',
      );

      // Assess
      expect(accepted.status).toBe(202);
      expect(read.status).toBe(200);
      expect(platform.providers.payment.ledger().filter((e) => e.idempotencyKey.includes(key))).toHaveLength(
        1,
      );
    });

    it('when a batch holds a poison message, only it goes to the DLQ, on its first attempt, and its batch-mates are processed', async () => {
      // Prepare
      const orderId = `o-${randomUUID()}`;
      const good = (template: 'order-paid' | 'order-shipped' | 'payment-failed') =>
        JSON.stringify(
          makeEnvelope(
            'notification.send',
            { orderId, template, recipient: 'buyer@example.com', orderVersion: 1 },
            {
              idempotencyKey: `${orderId}:${template}`,
              correlationId: orderId,
              now: new Date(),
            },
          ),
        );

      // Act
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl('notification-send'),
          Entries: [
            { Id: 'a', MessageBody: good('order-paid') },
            { Id: 'poison', MessageBody: '{"not": "a job"' },
            { Id: 'b', MessageBody: good('order-shipped') },
          ],
        }),
      );
      const dead = await until(async () => {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: dlqUrl('notification-send'),
            MessageAttributeNames: ['All'],
            WaitTimeSeconds: 1,
          }),
        );
        return Messages.find((m) => m.Body === '{"not": "a job"');
      }, 'the poison message in the DLQ');
      await until(
        async () =>
          platform.providers.messaging.ledger().filter((e) => JSON.stringify(e.body).includes(orderId))
            .length === 2
            ? true
            : undefined,
        'both good notifications',
      );

      // Assess
      expect(dead.MessageAttributes?.['tenang-error-class']?.StringValue).toBe('ValidationError');
      expect(dead.MessageAttributes?.['tenang-attempts']?.StringValue).toBe('1');
    });

    it('when one FIFO group fails, only that group waits; another group in the same queue goes through', async () => {
      // Prepare
      const blocked = await newOrder('sku-platform', 700);
      const free = await newOrder('sku-platform', 800);
      const blockedKey = `pay-${randomUUID()}`;
      platform.providers.payment.set({ failingKeys: [`payment:${blockedKey}:capture`] });

      // Act
      await post(
        `/orders/${blocked}/payments`,
        { paymentId: blockedKey, amountMinor: 700, currency: 'EUR' },
        { 'idempotency-key': blockedKey },
      );
      const freeKey = `pay-${randomUUID()}`;
      await post(
        `/orders/${free}/payments`,
        { paymentId: freeKey, amountMinor: 800, currency: 'EUR' },
        { 'idempotency-key': freeKey },
      );
      await until(
        async () => ((await orderState(free)) === 'PAID' ? true : undefined),
        'the free group to be PAID',
      );
      const stillPending = await orderState(blocked);
      platform.providers.payment.set({ failingKeys: [] });
      await until(
        async () => ((await orderState(blocked)) === 'PAID' ? true : undefined),
        'the blocked group after the provider recovers',
        60_000,
      );

      // Assess
      expect(stillPending).toBe('PENDING');
    });

    it('when crash points are armed until reached, an invocation that never reaches them does not use up the crash', async () => {
      // Prepare: a record the invalidator skips (unknown entity: no invalidation, the point is not
      // reached) and order changes it invalidates (the point is right after the first key).
      const invalidator = platform.functionNamed('cache-invalidator');
      const skipped = {
        Records: [
          streamRecord({
            eventName: 'INSERT',
            keys: { id: 'x' },
            newImage: { id: 'x' },
            sequenceNumber: '1',
          }),
        ],
      };
      const change = (orderId: string, sequenceNumber: string) => ({
        Records: [
          streamRecord({
            eventName: 'MODIFY',
            keys: { orderId },
            oldImage: { orderId, version: 1, state: 'PENDING' },
            newImage: { orderId, version: 2, state: 'PAID' },
            sequenceNumber,
          }),
        ],
      });

      // Act: the plain arming is spent by the skipped record; the until-reached one is not.
      platform.crashInvocations(invalidator, ['during-invalidation'], 1);
      const plain = [
        await platform.invoke(invalidator, skipped),
        await platform.invoke(invalidator, change(`o-${randomUUID()}`, '2')),
      ];
      platform.crashInvocations(invalidator, ['during-invalidation'], 1, { untilReached: true });
      const untilReached = [
        await platform.invoke(invalidator, skipped),
        await platform.invoke(invalidator, change(`o-${randomUUID()}`, '3')),
        await platform.invoke(invalidator, change(`o-${randomUUID()}`, '4')),
      ];
      platform.crashInvocations(invalidator, [], 0);

      // Assess
      expect(plain.map((r) => r.status)).toEqual(['ok', 'ok']);
      expect(untilReached.map((r) => r.status)).toEqual(['ok', 'crash', 'ok']);
    });

    it('when a function runs past its timeout, the Lambda service kills it and the message comes back after the visibility timeout', async () => {
      // Prepare: a visibility timeout just above the 30 s function timeout keeps the test short.
      const orderId = await newOrder('sku-platform', 900);
      const key = `pay-${randomUUID()}`;
      await sqs.send(
        new SetQueueAttributesCommand({
          QueueUrl: queueUrl('payment-capture.fifo'),
          Attributes: { VisibilityTimeout: '32' },
        }),
      );
      // The local Lambda service re-reads the queue's visibility timeout every 5 s, as a poller would.
      await new Promise((r) => setTimeout(r, 6_000));
      platform.crashNextInvocation(platform.functionNamed('payment-consumer'), ['hang:before-side-effect']);
      const payments = platform.sqsSources.find((s) => s.spec.functionName.endsWith('payment-consumer'));
      const errorsBefore = payments?.stats.invocationErrors ?? 0;

      // Act
      await post(
        `/orders/${orderId}/payments`,
        { paymentId: key, amountMinor: 900, currency: 'EUR' },
        { 'idempotency-key': key },
      );
      await until(
        async () => ((payments?.stats.invocationErrors ?? 0) > errorsBefore ? true : undefined),
        'the timeout',
        45_000,
      );
      const afterTimeout = await orderState(orderId);
      await until(
        async () => ((await orderState(orderId)) === 'PAID' ? true : undefined),
        'the redelivery',
        60_000,
      );

      // Assess
      expect(afterTimeout).toBe('PENDING');
      expect(platform.providers.payment.ledger().filter((e) => e.idempotencyKey.includes(key))).toHaveLength(
        1,
      );
    });

    it('when a stream record keeps failing, bisection isolates it and it lands in the on-failure queue while its neighbours are relayed', async () => {
      // Prepare: a PAID order whose image is not a valid order (the relay must not drop its follow-ups silently).
      const bad = `bad-${randomUUID()}`;
      const relay = platform.streamSources.find((s) => s.spec.functionName.endsWith('outbox-relay'));
      const sentBefore = relay?.stats.sentToOnFailure ?? 0;

      // Act
      await ddb.send(
        new PutItemCommand({
          TableName: table('orders'),
          Item: { orderId: { S: bad }, state: { S: 'PENDING' }, version: { N: '0' } },
        }),
      );
      await ddb.send(
        new PutItemCommand({
          TableName: table('orders'),
          Item: { orderId: { S: bad }, state: { S: 'PAID' }, version: { N: '1' } },
        }),
      );
      await until(
        async () => ((relay?.stats.sentToOnFailure ?? 0) > sentBefore ? true : undefined),
        'the on-failure record',
        60_000,
      );
      const onFailureUrl = relay?.spec.onFailureQueueUrl ?? '';
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: onFailureUrl, WaitTimeSeconds: 2 }),
      );

      // Assess
      expect(Messages.length).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(Messages[0]?.Body ?? '{}')).toMatchObject({ DDBStreamBatchInfo: { batchSize: 1 } });
    });

    it('when a consumer is paused through its flag, its queue holds the work; when resumed, the work is done', async () => {
      // Prepare
      const consumer = 'notification-consumer';
      const orderId = `o-${randomUUID()}`;
      const mapping = platform.deployment.sqsMappings.find((m) => m.functionName.endsWith(consumer));
      const body = JSON.stringify(
        makeEnvelope(
          'notification.send',
          { orderId, template: 'order-paid', recipient: 'buyer@example.com', orderVersion: 1 },
          {
            idempotencyKey: `${orderId}:order-paid`,
            correlationId: orderId,
            now: new Date(),
          },
        ),
      );

      // Act
      await ssm.send(
        new PutParameterCommand({
          Name: pauseFlagName(stage, consumer),
          Value: JSON.stringify({
            paused: true,
            reason: 'integration test',
            until: new Date(Date.now() + 600_000).toISOString(),
          }),
          Type: 'String',
          Overwrite: true,
        }),
      );
      await until(
        async () => (mapping !== undefined && !platform.control.isEnabled(mapping.uuid) ? true : undefined),
        'the mapping to be disabled',
      );
      // Disabling is not instantaneous on AWS either: a receive already in flight may still deliver.
      await new Promise((r) => setTimeout(r, 3_000));
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl('notification-send'),
          Entries: [{ Id: 'held', MessageBody: body }],
        }),
      );
      await new Promise((r) => setTimeout(r, 3_000));
      const heldDepth = await queueDepth(queueUrl('notification-send'));
      const sentWhilePaused = platform.providers.messaging
        .ledger()
        .filter((e) => JSON.stringify(e.body).includes(orderId)).length;
      await ssm.send(
        new PutParameterCommand({
          Name: pauseFlagName(stage, consumer),
          Value: JSON.stringify({ paused: false }),
          Type: 'String',
          Overwrite: true,
        }),
      );
      await until(
        async () =>
          platform.providers.messaging.ledger().some((e) => JSON.stringify(e.body).includes(orderId))
            ? true
            : undefined,
        'the held notification after resuming',
      );

      // Assess
      expect(heldDepth).toBeGreaterThanOrEqual(1);
      expect(sentWhilePaused).toBe(0);
    });
  });
}
