/**
 * Counts the commands an AWS SDK v3 client sends (DynamoDB, SQS, any other), by name, with a
 * middleware at the `initialize` step: one entry per `send`, whatever the SDK's own retries do
 * underneath. Document clients built with `DynamoDBDocumentClient.from(client)` share the
 * client's stack, so they count too. The integration tests and the benchmark both use it.
 *
 * For the benchmark, recordDynamoDbCapacity and recordSqsRequests record next to it what each
 * request is billed (read and write units, SQS requests in 64 KB chunks), by harness/aws/capacity.ts.
 */
import {
  DescribeTableCommand,
  GetItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { MetadataBearer, MiddlewareStack } from '@smithy/types';
import {
  batchGetReadUnits,
  batchWriteUnits,
  failedConditionWriteUnits,
  getItemReadUnits,
  itemSize,
  queryReadUnits,
  sqsMessagePayload,
  sqsRequests,
  transactGetUnits,
  transactWriteUnits,
  writeActionUnits,
  type Item,
  type SqsAttributeLike,
  type WriteAction,
} from './capacity';

/** The commands a client sent, in order ("PutItemCommand", "ChangeMessageVisibilityCommand", …). */
export interface SdkCallLog {
  /** Every command name since the last reset. */
  readonly calls: () => readonly string[];
  /** Forgets the calls seen so far. */
  readonly reset: () => void;
}

/** Any SDK v3 client: what the counter needs of it is its middleware stack. */
export interface SdkClientLike<Input extends object, Output extends MetadataBearer> {
  readonly middlewareStack: MiddlewareStack<Input, Output>;
}

/**
 * Starts counting the commands `client` sends; returns the log. A second counter on the same
 * client needs another `name` (a middleware of the same name replaces the first).
 */
export function countSdkCalls<Input extends object, Output extends MetadataBearer>(
  client: SdkClientLike<Input, Output>,
  name = 'tenangCallCounter',
): SdkCallLog {
  let calls: string[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      calls.push(String(context.commandName ?? 'unknown'));
      return next(args);
    },
    { step: 'initialize', name, override: true },
  );
  return {
    calls: () => [...calls],
    reset: () => {
      calls = [];
    },
  };
}

// --- Capacity ----------------------------------------------------------------------------------
// What each request is billed, by AWS's rules (harness/aws/capacity.ts), next to the count.
// Only the benchmark uses this: to size the items a DynamoDB request touches, it reads them aside
// through another client (GetItem, ConsistentRead) before and after the request.

/** How a DynamoDB request ended, as far as its bill goes. */
export type CapacityOutcome =
  /** Applied (or read): billed by the rules. */
  | 'ok'
  /** A conditional PutItem, UpdateItem or DeleteItem whose condition failed: billed on the item found. */
  | 'conditionFailed'
  /** A TransactWriteItems or TransactGetItems cancelled: an approximation (capacity.ts). */
  | 'cancelled'
  /** Any other error (throttling, validation, conflict): counted as unbilled, 0 units. */
  | 'error'
  /** A command the recorder cannot size (PartiQL), or an aside read that failed: no figure. */
  | 'unmeasured';

/** One DynamoDB request and the units it is billed. */
export interface DynamoDbCapacityRecord {
  /** "TransactWriteItemsCommand", as countSdkCalls names it. */
  readonly command: string;
  readonly readUnits: number;
  readonly writeUnits: number;
  readonly outcome: CapacityOutcome;
  /** Why the request is unmeasured. */
  readonly problem?: string;
}

/** The capacity of the requests a client sent while recording. */
export interface DynamoDbCapacityLog {
  readonly records: () => readonly DynamoDbCapacityRecord[];
  /** Forgets the records so far. */
  readonly reset: () => void;
  /** Stops recording: requests go through untouched, with no aside reads. */
  readonly pause: () => void;
  readonly resume: () => void;
}

/** Data-plane commands the recorder does not size (PartiQL): recorded as unmeasured. */
const UNSIZED = new Set(['ExecuteStatement', 'BatchExecuteStatement', 'ExecuteTransaction']);

/** An AttributeValue's type tags: an object with exactly one of them is taken as marshalled. */
const ATTRIBUTE_TAGS = new Set(['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL']);

/**
 * `item` in the service's form. The recorder sits after the document client's marshalling, so
 * inputs are marshalled; a document client's outputs are already unmarshalled when they reach it,
 * and are marshalled back here (a plain map whose every value is a one-key object named like an
 * attribute type would be taken as marshalled: a few bytes of error at most).
 */
