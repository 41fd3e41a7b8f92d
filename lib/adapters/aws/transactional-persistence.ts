/**
 * Powertools idempotency over DynamoDB without its crash window (I4).
 *
 * Plain Powertools writes the business result and completes the idempotency record in two calls:
 * a crash between them leaves the effect done and the record INPROGRESS, and the next delivery
 * does the work again. Here the handler stages its business write (keyed by the job's
 * idempotency key) and `_updateRecord` commits it in ONE TransactWriteItems with the record's
 * COMPLETED status, data and expiry: either both are written or neither is.
 *
 * Everything else is Powertools' own: the INPROGRESS put (conditional, with
 * ReturnValuesOnConditionCheckFailure so a duplicate costs one call), payload validation, the
 * record layout and key hashing. A completion with nothing staged is Powertools' UpdateItem.
 */
import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import {
  IdempotencyRecordStatus,
  PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import type { JSONValue } from '@aws-lambda-powertools/commons/types';
import { TransientError } from '../../core/errors';

/** One item of a TransactWriteItems call, in the document client's (unmarshalled) form. */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A business write that commits together with the completion of an idempotency record. */
export interface StagedWrite {
  /** The write; its ConditionExpression guards the business invariant (state and version). */
  readonly item: TransactItem;
  /**
   * Turns a failure of the item's condition into a domain error (TransitionAlreadyDoneError,
   * IllegalTransitionError, …) carrying `cause`; may read the item's current state.
   */
  readonly rejected: (cause: unknown) => Promise<Error>;
}

/** Where failures that do not change the outcome are reported (a Powertools Logger fits). */
export interface WarningSink {
  warn(message: string, extra: { error: unknown; idempotencyKey: string }): void;
}

/** Options of TransactionalDynamoDBPersistenceLayer. */
export interface TransactionalPersistenceOptions {
  readonly tableName: string;
  /** Every call goes through it: Powertools' own and the transactions. */
  readonly awsSdkV3Client: DynamoDBClient;
  /** @default 'id' */
  readonly keyAttr?: string;
  /** @default 'expiration' */
  readonly expiryAttr?: string;
  /** @default 'in_progress_expiration' */
  readonly inProgressExpiryAttr?: string;
  /** @default 'status' */
  readonly statusAttr?: string;
  /** @default 'data' */
  readonly dataAttr?: string;
  /** @default 'validation' */
  readonly validationKeyAttr?: string;
  /** @default - failures to release an INPROGRESS record are not reported */
  readonly warnings?: WarningSink;
}

/** Reasons DynamoDB gives for cancelling a transaction that a retry can overcome. */
const TRANSIENT_CANCELLATIONS = new Set([
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
  'RequestLimitExceeded',
]);

/**
 * DynamoDBPersistenceLayer whose completion commits the staged business write atomically.
 * Sort keys (`sortKeyAttr`) are not supported: the tables here use a simple key.
 */
export class TransactionalDynamoDBPersistenceLayer extends DynamoDBPersistenceLayer {
  private readonly doc: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly attr: {
    readonly key: string;
    readonly expiry: string;
    readonly status: string;
    readonly data: string;
    readonly validation: string;
  };
  private readonly warnings: WarningSink | undefined;
  /** Staged writes by hashed idempotency key: one per job in flight in this process. */
  private readonly staged = new Map<string, StagedWrite>();

  public constructor(options: TransactionalPersistenceOptions) {
    super({
      tableName: options.tableName,
      awsSdkV3Client: options.awsSdkV3Client,
      keyAttr: options.keyAttr,
      expiryAttr: options.expiryAttr,
      inProgressExpiryAttr: options.inProgressExpiryAttr,
      statusAttr: options.statusAttr,
      dataAttr: options.dataAttr,
      validationKeyAttr: options.validationKeyAttr,
    });
    // No translateConfig: the document client writes it into the shared client's config.
    this.doc = DynamoDBDocumentClient.from(options.awsSdkV3Client);
    this.table = options.tableName;
    this.attr = {
      key: options.keyAttr ?? 'id',
      expiry: options.expiryAttr ?? PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS.expiryAttr,
      status: options.statusAttr ?? PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS.statusAttr,
      data: options.dataAttr ?? PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS.dataAttr,
      validation: options.validationKeyAttr ?? PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS.validationKeyAttr,
    };
    this.warnings = options.warnings;
  }

  /**
   * Stages `write` to commit when the record of `data` (the payload the idempotent function was
   * called with) becomes COMPLETED. Call it from inside the idempotent function.
   * @throws Error when a write is already staged for the same key (a bug in the caller).
   */
  public stage(data: JSONValue, write: StagedWrite): void {
    const key = this.getHashedIdempotencyKey(data);
    if (this.staged.has(key)) throw new Error(`a write is already staged for idempotency key ${key}`);
    this.staged.set(key, write);
  }

  /** Drops whatever is staged for `data`; harmless when nothing is. Call it when a job ends. */
  public discard(data: JSONValue): void {
    this.staged.delete(this.getHashedIdempotencyKey(data));
  }

  /** How many writes are staged and not yet committed or discarded (a leak shows here). */
  public get stagedCount(): number {
    return this.staged.size;
  }

  /** Completes the record; with a staged write, both go into one TransactWriteItems. */
  protected override async _updateRecord(record: IdempotencyRecord): Promise<void> {
    const staged = this.staged.get(record.idempotencyKey);
    if (staged === undefined || record.getStatus() !== IdempotencyRecordStatus.COMPLETED) {
      return super._updateRecord(record);
    }
    this.staged.delete(record.idempotencyKey);
    try {
      await this.doc.send(
        new TransactWriteCommand({ TransactItems: [staged.item, this.completion(record)] }),
      );
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      // Nothing was written: give the key back so a retry need not wait for the in-progress expiry.
      await this.releaseInProgress(record.idempotencyKey);
      const codes = (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
      if (codes[0] === 'ConditionalCheckFailed') throw await staged.rejected(error);
      if (codes.some((code) => TRANSIENT_CANCELLATIONS.has(code))) {
        throw new TransientError(`the completing transaction was cancelled (${codes.join(', ')})`, {
          cause: error,
        });
      }
      throw error;
    }
  }

  /** Powertools deletes the record when the function failed: its staged write goes too. */
  protected override async _deleteRecord(record: IdempotencyRecord): Promise<void> {
    this.staged.delete(record.idempotencyKey);
    await super._deleteRecord(record);
  }

  /** The record's completion, the same fields Powertools' UpdateItem sets. */
  private completion(record: IdempotencyRecord): TransactItem {
    const names: Record<string, string> = { '#expiry': this.attr.expiry, '#status': this.attr.status };
    const values: Record<string, unknown> = {
      ':expiry': record.expiryTimestamp,
      ':status': record.getStatus(),
    };
    const sets = ['#expiry = :expiry', '#status = :status'];
    if (record.responseData !== undefined) {
      sets.push('#response_data = :response_data');
      names['#response_data'] = this.attr.data;
      values[':response_data'] = record.responseData;
    }
    if (this.isPayloadValidationEnabled() && record.payloadHash !== undefined) {
      sets.push('#validation_key = :validation_key');
      names['#validation_key'] = this.attr.validation;
      values[':validation_key'] = record.payloadHash;
    }
    return {
      Update: {
        TableName: this.table,
        Key: { [this.attr.key]: record.idempotencyKey },
        UpdateExpression: `SET ${sets.join(', ')}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    };
  }

  /**
   * Deletes the record while it is still INPROGRESS. Safe under Lambda's timeout: the record's
   * in-progress expiry is this invocation's remaining time, so no other invocation can own it yet.
   */
  private async releaseInProgress(idempotencyKey: string): Promise<void> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.table,
          Key: { [this.attr.key]: idempotencyKey },
          ConditionExpression: '#status = :inprogress',
          ExpressionAttributeNames: { '#status': this.attr.status },
          ExpressionAttributeValues: { ':inprogress': IdempotencyRecordStatus.INPROGRESS },
        }),
      );
    } catch (error) {
      // Not ours any more, or unreachable: the record then waits for its in-progress expiry.
      if (!(error instanceof ConditionalCheckFailedException)) {
        this.warnings?.warn('could not release the INPROGRESS idempotency record', { error, idempotencyKey });
      }
    }
  }
}
