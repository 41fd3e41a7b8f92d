/** The pipeline's DynamoDB tables: tenang's idempotency table and the app's declared ones. */
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { TABLE_KEYS } from '../config/tables';
import type { ResolvedTable } from '../config';
import { constructIdOf } from './construct-id';
import { TABLE_DEFAULTS } from './defaults';

export { TABLE_KEYS };

/** Props of Tables. */
export interface TablesProps {
  /** The tables to create, resolved by loadPipelineConfig (`PipelineConfig.tables`). */
  readonly tables: readonly ResolvedTable[];
}

/**
 * One table per declared table, all with tenang's defaults (on-demand, encrypted, PITR,
 * RetainExceptOnCreate) and string keys; the construct id is the PascalCase name
 * (`invoices` → `Invoices`), so a table's logical id follows from its declared name.
 */
export class Tables extends Construct {
  /** Every table, keyed by declared name. */
  public readonly all: ReadonlyMap<string, dynamodb.Table>;

  public constructor(scope: Construct, id: string, props: TablesProps) {
    super(scope, id);
    const s = dynamodb.AttributeType.STRING;
    this.all = new Map(
      props.tables.map((t) => [
        t.name,
        new dynamodb.Table(this, constructIdOf(t.name), {
          ...TABLE_DEFAULTS,
          tableName: t.tableName,
          partitionKey: { name: t.partitionKey, type: s },
          ...(t.sortKey === undefined ? {} : { sortKey: { name: t.sortKey, type: s } }),
          ...(t.ttl === undefined ? {} : { timeToLiveAttribute: t.ttl }),
          ...(t.stream === undefined ? {} : { stream: dynamodb.StreamViewType[t.stream] }),
        }),
      ]),
    );
  }

  /** The table declared as `name`; throws listing the known ones (the loader has checked every reference). */
  public byName(name: string): dynamodb.Table {
    const table = this.all.get(name);
    if (table === undefined) {
      throw new Error(`no table "${name}" in this pipeline (known: ${[...this.all.keys()].join(', ')})`);
    }
    return table;
  }
}
