/**
 * The moto that tenang starts (lib/local/moto_server.py): stock moto with DynamoDB requests served
 * one at a time, because moto's own conditional writes and cancelled-transaction rollbacks are
 * not atomic across its request threads (moto/dynamodb/models/__init__.py: transact_write_items
 * restores deep copies of the tables taken at its start; conditions are checked, then written,
 * without a lock). Those races need unlucky thread switches: seen once by the backoff experiment,
 * not reproducible on demand, so what is tested here is that tenang's platform runs on the
 * launcher, and that its cancelled transactions restore the items they touched (the launcher's
 * own rollback, which replaces moto's copy of whole tables). The test starts a launcher of its
 * own on a free port.
 */
import {
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  DescribeStreamCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { execFileSync } from 'node:child_process';
import * as http from 'node:http';
import * as path from 'node:path';
import { MOTO_LAUNCHER, startLocalEnv, type LocalEnv } from '../../lib/local/env';
import { freePort } from '../../lib/local/ports';
import { isSerializedMoto, MOTO_PROBE_PATH, probeHttp } from '../../lib/local/probes';

jest.setTimeout(120_000);

describe('the moto launcher (lib/local/moto_server.py)', () => {
  let env: LocalEnv;
  let port: number;
  const saved = { AWS_ENDPOINT_URL: process.env.AWS_ENDPOINT_URL };

  beforeAll(async () => {
    delete process.env.AWS_ENDPOINT_URL;
    port = await freePort();
    env = await startLocalEnv({ motoPort: port, log: () => undefined });
  });

  afterAll(async () => {
    await env?.stop();
    if (saved.AWS_ENDPOINT_URL !== undefined) process.env.AWS_ENDPOINT_URL = saved.AWS_ENDPOINT_URL;
  });

  it('when tenang starts moto, it is the launcher (its responses carry the serialized-DynamoDB marker)', async () => {
    // Act
    const probe = await probeHttp(`http://127.0.0.1:${port}${MOTO_PROBE_PATH}`, 5_000);

    // Assess
    expect(env.started).toContain('moto');
    expect(isSerializedMoto(probe)).toBe(true);
  });

  it('when a client sends requests one after another, they share one kept connection, bodies included (Werkzeug alone closed each one)', async () => {
    // Prepare: a keep-alive agent that counts the sockets it opens.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let sockets = 0;
    const createConnection = agent.createConnection.bind(agent);
    agent.createConnection = (...args: Parameters<typeof createConnection>) => {
      sockets += 1;
      return createConnection(...args);
    };
    const ddb = new DynamoDBClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
      requestHandler: { httpAgent: agent },
    });
    const table = `keep-alive-${Date.now()}`;
    await ddb.send(
      new CreateTableCommand({
        TableName: table,
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );

    // Act
    const read: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      await ddb.send(
        new PutItemCommand({ TableName: table, Item: { pk: { S: `k${i}` }, v: { S: 'x'.repeat(2000) } } }),
      );
      const { Item } = await ddb.send(new GetItemCommand({ TableName: table, Key: { pk: { S: `k${i}` } } }));
      read.push(Item?.v?.S ?? '');
    }
    agent.destroy();

    // Assess: 41 requests, one connection; every body arrived whole.
    expect(sockets).toBe(1);
    expect(read.every((v) => v.length === 2000)).toBe(true);
  });

  it("when a full garbage collection ends, what survived is frozen, so the next one does not visit moto's whole heap again", () => {
    // Prepare: the launcher's module as moto_server.py's `python3 moto_server.py` loads it, without serving
    const script = [
      'import gc, sys',
      `sys.path.insert(0, ${JSON.stringify(path.dirname(MOTO_LAUNCHER))})`,
      'import moto_server',
      'at_import = gc.get_freeze_count()',
      'kept = [[i] for i in range(50_000)]',
      'gc.collect()',
      'print(at_import, gc.get_freeze_count() - at_import, len(gc.get_objects(2)))',
    ].join('\n');

    // Act
    const [atImport, frozenByCollection, leftInOldest] = execFileSync('python3', ['-c', script], {
      encoding: 'utf8',
      timeout: 60_000,
    })
      .trim()
      .split(' ')
      .map(Number);

    // Assess: the imports' objects frozen at once, the 50 000 kept lists with the collection
    expect(atImport).toBeGreaterThan(50_000);
    expect(frozenByCollection).toBeGreaterThanOrEqual(50_000);
    expect(leftInOldest).toBe(0);
  });

  describe('TransactWriteItems', () => {
    let ddb: DynamoDBClient;
    let streams: DynamoDBStreamsClient;

    beforeAll(() => {
      const config = { endpoint: `http://127.0.0.1:${port}`, region: env.region };
      ddb = new DynamoDBClient(config);
      streams = new DynamoDBStreamsClient(config);
    });

    afterAll(() => {
      ddb.destroy();
      streams.destroy();
    });

    async function table(name: string, rangeKey: boolean): Promise<string> {
      const { TableDescription } = await ddb.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [
            { AttributeName: 'id', AttributeType: 'S' },
            ...(rangeKey ? [{ AttributeName: 'sk', AttributeType: 'S' as const }] : []),
          ],
          KeySchema: [
            { AttributeName: 'id', KeyType: 'HASH' },
            ...(rangeKey ? [{ AttributeName: 'sk', KeyType: 'RANGE' as const }] : []),
          ],
          StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
        }),
      );
      return TableDescription?.LatestStreamArn ?? '';
    }

    async function records(
      iterator: string | undefined,
    ): Promise<{ ids: string[]; next: string | undefined }> {
      const out = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      return {
        ids: (out.Records ?? []).map((r) => `${r.eventName ?? '?'} ${r.dynamodb?.Keys?.id?.S ?? '?'}`),
        next: out.NextShardIterator,
      };
    }

    it('when one is cancelled, it restores the items it touched, answers the reasons with ALL_OLD and leaves no stream record', async () => {
      // Prepare: a with v=1, c with v=1; the stream read up to here.
      const name = `tx-${Date.now()}`;
      const streamArn = await table(name, false);
      await ddb.send(new PutItemCommand({ TableName: name, Item: { id: { S: 'a' }, v: { N: '1' } } }));
      await ddb.send(new PutItemCommand({ TableName: name, Item: { id: { S: 'c' }, v: { N: '1' } } }));
      const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
      const shardId = StreamDescription?.Shards?.[0]?.ShardId;
      const start = await streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: shardId,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      );
      const before = await records(start.ShardIterator);

      // Act: a updated and b created before c's condition fails.
      const error = await ddb
        .send(
          new TransactWriteItemsCommand({
            TransactItems: [
              {
                Update: {
                  TableName: name,
                  Key: { id: { S: 'a' } },
                  UpdateExpression: 'SET v = :two',
                  ExpressionAttributeValues: { ':two': { N: '2' } },
                },
              },
              { Put: { TableName: name, Item: { id: { S: 'b' }, v: { N: '1' } } } },
              {
                Update: {
                  TableName: name,
                  Key: { id: { S: 'c' } },
                  UpdateExpression: 'SET v = :two',
                  ConditionExpression: 'v = :two',
                  ExpressionAttributeValues: { ':two': { N: '2' } },
                  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
                },
              },
            ],
          }),
        )
        .catch((e: unknown) => e);
      const a = await ddb.send(new GetItemCommand({ TableName: name, Key: { id: { S: 'a' } } }));
      const b = await ddb.send(new GetItemCommand({ TableName: name, Key: { id: { S: 'b' } } }));
      const afterCancel = await records(before.next);
      // The same iterator sees a later transaction's records: the shard was not replaced.
      await ddb.send(
        new TransactWriteItemsCommand({
          TransactItems: [{ Put: { TableName: name, Item: { id: { S: 'd' }, v: { N: '1' } } } }],
        }),
      );
      const afterCommit = await records(afterCancel.next);

      // Assess
      expect(before.ids).toEqual(['INSERT a', 'INSERT c']);
      expect(error).toBeInstanceOf(TransactionCanceledException);
      expect((error as TransactionCanceledException).CancellationReasons).toEqual([
        { Code: 'None' },
        { Code: 'None' },
        {
          Code: 'ConditionalCheckFailed',
          Message: 'The conditional request failed',
          Item: { id: { S: 'c' }, v: { N: '1' } },
        },
      ]);
      expect(a.Item).toEqual({ id: { S: 'a' }, v: { N: '1' } });
      expect(b.Item).toBeUndefined();
      expect(afterCancel.ids).toEqual([]);
      expect(afterCommit.ids).toEqual(['INSERT d']);
    });

    it("when one creating a range key table's item is cancelled, the item's partition stays empty", async () => {
      // Prepare
      const name = `tx-range-${Date.now()}`;
      await table(name, true);

      // Act
      const error = await ddb
        .send(
          new TransactWriteItemsCommand({
            TransactItems: [
              { Put: { TableName: name, Item: { id: { S: 'p' }, sk: { S: '1' } } } },
              {
                Put: {
                  TableName: name,
                  Item: { id: { S: 'q' }, sk: { S: '1' } },
                  ConditionExpression: 'attribute_exists(id)',
                },
              },
            ],
          }),
        )
        .catch((e: unknown) => e);
      const p = await ddb.send(
        new QueryCommand({
          TableName: name,
          KeyConditionExpression: 'id = :p',
          ExpressionAttributeValues: { ':p': { S: 'p' } },
        }),
      );

      // Assess
      expect(error).toBeInstanceOf(TransactionCanceledException);
      expect(p.Items).toEqual([]);
    });
  });
});
