/**
 * What AWS bills a request for, by its published rules, as pure functions: DynamoDB item sizes
 * and the read and write request units of each operation, SQS requests in 64 KB chunks, Lambda
 * GB-seconds. Sizes are in bytes; "no item" is `undefined`. The benchmark feeds them the items it
 * reads aside (harness/aws/call-counter.ts, recordDynamoDbCapacity); nothing here does I/O.
 *
 * Units are the same for on-demand and provisioned tables: a write request unit (WRU) and a
 * write capacity unit (WCU) both cover 1 KB, a read unit 4 KB; only the price differs.
 * All sizes use binary units: 1 KB = 1024 bytes
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/** A DynamoDB item in the service's (marshalled) form. */
export type Item = Record<string, AttributeValue>;

const utf8 = (s: string): number => Buffer.byteLength(s, 'utf8');

// --- Item size ---------------------------------------------------------------------------------
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html
// "The total size of an item is the sum of the lengths of its attribute names and values, plus any
// applicable overhead": strings are their UTF-8 bytes; numbers about 1 byte per two significant
// digits plus 1 (leading and trailing zeroes trimmed); binary its raw bytes (not the base64);
// null and Boolean 1 byte; a List or Map 3 bytes plus its elements, each element 1 byte more.
// The 100 bytes per item the same page adds are storage overhead (billed per GB stored), not
// part of the size reads and writes are billed on.

/**
 * Significant digits of a DynamoDB number ("1250" → 3, "0.050" → 1, "-12.5e3" → 3). The sign and
 * an exponent are not digits. Zero trims to no digit at all.
 */
export function significantDigits(n: string): number {
  const mantissa = n.trim().replace(/^[+-]/, '').split(/[eE]/)[0] ?? '';
  return mantissa.replace('.', '').replace(/^0+/, '').replace(/0+$/, '').length;
}

/**
 * A number's size: 1 byte per two significant digits, rounded up, plus 1 byte. The page calls it
 * approximate; negative numbers are counted like positive ones (the page gives no extra byte).
 */
export function numberSize(n: string): number {
  return Math.ceil(significantDigits(n) / 2) + 1;
}

/**
 * The size of one attribute value, without its name. Sets are not on the page: counted here as
 * the sum of their members, with no overhead (an approximation).
 */
export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + valueSize(element) + 1, 0);
  if (value.M !== undefined) {
    return 3 + Object.entries(value.M).reduce((sum, [name, v]) => sum + utf8(name) + valueSize(v) + 1, 0);
  }
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  throw new Error(`not a DynamoDB attribute value: ${JSON.stringify(value)}`);
}

/** An item's size: each attribute's name (UTF-8 bytes) plus its value. */
export function itemSize(item: Item): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueSize(value), 0);
}

// --- Units -------------------------------------------------------------------------------------
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html
// (formerly ProvisionedThroughput.html#ItemSizeCalculations): "A write capacity unit represents one
// write per second, for an item up to 1 KB in size"; "Item sizes for writes are rounded up to the
// next 1 KB multiple"; reads "rounded up to the next 4 KB multiple"; a strongly consistent read of
// up to 4 KB is one unit, an eventually consistent one half, a transactional one two. On-demand
// prices the same units: https://aws.amazon.com/dynamodb/pricing/on-demand/ ("a transactional read
// of an 8 KB item requires four read request units", "a transactional write request of a 3 KB item
// would require six").

export const WRITE_UNIT_BYTES = 1024;
export const READ_UNIT_BYTES = 4096;

/** How a read is made. */
export type ReadConsistency = 'strong' | 'eventual' | 'transactional';

/**
 * Write units of writing `size` bytes: 1 KB blocks, rounded up, at least one (writing or deleting
 * an item of 0 bytes, or none, still consumes a unit).
 */
export function writeUnits(size: number): number {
  return Math.max(1, Math.ceil(size / WRITE_UNIT_BYTES));
}

/**
 * Read units of reading `size` bytes: 4 KB blocks, rounded up, at least one ("If you perform a
 * read operation on an item that does not exist, DynamoDB still consumes provisioned read
 * throughput: a strongly consistent read request consumes one read capacity unit, while an
 * eventually consistent read request consumes 0.5"); half for an eventually consistent read,
 * twice for a transactional one.
 */
export function readUnits(size: number, consistency: ReadConsistency): number {
  const blocks = Math.max(1, Math.ceil(size / READ_UNIT_BYTES));
  if (consistency === 'eventual') return blocks / 2;
  if (consistency === 'transactional') return blocks * 2;
  return blocks;
}

