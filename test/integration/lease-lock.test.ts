/**
 * The lease lock and the fenced inventory write against moto's DynamoDB (L1–L4): real
 * conditional UpdateItems, real ReturnValuesOnConditionCheckFailure. Time is a manual clock, so
 * "the lease expired" needs no sleeping.
 */
import {
  CreateTableCommand,
  DeleteItemCommand,
  DeleteTableCommand,
  GetItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DynamoDbInventoryStore } from '../../examples/reference/domain/dynamodb-inventory-store';
import { DynamoDbLockStore } from '../../lib/adapters/aws/dynamodb-lock-store';
import { TABLE_KEYS } from '../../lib/config';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import { StaleFencingTokenError } from '../../lib/core/errors';
import { InsufficientStockError, skuLockResource } from '../../examples/reference/domain/inventory';
import { LeaseLock, LeaseLostError, LockHeldError, type LockEvent } from '../../lib/core/lease-lock';
import { dynamoClient, uniqueName } from '../helpers/aws';
import { manualClock, sequentialTokens, type ManualClock } from '../helpers/manual-clock';

jest.setTimeout(30_000);

const TTL_MS = 10_000;

let dynamo: DynamoDBClient;
let locksTable: string;
let inventoryTable: string;

async function createTable(name: string, key: string): Promise<void> {
  await dynamo.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}

beforeAll(async () => {
  dynamo = dynamoClient();
  locksTable = uniqueName('locks');
  inventoryTable = uniqueName('inventory');
  await createTable(locksTable, TABLE_KEYS.locks.partitionKey);
  await createTable(inventoryTable, REFERENCE_TABLE_KEYS.inventory.partitionKey);
});

afterAll(async () => {
  for (const table of [locksTable, inventoryTable]) {
    if (table !== undefined)
      await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  }
  dynamo?.destroy();
});

interface Fixture {
  readonly clock: ManualClock;
  readonly sku: string;
  readonly resource: string;
  readonly store: DynamoDbLockStore;
  readonly inventory: DynamoDbInventoryStore;
  readonly events: LockEvent[];
  /** A client of the lock: its own owner tokens, the shared clock and table. */
  client(name: string): LeaseLock;
}

/** A fresh SKU (so tests never share an item) with `stock` units. */
async function fixture(stock = 10): Promise<Fixture> {
  const clock = manualClock(new Date());
  const sku = uniqueName('sku');
  const store = new DynamoDbLockStore(dynamo, locksTable);
  const inventory = new DynamoDbInventoryStore(dynamo, inventoryTable, clock);
  await inventory.seed(sku, stock);
  const events: LockEvent[] = [];
  return {
    clock,
    sku,
    resource: skuLockResource(sku),
    store,
    inventory,
    events,
    client: (name) =>
      new LeaseLock({ store, clock, newToken: sequentialTokens(name), report: (e) => events.push(e) }),
  };
}

