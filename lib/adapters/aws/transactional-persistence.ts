/**
 * Powertools idempotency over DynamoDB without its crash window (I4), and with the business
 * precondition checked in the claim.
 *
 * Plain Powertools writes the business result and completes the idempotency record in two calls:
 * a crash between them leaves the effect done and the record INPROGRESS, and the next delivery
 * does the work again. Here the handler stages its business write (keyed by the job's
 * idempotency key) and `_updateRecord` commits it in ONE TransactWriteItems with the record's
 * COMPLETED status, data and expiry: either both are written or neither is.
 *
 * A handler may also stage a precondition (a ConditionCheck on another item) before calling the
 * idempotent function: `_putRecord` then writes the INPROGRESS record in ONE TransactWriteItems
 * with the check, so the function runs only if the precondition held when the job was claimed,
 * with no separate read. Nothing is written when either fails.
 *
 * A lost answer (the request applied, the client timed out, the SDK resent it) is read for what it
 * is: a resent claim that finds the INPROGRESS record with its own claim token holds the job, and a
 * resent completion whose business condition fails on a COMPLETED record is done. DynamoDB itself
 * answers such a resend as a success within 10 minutes (the SDK keeps the ClientRequestToken); an
 * emulator, or a resend after that window, does not.
 *
 * Everything else is Powertools' own: the INPROGRESS put's condition and its answer to an
 * existing record (one call for a duplicate), payload validation, the record layout and key
 * hashing. With nothing staged, the put and the completion are Powertools' PutItem and UpdateItem.
 */
import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  IdempotencyItemAlreadyExistsError,
  IdempotencyRecordStatus,
  PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import type {
  BasePersistenceLayerOptions,
  IdempotencyRecordStatusValue,
} from '@aws-lambda-powertools/idempotency/types';
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

