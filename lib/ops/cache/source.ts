/** The source of truth of the cached entities: the orders table, read as the order reader reads it. */
import { CorruptOrderError, DynamoDbOrderStore } from '../../adapters/aws/dynamodb-order-store';
import type { Order } from '../../core/order';
import type { CliContext } from '../cli-context';
import { discoverResources, tableName } from '../pipeline-resources';
import type { EntityRef } from './keys';

/** An entity as the source of truth has it now. */
export type SourceState =
  | { readonly kind: 'present'; readonly order: Order }
  | { readonly kind: 'absent' }
  | { readonly kind: 'unreadable'; readonly reason: string };

/** Reads entities from their source of truth with the order reader's loader (strongly consistent). */
export class EntitySource {
  private constructor(
    private readonly orders: DynamoDbOrderStore,
    /** The orders table, for reports. */
    public readonly table: string,
  ) {}

  /** Finds the stage's orders table in its stack. */
  public static async discover(ctx: CliContext): Promise<EntitySource> {
    const table = tableName(ctx, await discoverResources(ctx), 'orders');
    return new EntitySource(new DynamoDbOrderStore(ctx.clients.dynamodb, table), table);
  }

  public async read(ref: EntityRef): Promise<SourceState> {
    switch (ref.entity) {
      case 'order':
        try {
          const order = await this.orders.get(ref.id);
          return order === undefined ? { kind: 'absent' } : { kind: 'present', order };
        } catch (error) {
          // The reader refuses such an item too; a cached copy of it must still go.
          if (error instanceof CorruptOrderError) return { kind: 'unreadable', reason: error.message };
          throw error;
        }
    }
  }
}
