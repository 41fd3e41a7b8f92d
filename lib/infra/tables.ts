/** The pipeline's DynamoDB tables. */
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { TABLE_KEYS } from '../config/tables';
import { TABLE_DEFAULTS } from './defaults';
import type { TableName } from '../config';

export { TABLE_KEYS };

/** Props of Tables. */
export interface TablesProps {
  /** Stage name, part of every table name. */
  readonly stageName: string;
}

/** Orders (source of truth, streamed), idempotency records, lease locks, producer dedup records, inventory. */
export class Tables extends Construct {
  /** Orders: the source of truth; its stream drives the cache invalidator and the outbox relay. */
  public readonly orders: dynamodb.Table;
  /** Powertools idempotency records. */
  public readonly idempotency: dynamodb.Table;
  /** Lease locks with fencing counters. */
  public readonly locks: dynamodb.Table;
  /** Producer-side dedup records for standard queues (Q1). */
  public readonly dedup: dynamodb.Table;
  /** Stock per SKU, protected by lease locks with fencing. */
  public readonly inventory: dynamodb.Table;

  /** The table a job type names in its resources. */
  public byName(name: TableName): dynamodb.Table {
    return this[name];
  }

  public constructor(scope: Construct, id: string, props: TablesProps) {
    super(scope, id);
    const name = (table: string): string => `tenang-${props.stageName}-${table}`;
    const s = dynamodb.AttributeType.STRING;

    this.orders = new dynamodb.Table(this, 'Orders', {
      ...TABLE_DEFAULTS,
      tableName: name('orders'),
      partitionKey: { name: TABLE_KEYS.orders.partitionKey, type: s },
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
    });
    this.idempotency = new dynamodb.Table(this, 'Idempotency', {
      ...TABLE_DEFAULTS,
      tableName: name('idempotency'),
      partitionKey: { name: TABLE_KEYS.idempotency.partitionKey, type: s },
      timeToLiveAttribute: TABLE_KEYS.idempotency.ttl,
    });
    this.locks = new dynamodb.Table(this, 'Locks', {
      ...TABLE_DEFAULTS,
      tableName: name('locks'),
      partitionKey: { name: TABLE_KEYS.locks.partitionKey, type: s },
      timeToLiveAttribute: TABLE_KEYS.locks.ttl,
    });
    this.dedup = new dynamodb.Table(this, 'Dedup', {
      ...TABLE_DEFAULTS,
      tableName: name('dedup'),
      partitionKey: { name: TABLE_KEYS.dedup.partitionKey, type: s },
      timeToLiveAttribute: TABLE_KEYS.dedup.ttl,
    });
    this.inventory = new dynamodb.Table(this, 'Inventory', {
      ...TABLE_DEFAULTS,
      tableName: name('inventory'),
      partitionKey: { name: TABLE_KEYS.inventory.partitionKey, type: s },
    });
  }
}