// --- Writes ------------------------------------------------------------------------------------
// Same page, "Capacity unit consumption for write operations":
// - PutItem: "If an item with the same primary key exists in the table, the operation replaces the
//   item. For calculating provisioned throughput consumption, the item size that matters is the
//   larger of the two."
// - UpdateItem: "DynamoDB considers the size of the item as it appears before and after the
//   update. The provisioned throughput consumed reflects the larger of these item sizes", even when
//   only a subset of attributes changes.
// - DeleteItem: "based on the size of the deleted item".
// - BatchWriteItem: "DynamoDB processes each item in the batch as an individual PutItem or
//   DeleteItem request", each rounded up to 1 KB first ("a 500-byte item and a 3.5 KB item … 5 KB").

/** One write of a PutItem, UpdateItem, DeleteItem, a BatchWriteItem request or a transact item. */
export type WriteAction =
  /** `after`: the new item's size; `before`: the item it replaces, if any. */
  | { readonly kind: 'Put'; readonly before?: number; readonly after: number }
  /** `after`: the item once updated (undefined only if the update wrote nothing). */
  | { readonly kind: 'Update'; readonly before?: number; readonly after?: number }
  | { readonly kind: 'Delete'; readonly before?: number }
  /** A TransactWriteItems ConditionCheck: `before` is the item checked. */
  | { readonly kind: 'ConditionCheck'; readonly before?: number };

/**
 * Write units of a conditional write whose condition failed: the size of the item it found, at
 * least one; one when there was none.
 *
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/WorkingWithItems.html#WorkingWithItems.ConditionalWrites.ReturnConsumedCapacity
 * "If a ConditionExpression evaluates to false during a conditional write, DynamoDB still consumes
 * write capacity from the table: If the item does not currently exist in the table, DynamoDB
 * consumes one write capacity unit. If the item does exist, the number of write capacity units
 * consumed depends on the size of the item." (The older ProvisionedThroughput page said "depends on
 * the size of the new item" for the same case; the two differ only when the item the write would
 * have written is larger, in its 1 KB blocks, than the one it found.)
 */
export function failedConditionWriteUnits(existing: number | undefined): number {
  return existing === undefined ? 1 : writeUnits(existing);
}

/**
 * Write units of one write that was applied, by the rules above. A ConditionCheck is billed as a
 * write of the item it checks (see transactWriteUnits).
 */
export function writeActionUnits(action: WriteAction): number {
  switch (action.kind) {
    case 'Put':
      return writeUnits(Math.max(action.before ?? 0, action.after));
    case 'Update':
      return writeUnits(Math.max(action.before ?? 0, action.after ?? 0));
    case 'Delete':
      return writeUnits(action.before ?? 0);
    case 'ConditionCheck':
      return writeUnits(action.before ?? 0);
  }
}

/** Write units of a BatchWriteItem: each request on its own, rounded up, then summed. */
export function batchWriteUnits(actions: readonly WriteAction[]): number {
  return actions.reduce((sum, a) => sum + writeActionUnits(a), 0);
}

// --- Transactions ------------------------------------------------------------------------------
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling
// "DynamoDB performs two underlying reads or writes of every item in the transaction: one to
// prepare the transaction and one to commit the transaction"; "each transaction writes three
// 500-byte items … Each item requires two write capacity units … six WCUs"; a read transaction
// of three 500-byte items, six RCUs.
//
// ConditionCheck: the page counts it among "every item in the transaction" and TransactWriteItems
// is a write operation, but no AWS page says in so many words whether a ConditionCheck is billed
// in read or in write units. It is billed here as a transactional write of the item checked: two
// write units per KB. That is what DynamoDB reports in ConsumedCapacity for one, measured against
// the service (paritysuite/dynamodb-conformance pull request #67, June 2026: "A standalone
// ConditionCheck costs 2 WCU, billed as write rather than read").
//
// A cancelled transaction (TransactionCanceledException, a condition failed) returns no
// ConsumedCapacity, and no AWS page says what it costs. Approximation: every item is billed as a
// failed conditional write (the item found, at least one unit), twice (prepare and commit). An
// upper bound rather than a measurement: the prepare phase may stop at the first failed condition.

/** Whether a TransactWriteItems committed or was cancelled. */
export type TransactionOutcome = 'committed' | 'cancelled';

/** Write units of a TransactWriteItems: two per item's units (see above). */
export function transactWriteUnits(actions: readonly WriteAction[], outcome: TransactionOutcome): number {
  const units = (a: WriteAction): number =>
    outcome === 'committed' ? writeActionUnits(a) : failedConditionWriteUnits(a.before);
  return actions.reduce((sum, a) => sum + 2 * units(a), 0);
}