describe('Integration: DynamoDbLockStore + DynamoDbInventoryStore (moto)', () => {
  it('when a lease expires and a new holder writes, the stale holder’s write is rejected and the new one’s kept', async () => {
    // Prepare
    const f = await fixture(10);
    const stale = await f.client('a').acquire(f.resource, TTL_MS);
    f.clock.advance(TTL_MS + 1);
    const current = await f.client('b').acquire(f.resource, TTL_MS);

    // Act
    const accepted = await f.inventory.reserve({
      sku: f.sku,
      orderId: 'order-b',
      quantity: 2,
      fence: current.fence,
      at: f.clock(),
    });
    const rejected = await f.inventory
      .reserve({ sku: f.sku, orderId: 'order-a', quantity: 3, fence: stale.fence, at: f.clock() })
      .catch((e: unknown) => e);

    // Assess
    expect(current.fence).toBeGreaterThan(stale.fence);
    expect(accepted).toBe('reserved');
    expect(rejected).toBeInstanceOf(StaleFencingTokenError);
    const stock = await f.inventory.get(f.sku);
    expect(stock?.available).toBe(8);
    expect(stock?.fence).toBe(current.fence);
    expect(Object.keys(stock?.reservations ?? {})).toEqual(['order-b']);
  });

  it('when a non-owner releases, it is refused and reported, and the owner keeps the lock', async () => {
    // Prepare
    const f = await fixture();
    const stale = await f.client('a').acquire(f.resource, TTL_MS);
    f.clock.advance(TTL_MS + 1);
    const owner = await f.client('b').acquire(f.resource, TTL_MS);

    // Act
    const result = await f.client('a').release(stale);

    // Assess
    expect(result).toMatchObject({
      released: false,
      holder: { ownerToken: owner.ownerToken, fence: owner.fence },
    });
    expect(f.events).toEqual([
      expect.objectContaining({ kind: 'release-refused', ownerToken: stale.ownerToken }),
    ]);
    expect((await f.store.get(f.resource))?.holder?.ownerToken).toBe(owner.ownerToken);
    await expect(f.client('c').acquire(f.resource, TTL_MS)).rejects.toBeInstanceOf(LockHeldError);
  });

  it('when the owner releases, the item keeps its fence, and the next lease gets a higher one', async () => {
    // Prepare
    const f = await fixture();
    const first = await f.client('a').acquire(f.resource, TTL_MS);

    // Act
    const released = await f.client('a').release(first);
    const second = await f.client('b').acquire(f.resource, TTL_MS);

    // Assess
    expect(released).toEqual({ released: true });
    expect(second.fence).toBe(first.fence + 1);
    const { Item } = await dynamo.send(
      new GetItemCommand({
        TableName: locksTable,
        Key: { resource: { S: f.resource } },
        ConsistentRead: true,
      }),
    );
    expect(Item?.owner?.S).toBe(second.ownerToken);
    expect(Number(Item?.expiresAtEpoch?.N)).toBe(Math.ceil(second.expiresAt.getTime() / 1000));
  });

  it('when TTL swept an orphaned lock item, the next fence is still above every fence the resource accepted', async () => {
    // Prepare
    const f = await fixture();
    const before = await f.client('a').acquire(f.resource, TTL_MS);
    await f.inventory.reserve({
      sku: f.sku,
      orderId: 'order-1',
      quantity: 1,
      fence: before.fence,
      at: f.clock(),
    });
    f.clock.advance(TTL_MS + 1);
    // What TTL would do to the expired, never-released lease item.
    await dynamo.send(new DeleteItemCommand({ TableName: locksTable, Key: { resource: { S: f.resource } } }));
    f.clock.advance(1);

    // Act
    const after = await f.client('b').acquire(f.resource, TTL_MS);
    const write = await f.inventory.reserve({
      sku: f.sku,
      orderId: 'order-2',
      quantity: 1,
      fence: after.fence,
      at: f.clock(),
    });

    // Assess
    expect(after.fence).toBeGreaterThan(before.fence);
    expect(write).toBe('reserved');
  });

  it('when the owner extends in time, a rival stays out; after a takeover, the old owner cannot extend', async () => {
    // Prepare
    const f = await fixture();
    const a = f.client('a');
    const lease = await a.acquire(f.resource, TTL_MS);
    f.clock.advance(TTL_MS - 1);

    // Act
    const extended = await a.extend(lease, TTL_MS);
    f.clock.advance(TTL_MS - 1);
    const rivalWhileExtended = await f
      .client('b')
      .acquire(f.resource, TTL_MS)
      .catch((e: unknown) => e);
    f.clock.advance(2);
    await f.client('c').acquire(f.resource, TTL_MS);
    const lateExtend = await a.extend(extended, TTL_MS).catch((e: unknown) => e);

    // Assess
    expect(extended.fence).toBe(lease.fence);
    expect(rivalWhileExtended).toBeInstanceOf(LockHeldError);
    expect(lateExtend).toBeInstanceOf(LeaseLostError);
  });

  it('when a lease expired unreleased, it is listed as an orphan and released only once expired and by its owner token', async () => {
    // Prepare
    const f = await fixture();
    const lease = await f.client('a').acquire(f.resource, TTL_MS);
    const operator = f.client('operator');
    const whileLive = await operator.releaseOrphan(f.resource, lease.ownerToken);
    f.clock.advance(TTL_MS + 1);

    // Act
    const orphans = await operator.listOrphans();
    const released = await operator.releaseOrphan(f.resource, lease.ownerToken);

    // Assess
    expect(whileLive.released).toBe(false);
    expect(orphans.map((o) => o.resource)).toContain(f.resource);
    expect(released).toEqual({ released: true });
    expect(await f.store.get(f.resource)).toEqual({
      resource: f.resource,
      fence: lease.fence,
      holder: undefined,
    });
  });

  it('when the same order reserves twice, the second is a duplicate; when stock is short, it says so', async () => {
    // Prepare
    const f = await fixture(4);
    const lock = f.client('a');
    const first = await lock.acquire(f.resource, TTL_MS);
    await f.inventory.reserve({
      sku: f.sku,
      orderId: 'order-1',
      quantity: 3,
      fence: first.fence,
      at: f.clock(),
    });
    await lock.release(first);
    const second = await lock.acquire(f.resource, TTL_MS);

    // Act
    const duplicate = await f.inventory.reserve({
      sku: f.sku,
      orderId: 'order-1',
      quantity: 3,
      fence: second.fence,
      at: f.clock(),
    });
    const short = await f.inventory
      .reserve({ sku: f.sku, orderId: 'order-2', quantity: 3, fence: second.fence, at: f.clock() })
      .catch((e: unknown) => e);

    // Assess
    expect(duplicate).toBe('duplicate');
    expect(short).toBeInstanceOf(InsufficientStockError);
    expect((short as Error).message).toContain('3 requested, 1 available');
    expect((await f.inventory.get(f.sku))?.available).toBe(1);
  });
});