/** A condition on another item that must hold for the INPROGRESS record to be written. */
export interface StagedPrecondition {
  /** A ConditionCheck; with ReturnValuesOnConditionCheckFailure ALL_OLD, `rejected` sees the item. */
  readonly item: TransactItem;
  /**
   * Turns a failure of the check into a domain error carrying `cause`; `current` is the item the
   * check returned (undefined: there was none, or it was not asked for).
   */
  readonly rejected: (current: Record<string, unknown> | undefined, cause: unknown) => Promise<Error>;
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

/** What one job in flight has staged. */
interface JobStaging {
  readonly precondition?: StagedPrecondition;
  /** The precondition was checked in the write of the current INPROGRESS record. */
  held: boolean;
  write?: StagedWrite;
  /** The record that refused this job's claim (it exists: a duplicate or a delivery in progress). */
  found?: IdempotencyRecord;
}

/** Reasons DynamoDB gives for cancelling a transaction that a retry can overcome. */
const TRANSIENT_CANCELLATIONS = new Set([
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
  'RequestLimitExceeded',
]);

/**
 * Attribute of an INPROGRESS record written with a precondition: a token unique to the claim, so
 * a resent claim can recognise the record its own earlier attempt wrote.
 */
export const CLAIM_ATTR = 'claim_token';

/**
 * Powertools' condition for writing an INPROGRESS record (DynamoDBPersistenceLayer._putRecord):
 * no record, an expired one, or an INPROGRESS one whose invocation has timed out.
 */
const PUT_CONDITION = [
  'attribute_not_exists(#id)',
  '#expiry < :now',
  '(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)',
].join(' OR ');

/**
 * DynamoDBPersistenceLayer whose claim checks a staged precondition and whose completion commits
 * the staged business write, each atomically. Sort keys (`sortKeyAttr`) are not supported: the
 * tables here use a simple key.
 */
export class TransactionalDynamoDBPersistenceLayer extends DynamoDBPersistenceLayer {
  private readonly doc: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly attr: {
    readonly key: string;
    readonly expiry: string;
    readonly inProgressExpiry: string;
    readonly status: string;
    readonly data: string;
    readonly validation: string;
  };
  private readonly warnings: WarningSink | undefined;
  /** Staging by hashed idempotency key: one per job in flight in this process. */
  private readonly jobs = new Map<string, JobStaging>();
  /** Keys hash with the idempotency config's key expression and prefix only once configured. */
  private hashesKeys = false;

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
      inProgressExpiry:
        options.inProgressExpiryAttr ?? PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS.inProgressExpiryAttr,
      status: options.statusAttr ?? PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS.statusAttr,
      data: options.dataAttr ?? PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS.dataAttr,
      validation: options.validationKeyAttr ?? PERSISTENCE_ATTRIBUTE_KEY_MAPPINGS.validationKeyAttr,
    };
    this.warnings = options.warnings;
  }

  /** Powertools' own configure; remembers that keys now hash as the idempotent function's will. */
  public override configure(options: BasePersistenceLayerOptions): void {
    super.configure(options);
    this.hashesKeys = true;
  }

  /**
   * Stages `precondition` for the record of `data` (the payload the idempotent function will be
   * called with): the INPROGRESS record is then written only if it holds, in one transaction.
   * Call it before the idempotent function, after `configure` with the function's config and key
   * prefix; call the returned function when the job ends, whatever its outcome.
   * @throws TransientError when a job with the same key is in flight in this process (a
   * concurrent duplicate: it is retried after this one), Error when the layer is not configured.
   */
  public stagePrecondition(data: JSONValue, precondition: StagedPrecondition): () => void {
    if (!this.hashesKeys) {
      throw new Error('configure the persistence layer before staging a precondition: keys would not match');
    }
    const key = this.getHashedIdempotencyKey(data);
    if (this.jobs.has(key)) {
      throw new TransientError(`a job with idempotency key ${key} is already in flight in this process`);
    }
    const job: JobStaging = { precondition, held: false };
    this.jobs.set(key, job);
    return () => {
      if (this.jobs.get(key) === job) this.jobs.delete(key);
    };
  }

  /**
   * When the INPROGRESS record that refused the claim of `data` expires (epoch ms): Powertools'
   * in-progress error does not carry it. Undefined when the claim was not refused by one.
   */
  public inProgressExpiryOf(data: JSONValue): number | undefined {
    const found = this.jobs.get(this.getHashedIdempotencyKey(data))?.found;
    return found?.getStatus() === IdempotencyRecordStatus.INPROGRESS
      ? found.inProgressExpiryTimestamp
      : undefined;
  }

  /** Whether the precondition staged for `data` held when its INPROGRESS record was written. */
  public preconditionHeld(data: JSONValue): boolean {
    return this.jobs.get(this.getHashedIdempotencyKey(data))?.held === true;
  }

  /**
   * Stages `write` to commit when the record of `data` (the payload the idempotent function was
   * called with) becomes COMPLETED. Call it from inside the idempotent function.
   * @throws Error when a write is already staged for the same key (a bug in the caller).
   */
  public stage(data: JSONValue, write: StagedWrite): void {
    const key = this.getHashedIdempotencyKey(data);
    const job = this.jobs.get(key) ?? { held: false };
    if (job.write !== undefined) throw new Error(`a write is already staged for idempotency key ${key}`);
    job.write = write;
    this.jobs.set(key, job);
  }

  /** How many jobs have something staged that was not committed or released (a leak shows here). */
  public get stagedCount(): number {
    return this.jobs.size;
  }

  /** Writes the INPROGRESS record; with a staged precondition, both go into one TransactWriteItems. */
  protected override async _putRecord(record: IdempotencyRecord): Promise<void> {
    const job = this.jobs.get(record.idempotencyKey);
    const precondition = job?.precondition;
    if (job === undefined || precondition === undefined) return super._putRecord(record);
    const claim = randomUUID();
    try {
      await this.doc.send(
        new TransactWriteCommand({ TransactItems: [this.inProgress(record, claim), precondition.item] }),
      );
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const [own, check] = error.CancellationReasons ?? [];
      // The record found is the one this claim wrote: an earlier attempt of this very request
      // committed, its answer was lost and the SDK resent it (DynamoDB answers such a resend as a
      // success within 10 minutes, moto does not). The job is claimed, with the precondition held.
      if (own?.Code === 'ConditionalCheckFailed' && own.Item?.[CLAIM_ATTR]?.S === claim) {
        job.held = true;
        return;
      }
      // Nothing was written. The record's own condition comes first: a duplicate is answered
      // from its record, as Powertools answers it, whatever the precondition says.
      if (own?.Code === 'ConditionalCheckFailed') {
        job.found = this.existingRecord(own.Item);
        throw new IdempotencyItemAlreadyExistsError(
          `Failed to put record for already existing idempotency key: ${record.idempotencyKey}`,
          job.found,
          { cause: error },
        );
      }
      if (check?.Code === 'ConditionalCheckFailed') {
        throw await precondition.rejected(
          check.Item === undefined ? undefined : unmarshall(check.Item),
          error,
        );
      }
      throw transientOr(error, 'the claiming transaction was cancelled');
    }
    job.held = true;
  }

  /** Completes the record; with a staged write, both go into one TransactWriteItems. */
  protected override async _updateRecord(record: IdempotencyRecord): Promise<void> {
    const job = this.jobs.get(record.idempotencyKey);
    const staged = job?.write;
    if (
      job === undefined ||
      staged === undefined ||
      record.getStatus() !== IdempotencyRecordStatus.COMPLETED
    ) {
      return super._updateRecord(record);
    }
    this.forgetWrite(record.idempotencyKey, job);
    try {
      await this.doc.send(
        new TransactWriteCommand({ TransactItems: [staged.item, this.completion(record)] }),
      );
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const businessConditionFailed = error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed';
      // A failed business condition may be this very transaction, committed by an earlier attempt
      // whose answer was lost and then resent by the SDK's retry (DynamoDB answers a resend with
      // the same ClientRequestToken as a success for 10 minutes; moto, and any resend after that,
      // do not). Only a transaction like this one completes the record, so a COMPLETED record
      // means the write and the completion are both in: the job is done, not refused.
      if (businessConditionFailed && (await this.isCompleted(record.idempotencyKey))) return;
      // Nothing was written: give the key back so a retry need not wait for the in-progress expiry.
      await this.releaseInProgress(record.idempotencyKey);
      if (businessConditionFailed) throw await staged.rejected(error);
      throw transientOr(error, 'the completing transaction was cancelled');
    }
  }

  /**
   * Whether the record of `idempotencyKey` is COMPLETED (strongly consistent read). A read that
   * fails answers false: the caller then reports the business condition's error, as before.
   */
  private async isCompleted(idempotencyKey: string): Promise<boolean> {
    try {
      const { Item } = await this.doc.send(
        new GetCommand({
          TableName: this.table,
          Key: { [this.attr.key]: idempotencyKey },
          ProjectionExpression: '#status',
          ExpressionAttributeNames: { '#status': this.attr.status },
          ConsistentRead: true,
        }),
      );
      return Item?.[this.attr.status] === IdempotencyRecordStatus.COMPLETED;
    } catch (error) {
      this.warnings?.warn('could not read the idempotency record after a cancelled completion', {
        error,
        idempotencyKey,
      });
      return false;
    }
  }

  /** Powertools deletes the record when the function failed: its staged write goes too. */
  protected override async _deleteRecord(record: IdempotencyRecord): Promise<void> {
    const job = this.jobs.get(record.idempotencyKey);
    if (job !== undefined) {
      job.held = false;
      this.forgetWrite(record.idempotencyKey, job);
    }
    await super._deleteRecord(record);
  }

  /** Drops the job's write; the job itself too unless it still has a precondition to release. */
  private forgetWrite(key: string, job: JobStaging): void {
    job.write = undefined;
    if (job.precondition === undefined) this.jobs.delete(key);
  }

  /**
   * The INPROGRESS put as Powertools sends it, as a transact item, plus the `claim` token that
   * tells this claim's own record from another's (Powertools ignores the extra attribute).
   */
  private inProgress(record: IdempotencyRecord, claim: string): TransactItem {
    const item: Record<string, unknown> = {
      [this.attr.key]: record.idempotencyKey,
      [this.attr.expiry]: record.expiryTimestamp,
      [this.attr.status]: record.getStatus(),
      [CLAIM_ATTR]: claim,
    };
    if (record.inProgressExpiryTimestamp !== undefined) {
      item[this.attr.inProgressExpiry] = record.inProgressExpiryTimestamp;
    }
    if (this.isPayloadValidationEnabled() && record.payloadHash !== undefined) {
      item[this.attr.validation] = record.payloadHash;
    }
    const now = Date.now();
    return {
      Put: {
        TableName: this.table,
        Item: item,
        ConditionExpression: PUT_CONDITION,
        ExpressionAttributeNames: {
          '#id': this.attr.key,
          '#expiry': this.attr.expiry,
          '#in_progress_expiry': this.attr.inProgressExpiry,
          '#status': this.attr.status,
        },
        ExpressionAttributeValues: {
          ':now': now / 1000,
          ':now_in_millis': now,
          ':inprogress': IdempotencyRecordStatus.INPROGRESS,
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  /** The record a cancelled put found, built as Powertools builds it (undefined: it then reads it). */
  private existingRecord(item: Record<string, AttributeValue> | undefined): IdempotencyRecord | undefined {
    if (item === undefined) return undefined;
    const stored = unmarshall(item) as Record<string, unknown>;
    return new IdempotencyRecord({
      idempotencyKey: stored[this.attr.key] as string,
      status: stored[this.attr.status] as IdempotencyRecordStatusValue,
      expiryTimestamp: stored[this.attr.expiry] as number | undefined,
      inProgressExpiryTimestamp: stored[this.attr.inProgressExpiry] as number | undefined,
      responseData: stored[this.attr.data] as JSONValue | undefined,
      payloadHash: stored[this.attr.validation] as string | undefined,
    });
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

/** A cancellation a retry can overcome as a TransientError (with `cause`); any other as it is. */
function transientOr(error: TransactionCanceledException, what: string): Error {
  const codes = (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
  if (codes.some((code) => TRANSIENT_CANCELLATIONS.has(code))) {
    return new TransientError(`${what} (${codes.join(', ')})`, { cause: error });
  }
  return error;
}