/** Read units of a TransactGetItems: a transactional read of each item (missing ones included). */
export function transactGetUnits(sizes: readonly (number | undefined)[]): number {
  return sizes.reduce<number>((sum, size) => sum + readUnits(size ?? 0, 'transactional'), 0);
}

// --- Reads -------------------------------------------------------------------------------------
// read-write-operations.html, "Capacity unit consumption for read operations":
// - GetItem: the item's size rounded up to 4 KB; halved when eventually consistent.
// - BatchGetItem: "DynamoDB processes each item in the batch as an individual GetItem request, so
//   DynamoDB first rounds up the size of each item to the next 4 KB boundary, and then calculates
//   the total size" (1.5 KB and 6.5 KB → 12 KB).
// - Query: "All items returned are treated as a single read operation, where DynamoDB computes the
//   total size of all items and then rounds up to the next 4 KB boundary" (40.8 KB → 44 KB).
// - Scan: "the size of the items that are evaluated, not the size of the items returned".
// - "you can request a subset of attributes to retrieve. However, doing so has no impact on the
//   item size calculations": a projection is billed on the whole item.

/** Read units of a GetItem of an item of `size` bytes (undefined: no such item). */
export function getItemReadUnits(size: number | undefined, consistent: boolean): number {
  return readUnits(size ?? 0, consistent ? 'strong' : 'eventual');
}

/** Read units of a BatchGetItem of one table: each item rounded up on its own. */
export function batchGetReadUnits(sizes: readonly (number | undefined)[], consistent: boolean): number {
  return sizes.reduce<number>((sum, size) => sum + getItemReadUnits(size, consistent), 0);
}

/** Read units of a Query (or Scan) over items of `sizes`: their total, rounded up once. */
export function queryReadUnits(sizes: readonly number[], consistent: boolean): number {
  const total = sizes.reduce((sum, s) => sum + s, 0);
  return readUnits(total, consistent ? 'strong' : 'eventual');
}

// --- SQS ---------------------------------------------------------------------------------------
// https://aws.amazon.com/sqs/pricing/ : "API Actions: Every Amazon SQS action counts as a request",
// and "Each 64 KB chunk of a payload is billed as 1 request (for example, an API action with a
// 256 KB payload is billed as 4 requests)" (also https://aws.amazon.com/sqs/features/). A batch
// action (SendMessageBatch, DeleteMessageBatch, ChangeMessageVisibilityBatch, a ReceiveMessage of
// up to 10 messages) is one action: one request per 64 KB chunk of the batch's whole payload.

export const SQS_CHUNK_BYTES = 64 * 1024;

/** Billed SQS requests of one action carrying `payloadBytes` of messages: 64 KB chunks, at least one. */
export function sqsRequests(payloadBytes: number): number {
  return Math.max(1, Math.ceil(payloadBytes / SQS_CHUNK_BYTES));
}

/** A message attribute as SQS carries it. */
export interface SqsAttributeLike {
  readonly DataType?: string;
  readonly StringValue?: string;
  readonly BinaryValue?: Uint8Array;
}

/**
 * A message's payload: its body and its message attributes, each attribute's name, data type and
 * value. https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_MessageAttributeValue.html
 * "All parts of the message attribute, including Name, Type, and Value, are part of the message
 * size restriction". System attributes (SentTimestamp, …) are not part of it. Whether SQS bills
 * the 64 KB chunks on exactly this size is not spelled out: an approximation.
 */
export function sqsMessagePayload(
  body: string | undefined,
  attributes: Readonly<Record<string, SqsAttributeLike>> | undefined,
): number {
  let size = utf8(body ?? '');
  for (const [name, a] of Object.entries(attributes ?? {})) {
    size +=
      utf8(name) + utf8(a.DataType ?? '') + utf8(a.StringValue ?? '') + (a.BinaryValue?.byteLength ?? 0);
  }
  return size;
}

// --- Lambda ------------------------------------------------------------------------------------
// https://aws.amazon.com/lambda/pricing/ : "Duration is calculated from the time your code begins
// executing until it returns or otherwise terminates, rounded up to the nearest 1 ms. The price
// depends on the amount of memory you allocate to your function": GB-seconds, memory in GB of
// 1024 MB.

/** Milliseconds billed for an invocation that ran `durationMs`: rounded up to 1 ms. */
export function lambdaBilledMs(durationMs: number): number {
  return Math.ceil(durationMs);
}

/** GB-seconds billed for an invocation of `durationMs` with `memoryMb` configured. */
export function lambdaGbSeconds(durationMs: number, memoryMb: number): number {
  return (lambdaBilledMs(durationMs) / 1000) * (memoryMb / 1024);
}
