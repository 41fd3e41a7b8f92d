/**
 * `tenang dlq list|replay outbox-relay` on the whole local platform (moto, the bundled
 * functions, the Lambda control plane serving Invoke): the outbox relay crashes on every paid
 * order until its mapping gives the batches up to the on-failure queue (metadata only); the CLI
 * lists them, dry-runs, then reads the records back from the stream and invokes the relay, and
 * each paid order ends up with exactly one notification and one reservation. The platform's moto
 * enforces DynamoDB Streams' two readers per shard (lib/local/moto_server.py): the two mappings
 * are never throttled alone, a third reader is, and the replay (a third reader) still succeeds,
 * reports its throttled reads, and leaves both consumers' iterator age bounded.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { SQSClient } from '@aws-sdk/client-sqs';
import { runCaptured, type CapturedRun } from '../../bin/tenang';
import { DynamoDbInventoryStore } from '../../examples/reference/domain/dynamodb-inventory-store';
import type { LocalPlatform } from '../../lib/local/platform';
import { readOrderStates } from '../../examples/reference/local/order-facts';
import type { StreamEventSource } from '../../lib/local/stream-event-source';
import { callApi } from '../../lib/local/traffic';
import { until } from '../../lib/drills/drill';
import { queueDepth } from '../../lib/drills/support';
import type { SharedPlatform } from '../helpers/shared-platform';

const STAGE = 'dev';
const STOCK = 1_000;

/** Registers the suite on the platform `shared` gives. */
export function describeCliStreamReplay(shared: () => SharedPlatform): void {
  describe('CLI: tenang dlq list|replay <stream-consumer> (whole local platform)', () => {
    let platform: LocalPlatform;
    let sqs: SQSClient;
    let ddb: DynamoDBClient;
    let auditDir: string;
    let savedEnv: NodeJS.ProcessEnv = {};

    function cli(...argv: string[]): Promise<CapturedRun> {
      return runCaptured(argv);
    }

    const deployedEnv = (consumer: string, name: string): string => {
      const value = platform.deployment.functions.get(platform.functionNamed(consumer))?.environment[name];
      if (value === undefined) throw new Error(`${consumer} has no ${name}`);
      return value;
    };

    const sourceOf = (consumer: string): StreamEventSource => {
      const fn = platform.functionNamed(consumer);
      const source = platform.streamSources.find((s) => s.spec.functionName === fn);
      if (source === undefined) throw new Error(`${fn} has no stream mapping`);
      return source;
    };

    /** Reads a shard of `streamArn` twice in a row as another process; what each read answered. */
    async function readAsThirdProcess(streamArn: string): Promise<string[]> {
      const third = new DynamoDBStreamsClient({
        endpoint: platform.env.endpoint,
        region: platform.env.region,
        credentials: { accessKeyId: 'third-reader', secretAccessKey: 'x' },
        maxAttempts: 1,
      });
      try {
        const { StreamDescription } = await third.send(new DescribeStreamCommand({ StreamArn: streamArn }));
        const shards = StreamDescription?.Shards ?? [];
        const { ShardIterator } = await third.send(
          new GetShardIteratorCommand({
            StreamArn: streamArn,
            ShardId: shards[shards.length - 1]?.ShardId,
            ShardIteratorType: 'LATEST',
          }),
        );
        const answers: string[] = [];
        for (let read = 0; read < 3; read += 1) {
          try {
            await third.send(new GetRecordsCommand({ ShardIterator }));
            answers.push('served');
          } catch (error) {
            answers.push((error as Error).name);
          }
        }
        return answers;
      } finally {
        third.destroy();
      }
    }

    const relaySource = (): StreamEventSource => {
      const fn = platform.functionNamed('outbox-relay');
      const source = platform.streamSources.find((s) => s.spec.functionName === fn);
      if (source?.spec.onFailureQueueUrl === undefined) throw new Error(`${fn} has no on-failure queue`);
      return source;
    };

    const depth = (queueUrl: string): ReturnType<typeof queueDepth> => queueDepth(sqs, queueUrl);

    const notificationsFor = (orderId: string): number =>
      platform.providers.messaging.ledger().filter((e) => JSON.stringify(e.body).includes(orderId)).length;

    async function placePaidOrder(runId: string, n: number, sku: string): Promise<string> {
      const created = await callApi(platform.api.url, 'POST', '/orders', {
        customerEmail: `replay+${runId}-${n}@example.com`,
        lines: [{ sku, quantity: n }],
        amountMinor: 1_000 + n,
        currency: 'EUR',
      });
      const orderId = (created.body as { orderId?: unknown } | undefined)?.orderId;
      if (created.status !== 201 || typeof orderId !== 'string')
        throw new Error(`POST /orders answered ${created.status}: ${JSON.stringify(created.body)}`);
      const paymentId = `pay-${runId}-${n}`;
      const paid = await callApi(
        platform.api.url,
        'POST',
        `/orders/${orderId}/payments`,
        { paymentId, amountMinor: 1_000 + n, currency: 'EUR' },
        { 'Idempotency-Key': `req-${paymentId}` },
      );
      if (paid.status !== 202) throw new Error(`POST /orders/${orderId}/payments answered ${paid.status}`);
      return orderId;
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
      auditDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-stream-replay-audit-'));
    });

    afterAll(async () => {
      for (const c of [sqs, ddb]) c?.destroy();
      process.env = savedEnv;
      if (auditDir !== undefined) fs.rmSync(auditDir, { recursive: true, force: true });
    });

    it('when the relay gave paid orders up to its on-failure queue, list shows the batches, a dry run changes nothing, and a replay enqueues each follow-up once', async () => {
      // Prepare: the relay crashes on every paid order until its retries run out.
      const runId = randomUUID().slice(0, 8);
      const sku = `sku-replay-${runId}`;
      const inventory = new DynamoDbInventoryStore(ddb, deployedEnv('inventory-consumer', 'INVENTORY_TABLE'));
      const ordersTable = deployedEnv('ingress', 'ORDERS_TABLE');
      await inventory.seed(sku, STOCK);
      const relay = platform.functionNamed('outbox-relay');
      const source = relaySource();
      const onFailureUrl = source.spec.onFailureQueueUrl ?? '';
      platform.crashInvocations(relay, ['before-enqueue'], 10_000);
      const orders = [await placePaidOrder(runId, 1, sku), await placePaidOrder(runId, 2, sku)];
      await until(async () => {
        const states = await readOrderStates(ddb, ordersTable, orders);
        return orders.every((o) => states.get(o) === 'PAID') ? true : undefined;
      }, 'both orders to be PAID');
      await until(
        () => Promise.resolve(source.stats.sentToOnFailure >= orders.length ? true : undefined),
        "the relay's retries to run out for both paid orders",
        180_000,
      );
      platform.crashInvocations(relay, [], 0);
      // The mapping counts a given-up batch before it sends the message: wait for a steady depth.
      let previous = -1;
      const failedBatches = await until(async () => {
        const d = await depth(onFailureUrl);
        const steady = d.visible >= 1 && d.inFlight === 0 && d.visible === previous;
        previous = d.visible;
        return steady ? d.visible : undefined;
      }, 'the on-failure messages');
      const notifiedBeforeReplay = orders.map(notificationsFor);
      // Only the two mappings have read the orders stream so far: neither was ever throttled.
      const invalidator = sourceOf('cache-invalidator');
      const throttledAlone = [invalidator.stats.throttledReads, source.stats.throttledReads];
      const thirdReader = await readAsThirdProcess(source.spec.streamArn);
      const audit = (name: string): string => path.join(auditDir, `${name}.jsonl`);

      // Act
      const listed = await cli('dlq', 'list', 'outbox-relay', '--json');
      const table = await cli('dlq', 'list', 'outbox-relay');
      const dry = await cli(
        'dlq',
        'replay',
        'outbox-relay',
        '--dry-run',
        '--json',
        '--audit-log',
        audit('dry'),
      );
      await new Promise((r) => setTimeout(r, 2_000));
      const afterDry = { depth: await depth(onFailureUrl), notified: orders.map(notificationsFor) };
      const refused = await cli('dlq', 'replay', 'outbox-relay');
      // A paused consumer is not replayed: the invocation would bypass its pause.
      const paused = await cli('pause', 'outbox-relay', '--reason', 'replay test', '--for', '10m', '--force');
      const whilePaused = await cli('dlq', 'replay', 'outbox-relay', '--yes', '--audit-log', audit('paused'));
      const depthWhilePaused = await depth(onFailureUrl);
      const notifiedWhilePaused = orders.map(notificationsFor);
      const resumed = await cli('resume', 'outbox-relay');
      // While the replay reads, orders keep changing: both consumers' iterator age is sampled from
      // the batches their mappings deliver from now on (the relay's last one was a crashed retry).
      const batchesBefore = [invalidator.stats.batches, source.stats.batches];
      const ages = { invalidator: 0, relay: 0 };
      const sample = (): void => {
        if (invalidator.stats.batches > batchesBefore[0]!)
          ages.invalidator = Math.max(ages.invalidator, invalidator.stats.iteratorAgeMs);
        if (source.stats.batches > batchesBefore[1]!)
          ages.relay = Math.max(ages.relay, source.stats.iteratorAgeMs);
      };
      let writing = true;
      const created: number[] = [];
      const writer = (async () => {
        for (let n = 0; writing; n += 1) {
          const answer = await callApi(platform.api.url, 'POST', '/orders', {
            customerEmail: `replay-load+${runId}-${n}@example.com`,
            lines: [{ sku: `${sku}-load`, quantity: 1 }],
            amountMinor: 500,
            currency: 'EUR',
          });
          created.push(answer.status);
          sample();
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      const replayed = await cli(
        'dlq',
        'replay',
        'outbox-relay',
        '--yes',
        '--json',
        '--audit-log',
        audit('real'),
      );
      writing = false;
      await writer;
      // Both mappings still deliver after the replay: the writes made during it may all be delivered
      // already, so one more write after the snapshot is what each mapping must deliver.
      const writtenBy = [invalidator.stats.batches, source.stats.batches];
      const last = await callApi(platform.api.url, 'POST', '/orders', {
        customerEmail: `replay-load+${runId}-last@example.com`,
        lines: [{ sku: `${sku}-load`, quantity: 1 }],
        amountMinor: 500,
        currency: 'EUR',
      });
      created.push(last.status);
      await until(
        () =>
          Promise.resolve(
            invalidator.stats.batches > writtenBy[0]! && source.stats.batches > writtenBy[1]!
              ? true
              : undefined,
          ),
        'both mappings to deliver the writes made during the replay',
      );
      sample();
      await until(
        () => Promise.resolve(orders.every((o) => notificationsFor(o) >= 1) ? true : undefined),
        'a notification for every replayed order',
      );
      const stock = await until(async () => {
        const level = await inventory.get(sku);
        return orders.every((o) => level?.reservations[o] !== undefined) ? level : undefined;
      }, "every replayed order's reservation");
      const again = await cli(
        'dlq',
        'replay',
        'outbox-relay',
        '--yes',
        '--json',
        '--audit-log',
        audit('again'),
      );
      // Time for a second, wrong enqueue to show.
      await new Promise((r) => setTimeout(r, 3_000));

      // Assess: two mappings alone are never throttled; a third reader reading at once again is
      expect(throttledAlone).toEqual([0, 0]);
      expect(thirdReader[0]).toBe('served');
      expect(thirdReader).toContain('LimitExceededException');

      // Assess: the list shows the batches without consuming them
      expect(notifiedBeforeReplay).toEqual([0, 0]);
      expect(listed.code).toBe(0);
      type Listed = { consumer: string; messages: Record<string, unknown>[] };
      const list = JSON.parse(listed.out) as Listed;
      expect(list.consumer).toBe('outbox-relay');
      expect(list.messages).toHaveLength(failedBatches);
      for (const m of list.messages) {
        expect(m).toMatchObject({
          condition: 'RetryAttemptsExhausted',
          shardId: expect.any(String) as string,
          startSequenceNumber: expect.stringMatching(/^[0-9]+$/) as string,
          endSequenceNumber: expect.stringMatching(/^[0-9]+$/) as string,
          batchSize: expect.any(Number) as number,
          firstArrival: expect.any(String) as string,
        });
      }
      expect(table.code).toBe(0);
      expect(table.out).toContain('RetryAttemptsExhausted');

      // Assess: the dry run read the records and changed nothing
      type Replay = {
        summary: Record<string, number>;
        throttledReads: number;
        messages: { outcome: string; keys: string[]; recordsRead: number }[];
      };
      expect(dry.code).toBe(0);
      const dr = JSON.parse(dry.out) as Replay;
      expect(dr.summary).toMatchObject({ 'would-replay': failedBatches, replayed: 0, failed: 0 });
      expect(dr.messages.flatMap((m) => m.keys)).toEqual(expect.arrayContaining(orders));
      expect(afterDry).toEqual({
        depth: { visible: failedBatches, inFlight: 0, delayed: 0 },
        notified: [0, 0],
      });
      expect(fs.readFileSync(audit('dry'), 'utf8')).toContain('"dryRun":true');
      expect(refused.code).toBe(2);
      expect(refused.err).toContain('--yes');
      expect([paused.code, resumed.code]).toEqual([0, 0]);
      expect(whilePaused.code).toBe(1);
      expect(whilePaused.err).toMatch(/outbox-relay is paused \(replay test, until .*\).*--while-paused/);
      expect(depthWhilePaused).toEqual({ visible: failedBatches, inFlight: 0, delayed: 0 });
      expect(notifiedWhilePaused).toEqual([0, 0]);

      // Assess: the replay enqueued each follow-up once and emptied the on-failure queue
      expect(replayed.code).toBe(0);
      const rr = JSON.parse(replayed.out) as Replay;
      expect(rr.summary).toMatchObject({
        replayed: failedBatches,
        'records-missing': 0,
        'function-failed': 0,
        failed: 0,
      });
      expect(rr.throttledReads).toEqual(expect.any(Number));
      expect(rr.summary['read-throttled']).toBe(0);
      // Assess: the replay, a third reader while orders kept changing, left both consumers current
      expect(created.length).toBeGreaterThan(0);
      expect(created.every((status) => status === 201)).toBe(true);
      expect(invalidator.stats.batches).toBeGreaterThan(batchesBefore[0]!);
      expect(source.stats.batches).toBeGreaterThan(batchesBefore[1]!);
      expect(ages.invalidator).toBeLessThan(5_000);
      expect(ages.relay).toBeLessThan(5_000);
      expect(JSON.parse(again.out)).toMatchObject({ summary: { replayed: 0, failed: 0 } });
      expect(await depth(onFailureUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
      expect(orders.map(notificationsFor)).toEqual([1, 1]);
      const finalStock = await inventory.get(sku);
      expect(finalStock?.available).toBe(STOCK - 1 - 2);
      expect(Object.keys(finalStock?.reservations ?? {}).sort()).toEqual([...orders].sort());
      expect(stock.available).toBe(finalStock?.available);
      const lines = fs
        .readFileSync(audit('real'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines).toHaveLength(failedBatches);
      expect(lines.every((l) => l.actor === 'jest' && l.outcome === 'replayed' && l.dryRun === false)).toBe(
        true,
      );
    });
  });
}