function asItem(item: Record<string, unknown>): Item {
  const marshalled = Object.values(item).every(
    (v) =>
      typeof v === 'object' &&
      v !== null &&
      Object.keys(v).length === 1 &&
      ATTRIBUTE_TAGS.has(Object.keys(v)[0] ?? ''),
  );
  return marshalled
    ? (item as Item)
    : marshall(item, { convertClassInstanceToMap: true, removeUndefinedValues: true });
}

type Key = Record<string, AttributeValue>;
type Loose = Record<string, unknown>;

/** The error's name, for the SDK's service exceptions. */
function errorName(error: unknown): string {
  return error instanceof Error ? error.name : '';
}

/** Reads items aside: their sizes, by key, strongly consistent; key schemas by table. */
class Inspector {
  private readonly keySchemas = new Map<string, Promise<readonly string[]>>();

  public constructor(private readonly client: DynamoDBClient) {}

  /** The size of the item at `key`, undefined when there is none. */
  public async size(table: string, key: Key): Promise<number | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }),
    );
    return Item === undefined ? undefined : itemSize(Item);
  }

  /** The key of `item` in `table` (its key attributes). */
  public async keyOf(table: string, item: Item): Promise<Key> {
    let schema = this.keySchemas.get(table);
    if (schema === undefined) {
      schema = this.client
        .send(new DescribeTableCommand({ TableName: table }))
        .then(({ Table }) => (Table?.KeySchema ?? []).map((k) => k.AttributeName ?? ''));
      this.keySchemas.set(table, schema);
    }
    const key: Key = {};
    for (const name of await schema) {
      const value = item[name];
      if (value === undefined) throw new Error(`item for ${table} lacks key attribute ${name}`);
      key[name] = value;
    }
    return key;
  }
}

/** One write of a request, with what the recorder needs to size it. */
interface PlannedWrite {
  readonly kind: WriteAction['kind'];
  readonly table: string;
  readonly key: Key;
  readonly before: number | undefined;
  /** A Put's new item size (from the request). */
  readonly putSize?: number;
}

/** What a request will be billed, given how it ended. */
interface Plan {
  readonly succeeded: (output: Loose) => Promise<DynamoDbCapacityRecord>;
  readonly failed: (error: unknown) => Promise<DynamoDbCapacityRecord>;
}

/**
 * Starts recording the capacity of every DynamoDB request `client` sends (document clients built
 * from it included), reading items aside through `inspector`, a client of its own: its reads are
 * not the subject's and are not recorded. One record per `send`, as countSdkCalls counts them.
 *
 * Approximations, besides those of capacity.ts: the item before a write is read just before the
 * request and the item after an UpdateItem just after it, so a concurrent write to the same item
 * in between would be mistaken for this one's (the benchmark never writes one item concurrently);
 * a GetItem or TransactGetItems is sized on the item read aside after it (the whole item, as
 * DynamoDB bills a projection); a Query or Scan on the items it returned (DynamoDB bills a Query's
 * items before its filter and a Scan's items evaluated); BatchGetItem and BatchWriteItem bill
 * every request, unprocessed ones included.
 */
export function recordDynamoDbCapacity<Input extends object, Output extends MetadataBearer>(
  client: SdkClientLike<Input, Output>,
  inspector: DynamoDBClient,
  name = 'tenangCapacityRecorder',
): DynamoDbCapacityLog {
  if ((inspector as unknown) === (client as unknown)) {
    throw new Error('the inspector must be another client: its reads would be recorded as the subject’s');
  }
  const aside = new Inspector(inspector);
  let records: DynamoDbCapacityRecord[] = [];
  let paused = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (paused) return next(args);
      const command = String(context.commandName ?? 'unknown');
      let plan: Plan;
      try {
        plan = await planFor(aside, command, args.input as Loose);
      } catch (error) {
        const problem = `sizing failed before the request: ${error instanceof Error ? error.message : String(error)}`;
        plan = unmeasured(command, problem);
      }
      let result: Awaited<ReturnType<typeof next>>;
      try {
        result = await next(args);
      } catch (error) {
        records.push(await settle(command, () => plan.failed(error)));
        throw error;
      }
      records.push(await settle(command, () => plan.succeeded(result.output as Loose)));
      return result;
    },
    { step: 'build', priority: 'high', name, override: true },
  );
  return {
    records: () => [...records],
    reset: () => {
      records = [];
    },
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
    },
  };
}

