/**
 * OrderStore over the orders table (I2). Every state change is conditional on the state (and on
 * the version read, when there was a read) and raises the version by one; a failed condition
 * becomes the domain's meaning (done already, illegal, or a concurrent change worth a retry).
 */
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  type StagedPrecondition,
  type StagedWrite,
  type TransactItem,
  ConcurrentUpdateError,
  IllegalTransitionError,
  type Clock,
} from 'tenang/runtime';
import { CorruptOrderError, OrderSchema, parseStoredOrder, type Order } from './order';
import { explainRejectedTransition, statesOnlyAfter, type OrderState } from './state-machine';
import { explainFailedGuard, type CaptureGuard, type StagedTransition } from './payment';
import type { OrderStore } from './ports';
import { REFERENCE_TABLE_KEYS } from './tables';

export { CorruptOrderError };

/** Fields a transition's `changes` may not set: the transition owns them. */
const CONTROLLED: ReadonlySet<string> = new Set(['orderId', 'state', 'version', 'updatedAt', 'createdAt']);

/** The fields whose value is not undefined (the document client refuses undefined). */
function definedOnly(order: Order): Record<string, unknown> {
  return Object.fromEntries(Object.entries(order).filter(([, value]) => value !== undefined));
}

/** An UpdateItem of one transition, shared by `transition` and the staged transact item. */
interface TransitionUpdate {
  readonly Key: Record<string, string>;
  readonly UpdateExpression: string;
  readonly ConditionExpression: string;
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues: Record<string, unknown>;
}

/** Orders in DynamoDB, read with strong consistency (the consumer decides on what it reads). */
export class DynamoDbOrderStore implements OrderStore {
  private readonly doc: DynamoDBDocumentClient;

  public constructor(
    client: DynamoDBClient,
    private readonly tableName: string,
    private readonly clock: Clock = () => new Date(),
  ) {
    // No translateConfig: the document client writes it into the shared client's config.
    this.doc = DynamoDBDocumentClient.from(client);
  }

  public async create(order: Order): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: definedOnly(order),
          ConditionExpression: 'attribute_not_exists(#k)',
          ExpressionAttributeNames: { '#k': REFERENCE_TABLE_KEYS.orders.partitionKey },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  public async get(orderId: string): Promise<Order | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { [REFERENCE_TABLE_KEYS.orders.partitionKey]: orderId },
        ConsistentRead: true,
      }),
    );
    return Item === undefined ? undefined : parseStoredOrder(orderId, Item);
  }

  public async transition(
    orderId: string,
    from: OrderState,
    to: OrderState,
    expectedVersion: number,
    changes: Partial<Order> = {},
  ): Promise<Order> {
    const update = this.transitionUpdate({ orderId, from, to, expectedVersion, changes, at: this.clock() });
    try {
      const { Attributes } = await this.doc.send(
        new UpdateCommand({ TableName: this.tableName, ...update, ReturnValues: 'ALL_NEW' }),
      );
      return OrderSchema.parse(Attributes);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw await this.rejection(orderId, from, to, expectedVersion, error);
      }
      throw error;
    }
  }

  /**
   * The transition as a transact item, for a write that must commit together with something else
   * (the idempotency record's completion); its failure is explained like `transition`'s.
   */
  public stagedTransition(transition: StagedTransition): StagedWrite {
    const item: TransactItem = {
      Update: { TableName: this.tableName, ...this.transitionUpdate(transition) },
    };
    return {
      item,
      rejected: (cause) =>
        this.rejection(transition.orderId, transition.from, transition.to, transition.expectedVersion, cause),
    };
  }

  /**
   * A check that the order satisfies `guard`, for the transaction that claims a capture: nothing
   * is read before it. When it fails, the order as the check returned it says why; only when none
   * came back is it read (strongly), to tell "missing" from "created since".
   */
  public captureGuardCheck(guard: CaptureGuard): StagedPrecondition {
    const item: TransactItem = {
      ConditionCheck: {
        TableName: this.tableName,
        Key: { [REFERENCE_TABLE_KEYS.orders.partitionKey]: guard.orderId },
        ConditionExpression: '#state = :state AND #amountMinor = :amountMinor AND #currency = :currency',
        ExpressionAttributeNames: {
          '#state': 'state',
          '#amountMinor': 'amountMinor',
          '#currency': 'currency',
        },
        ExpressionAttributeValues: {
          ':state': guard.state,
          ':amountMinor': guard.amountMinor,
          ':currency': guard.currency,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
    return {
      item,
      rejected: async (current, cause) => {
        const order =
          current === undefined ? await this.get(guard.orderId) : parseStoredOrder(guard.orderId, current);
        return explainFailedGuard(guard, order, { cause });
      },
    };
  }

  private transitionUpdate(t: StagedTransition): TransitionUpdate {
    const names: Record<string, string> = {
      '#state': 'state',
      '#version': 'version',
      '#updatedAt': 'updatedAt',
    };
    // Without a version read, the version moves on from whatever is stored.
    const versioned = t.expectedVersion !== undefined;
    const values: Record<string, unknown> = {
      ':from': t.from,
      ':to': t.to,
      ':at': t.at.toISOString(),
      ...(versioned ? { ':expected': t.expectedVersion, ':next': t.expectedVersion + 1 } : { ':one': 1 }),
    };
    const sets = [
      '#state = :to',
      versioned ? '#version = :next' : '#version = #version + :one',
      '#updatedAt = :at',
    ];
    Object.entries(t.changes)
      .filter(([field, value]) => !CONTROLLED.has(field) && value !== undefined)
      .forEach(([field, value], index) => {
        names[`#c${index}`] = field;
        values[`:c${index}`] = value;
        sets.push(`#c${index} = :c${index}`);
      });
    return {
      Key: { [REFERENCE_TABLE_KEYS.orders.partitionKey]: t.orderId },
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: versioned ? '#state = :from AND #version = :expected' : '#state = :from',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    };
  }

  /** Reads the order again to say why the condition failed. */
  private async rejection(
    orderId: string,
    from: OrderState,
    to: OrderState,
    expectedVersion: number | undefined,
    cause: unknown,
  ): Promise<Error> {
    const current = await this.get(orderId);
    if (current === undefined) {
      return new IllegalTransitionError(`order ${orderId} does not exist; it cannot go to ${to}`, { cause });
    }
    if (current.state === from) {
      const read = expectedVersion === undefined ? 'no version read' : `version ${expectedVersion} read`;
      return new ConcurrentUpdateError(
        `order ${orderId} changed while it was processed (${read}, ${current.version} now)`,
        { cause },
      );
    }
    return explainRejectedTransition(current.state, to, statesOnlyAfter(from, to), { cause });
  }
}