/** The record `measure` gives, or an unmeasured one when sizing after the request failed. */
async function settle(
  command: string,
  measure: () => Promise<DynamoDbCapacityRecord>,
): Promise<DynamoDbCapacityRecord> {
  try {
    return await measure();
  } catch (error) {
    return {
      command,
      readUnits: 0,
      writeUnits: 0,
      outcome: 'unmeasured',
      problem: `sizing failed after the request: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

function unmeasured(command: string, problem: string): Plan {
  const record: DynamoDbCapacityRecord = {
    command,
    readUnits: 0,
    writeUnits: 0,
    outcome: 'unmeasured',
    problem,
  };
  return { succeeded: () => Promise.resolve(record), failed: () => Promise.resolve(record) };
}

/** Any other error: 0 units (throttled, invalid or conflicting requests are taken as unbilled). */
function otherError(command: string): DynamoDbCapacityRecord {
  return { command, readUnits: 0, writeUnits: 0, outcome: 'error' };
}

/** Reads what the request needs sized beforehand; returns how to bill it once it ends. */
async function planFor(aside: Inspector, command: string, input: Loose): Promise<Plan> {
  const op = command.replace(/Command$/, '');
  const reads = (readUnits: number, outcome: CapacityOutcome = 'ok'): DynamoDbCapacityRecord => ({
    command,
    readUnits,
    writeUnits: 0,
    outcome,
  });
  const writes = (writeUnits: number, outcome: CapacityOutcome = 'ok'): DynamoDbCapacityRecord => ({
    command,
    readUnits: 0,
    writeUnits,
    outcome,
  });
  const table = String(input.TableName ?? '');
  switch (op) {
    case 'GetItem': {
      const key = input.Key as Key;
      return {
        succeeded: async () =>
          reads(getItemReadUnits(await aside.size(table, key), input.ConsistentRead === true)),
        failed: () => Promise.resolve(otherError(command)),
      };
    }
    case 'BatchGetItem': {
      const requests = Object.entries(
        input.RequestItems as Record<string, { Keys?: Key[]; ConsistentRead?: boolean }>,
      );
      return {
        succeeded: async () => {
          let units = 0;
          for (const [t, r] of requests) {
            const sizes = await Promise.all((r.Keys ?? []).map((k) => aside.size(t, k)));
            units += batchGetReadUnits(sizes, r.ConsistentRead === true);
          }
          return reads(units);
        },
        failed: () => Promise.resolve(otherError(command)),
      };
    }
    case 'Query':
    case 'Scan':
      return {
        succeeded: (output) => {
          const items = (output.Items as Loose[] | undefined) ?? [];
          return Promise.resolve(
            reads(
              queryReadUnits(
                items.map((i) => itemSize(asItem(i))),
                input.ConsistentRead === true,
              ),
            ),
          );
        },
        failed: () => Promise.resolve(otherError(command)),
      };
    case 'TransactGetItems': {
      const gets = (
        (input.TransactItems as { Get?: { TableName?: string; Key?: Key } }[] | undefined) ?? []
      ).map((i) => ({ table: String(i.Get?.TableName ?? ''), key: i.Get?.Key ?? {} }));
      const sized = async (): Promise<number> =>
        transactGetUnits(await Promise.all(gets.map((g) => aside.size(g.table, g.key))));
      return {
        succeeded: async () => reads(await sized()),
        // Not documented: billed as if every item had been read (an upper bound).
        failed: async (error) =>
          errorName(error) === 'TransactionCanceledException'
            ? reads(await sized(), 'cancelled')
            : otherError(command),
      };
    }
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem': {
      const kind = op === 'PutItem' ? 'Put' : op === 'UpdateItem' ? 'Update' : 'Delete';
      const write = await planWrite(aside, kind, table, input);
      return {
        succeeded: async () => writes(writeActionUnits(await applied(aside, write))),
        failed: (error) =>
          Promise.resolve(
            errorName(error) === 'ConditionalCheckFailedException'
              ? writes(failedConditionWriteUnits(write.before), 'conditionFailed')
              : otherError(command),
          ),
      };
    }
    case 'BatchWriteItem': {
      const planned: PlannedWrite[] = [];
      for (const [t, requests] of Object.entries(
        input.RequestItems as Record<string, { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Key } }[]>,
      )) {
        for (const r of requests) {
          planned.push(
            r.PutRequest !== undefined
              ? await planWrite(aside, 'Put', t, { Item: r.PutRequest.Item })
              : await planWrite(aside, 'Delete', t, { Key: r.DeleteRequest?.Key }),
          );
        }
      }
      return {
        succeeded: async () =>
          writes(batchWriteUnits(await Promise.all(planned.map((w) => applied(aside, w))))),
        failed: () => Promise.resolve(otherError(command)),
      };
    }
    case 'TransactWriteItems': {
      const planned = await Promise.all(
        ((input.TransactItems as Loose[] | undefined) ?? []).map((item) => {
          const [kind, action] = Object.entries(item).find(([, v]) => v !== undefined) ?? [];
          if (kind !== 'Put' && kind !== 'Update' && kind !== 'Delete' && kind !== 'ConditionCheck') {
            throw new Error(`unknown transact item ${String(kind)}`);
          }
          const a = action as Loose;
          return planWrite(aside, kind, String(a.TableName ?? ''), a);
        }),
      );
      return {
        succeeded: async () =>
          writes(transactWriteUnits(await Promise.all(planned.map((w) => applied(aside, w))), 'committed')),
        failed: (error) =>
          Promise.resolve(
            errorName(error) === 'TransactionCanceledException'
              ? writes(
                  transactWriteUnits(
                    planned.map((w) => ({ kind: w.kind, before: w.before }) as WriteAction),
                    'cancelled',
                  ),
                  'cancelled',
                )
              : otherError(command),
          ),
      };
    }
    default:
      if (UNSIZED.has(op)) return unmeasured(command, `${op} is not sized`);
      // Control-plane commands (DescribeTable, …) are not billed in request units.
      return {
        succeeded: () => Promise.resolve(writes(0)),
        failed: () => Promise.resolve(otherError(command)),
      };
  }
}

/** Reads the item a write will touch, before the request. */
async function planWrite(
  aside: Inspector,
  kind: WriteAction['kind'],
  table: string,
  input: Loose,
): Promise<PlannedWrite> {
  if (kind === 'Put') {
    const item = input.Item as Item;
    const key = await aside.keyOf(table, item);
    return { kind, table, key, before: await aside.size(table, key), putSize: itemSize(item) };
  }
  const key = input.Key as Key;
  return { kind, table, key, before: await aside.size(table, key) };
}

/** The write as applied: an Update's item is read again afterwards, a Put's is the request's. */
async function applied(aside: Inspector, w: PlannedWrite): Promise<WriteAction> {
  switch (w.kind) {
    case 'Put':
      return { kind: 'Put', before: w.before, after: w.putSize ?? 0 };
    case 'Update':
      return { kind: 'Update', before: w.before, after: await aside.size(w.table, w.key) };
    case 'Delete':
      return { kind: 'Delete', before: w.before };
    case 'ConditionCheck':
      return { kind: 'ConditionCheck', before: w.before };
  }
}

/** One SQS request and what it is billed. */
export interface SqsRequestRecord {
  /** "ReceiveMessageCommand". */
  readonly command: string;
  /** Messages the request carried (sent, received, deleted, made visible). */
  readonly messages: number;
  /** Bytes of message payload (bodies and message attributes) it carried. */
  readonly payloadBytes: number;
  /** Billed requests: one per 64 KB chunk of payload, at least one. */
  readonly requests: number;
}

/** The SQS requests a client sent while recording. */
export interface SqsRequestLog {
  readonly records: () => readonly SqsRequestRecord[];
  readonly reset: () => void;
}

interface SqsMessageLike {
  readonly MessageBody?: string;
  readonly Body?: string;
  readonly MessageAttributes?: Record<string, SqsAttributeLike>;
}

/**
 * Starts recording the billed requests (64 KB chunks) of every SQS command `client` sends. The
 * payload of a send is in its request, of a receive in its answer; deletes and visibility changes
 * carry receipt handles only: one request each, a batch of up to 10 included.
 */
export function recordSqsRequests<Input extends object, Output extends MetadataBearer>(
  client: SdkClientLike<Input, Output>,
  name = 'tenangSqsRequestRecorder',
): SqsRequestLog {
  let records: SqsRequestRecord[] = [];
  const payload = (messages: readonly SqsMessageLike[]): number =>
    messages.reduce((sum, m) => sum + sqsMessagePayload(m.MessageBody ?? m.Body, m.MessageAttributes), 0);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? 'unknown');
      const input = args.input as Loose;
      const record = (messages: number, payloadBytes: number): void => {
        records.push({ command, messages, payloadBytes, requests: sqsRequests(payloadBytes) });
      };
      let result: Awaited<ReturnType<typeof next>>;
      try {
        result = await next(args);
      } catch (error) {
        record(0, 0);
        throw error;
      }
      const entries = input.Entries as SqsMessageLike[] | undefined;
      switch (command.replace(/Command$/, '')) {
        case 'SendMessage':
          record(1, payload([input as SqsMessageLike]));
          break;
        case 'SendMessageBatch':
          record(entries?.length ?? 0, payload(entries ?? []));
          break;
        case 'ReceiveMessage': {
          const messages = ((result.output as Loose).Messages as SqsMessageLike[] | undefined) ?? [];
          record(messages.length, payload(messages));
          break;
        }
        default:
          record(entries?.length ?? (input.ReceiptHandle === undefined ? 0 : 1), 0);
      }
      return result;
    },
    { step: 'build', priority: 'high', name, override: true },
  );
  return {
    records: () => [...records],
    reset: () => {
      records = [];
    },
  };
}
