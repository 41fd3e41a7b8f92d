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
 *
 * With `guardedItemRecordAttr`, a job whose precondition is a ConditionCheck keeps its record ON
 * the item the check guards, in that map attribute, and no transaction is needed: the claim is
 * ONE conditional UpdateItem of that item (the guard's condition AND Powertools' put condition
 * applied to the record), the completion ONE UpdateItem merging the staged write (which must then
 * be an Update of that same item) with the record's completion, conditioned on the record still
 * being this claim's INPROGRESS one, and the release a REMOVE of the record on that condition.
 * Each is a single-item write: 1 write unit per KB where a transaction bills 2 per item. The
 * record there has no TTL (the item must never expire); its `expiration` is read as Powertools
 * reads it (an expired record may be claimed again). A record of ANOTHER idempotency key on the
 * item (another payment of the same order) is never overwritten while it is a live INPROGRESS
 * one: the claim is then answered as in progress (a transient wait for its in-progress expiry);
 * any other record of another key is replaced when the guard holds, so when the claim fails the
 * guard's rejection explains why.
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
  UpdateCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  IdempotencyItemAlreadyExistsError,
  IdempotencyItemNotFoundError,
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
  /**
   * The map attribute that holds the record of a job whose precondition is a ConditionCheck, on
   * the item the check guards (GUARDED_ITEM_RECORD_ATTR fits): claim, completion and release
   * are then one UpdateItem each of that item, and the job's staged write must be an Update of
   * it. Never a TTL attribute of that table.
   * @default - records stay on `tableName`, claimed with the check in one TransactWriteItems
   */
  readonly guardedItemRecordAttr?: string;
}

/** An attribute to keep a job's idempotency record in, on the item it guards (e.g. the reference app's capture, on its order). */
export const GUARDED_ITEM_RECORD_ATTR = 'idempotency';

/** The item a job's record lives on (guardedItemRecordAttr), and this job's claim of it. */
interface GuardedItem {
  readonly table: string;
  readonly key: Record<string, unknown>;
  /** The claim token of the last claim sent; undefined before the claim. */
  claim?: string;
}

/** What one job in flight has staged. */
interface JobStaging {
  readonly precondition?: StagedPrecondition;
  /** Set when the record lives on the item the precondition guards. */
  readonly item?: GuardedItem;
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
 * When a claim may write its record into the guarded item's map `#idem`: Powertools' put
 * condition applied to the map (no record, an expired one, an INPROGRESS one whose invocation has
 * timed out), or a record of another key that is not INPROGRESS (it is replaced: the guard, checked
 * in the same condition, then decides; for a capture, a completed one left the order PAID).
 */
const ITEM_CLAIM_CONDITION = [
  'attribute_not_exists(#idem)',
  '#idem.#idem_expiry < :idem_now',
  '(#idem.#idem_status = :idem_inprogress AND attribute_exists(#idem.#idem_in_progress_expiry) AND #idem.#idem_in_progress_expiry < :idem_now_in_millis)',
  '(#idem.#idem_key <> :idem_key AND #idem.#idem_status <> :idem_inprogress)',
].join(' OR ');

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
 * the staged business write, each atomically (a transaction, or one UpdateItem when the record
 * lives on the guarded item). Sort keys (`sortKeyAttr`) are not supported: the tables here use a
 * simple key.
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
  /** guardedItemRecordAttr: undefined keeps every record on `table`. */
  private readonly recordAttr: string | undefined;
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
    this.recordAttr = options.guardedItemRecordAttr;
  }

  /** Powertools' own configure; remembers that keys now hash as the idempotent function's will. */
  public override configure(options: BasePersistenceLayerOptions): void {
    super.configure(options);
    this.hashesKeys = true;
  }

  /**
   * Stages `precondition` for the record of `data` (the payload the idempotent function will be
   * called with): the INPROGRESS record is then written only if it holds, in one transaction
   * (with guardedItemRecordAttr and a ConditionCheck: into the checked item, in one UpdateItem).
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
    const check = precondition.item.ConditionCheck;
    const item =
      this.recordAttr !== undefined && check?.TableName !== undefined && check.Key !== undefined
        ? { table: check.TableName, key: check.Key }
        : undefined;
    const job: JobStaging = { precondition, held: false, ...(item === undefined ? {} : { item }) };
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
   * @throws Error when a write is already staged for the same key, or when the job's record lives
   * on the guarded item and `write` is not an Update of that item (a bug in the caller).
   */
  public stage(data: JSONValue, write: StagedWrite): void {
    const key = this.getHashedIdempotencyKey(data);
    const job = this.jobs.get(key) ?? { held: false };
    if (job.write !== undefined) throw new Error(`a write is already staged for idempotency key ${key}`);
    const update = write.item.Update;
    if (
      job.item !== undefined &&
      (update === undefined || update.TableName !== job.item.table || !sameKey(update.Key, job.item.key))
    ) {
      throw new Error(
        `idempotency key ${key} keeps its record on the item its precondition guards: the staged write must be an Update of that item`,
      );
    }
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
    if (job.item !== undefined) return this.claimOnItem(record, job, job.item, precondition);
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
    if (job?.item !== undefined) return this.completeOnItem(record, job, job.item);
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
    if (job?.item === undefined) return super._deleteRecord(record);
    // Failures other than "not ours any more" surface, as Powertools' own DeleteItem's do.
    await this.releaseOnItem(job.item);
  }

  /** The record of a job whose record lives on its guarded item is read there (consistently). */
  protected override async _getRecord(idempotencyKey: string): Promise<IdempotencyRecord> {
    const item = this.jobs.get(idempotencyKey)?.item;
    if (item === undefined || this.recordAttr === undefined) return super._getRecord(idempotencyKey);
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: item.table,
        Key: item.key,
        ProjectionExpression: '#idem',
        ExpressionAttributeNames: { '#idem': this.recordAttr },
        ConsistentRead: true,
      }),
    );
    const stored = asRecordMap(Item?.[this.recordAttr]);
    if (stored?.[this.attr.key] !== idempotencyKey) throw new IdempotencyItemNotFoundError();
    return this.recordFrom(stored);
  }

  /**
   * The claim of a job whose record lives on the item its precondition guards: ONE UpdateItem
   * that writes the INPROGRESS record (with a claim token) into the item, on condition that the
   * item exists, the guard holds and the record may be claimed (Powertools' put condition, or a
   * record of another key that is not a live INPROGRESS one). A failure returns the item (ALL_OLD)
   * and is read: its own claim token → claimed (a resend of an applied request); a record of this
   * key that may not be claimed → Powertools' answer from it (duplicate, in progress, validation);
   * a live INPROGRESS record of another key → in progress; anything else → the guard's rejection.
   */
  private async claimOnItem(
    record: IdempotencyRecord,
    job: JobStaging,
    item: GuardedItem,
    precondition: StagedPrecondition,
  ): Promise<void> {
    const attr = this.recordAttr as string;
    const check = precondition.item.ConditionCheck as NonNullable<TransactItem['ConditionCheck']>;
    const guard = renamePlaceholders(check, 'g');
    const claim = randomUUID();
    item.claim = claim;
    const now = Date.now();
    const stored = this.inProgressFields(record, claim);
    const [keyAttr] = Object.keys(item.key);
    const conditions = [
      ...(keyAttr === undefined ? [] : ['attribute_exists(#idem_item_key)']),
      ...(guard.expression === undefined ? [] : [`(${guard.expression})`]),
      `(${ITEM_CLAIM_CONDITION})`,
    ];
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: item.table,
          Key: item.key,
          UpdateExpression: 'SET #idem = :idem_record',
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: {
            ...guard.names,
            ...(keyAttr === undefined ? {} : { '#idem_item_key': keyAttr }),
            ...this.recordNames(attr, ['key', 'status', 'expiry', 'inProgressExpiry']),
          },
          ExpressionAttributeValues: {
            ...guard.values,
            ':idem_record': stored,
            ':idem_key': record.idempotencyKey,
            ':idem_now': now / 1000,
            ':idem_now_in_millis': now,
            ':idem_inprogress': IdempotencyRecordStatus.INPROGRESS,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const { current, found } = onItem(error, attr);
      // This claim's own record: an earlier attempt of this very request was applied, its answer
      // was lost and the SDK resent it. The job is claimed, with the guard held.
      if (found?.[CLAIM_ATTR] === claim) {
        job.held = true;
        return;
      }
      if (found !== undefined && !this.claimable(found, record.idempotencyKey, now)) {
        // This key's record comes first, as on the idempotency table: a duplicate is answered
        // from it, payload validation included, whatever the guard says.
        if (found[this.attr.key] === record.idempotencyKey) {
          job.found = this.recordFrom(found);
          throw new IdempotencyItemAlreadyExistsError(
            `Failed to put record for already existing idempotency key: ${record.idempotencyKey}`,
            job.found,
            { cause: error },
          );
        }
        // Another key's live claim of the item (another payment of the same order): never taken
        // over; this job waits for it as for a delivery of its own in progress.
        job.found = new IdempotencyRecord({
          idempotencyKey: record.idempotencyKey,
          status: IdempotencyRecordStatus.INPROGRESS,
          expiryTimestamp: found[this.attr.expiry] as number | undefined,
          inProgressExpiryTimestamp: found[this.attr.inProgressExpiry] as number | undefined,
          payloadHash: record.payloadHash,
        });
        throw new IdempotencyItemAlreadyExistsError(
          `the item guarded for idempotency key ${record.idempotencyKey} is claimed by a job in progress with another key`,
          job.found,
          { cause: error },
        );
      }
      // The record could be claimed: the item is missing or the guard failed.
      throw await precondition.rejected(current === undefined ? undefined : withoutKey(current, attr), error);
    }
    job.held = true;
  }

  /**
   * The completion of a job whose record lives on its guarded item: ONE UpdateItem of that item
   * that applies the staged write (an Update of the same item) and writes the record COMPLETED
   * (expiry, data, validation), on condition of the write's own condition and of the record still
   * being this claim's INPROGRESS one. A failure returns the item (ALL_OLD) and is read: the
   * record COMPLETED with this claim's token → done (a resend of an applied request); the record
   * still this claim's → the write's condition failed: the record is released and the write's
   * rejection thrown; the record no longer this claim's (its in-progress expiry passed and another
   * delivery took it, nothing was written) → a TransientError: the retry meets that delivery's record.
   */
  private async completeOnItem(record: IdempotencyRecord, job: JobStaging, item: GuardedItem): Promise<void> {
    const attr = this.recordAttr as string;
    const staged = job.write;
    this.forgetWrite(record.idempotencyKey, job);
    const update = staged?.item.Update;
    const write = update === undefined ? undefined : renamePlaceholders(update, 'w');
    const stored: Record<string, unknown> = {
      [this.attr.key]: record.idempotencyKey,
      [this.attr.expiry]: record.expiryTimestamp,
      [this.attr.status]: record.getStatus(),
      [CLAIM_ATTR]: item.claim,
    };
    if (record.responseData !== undefined) stored[this.attr.data] = record.responseData;
    if (this.isPayloadValidationEnabled() && record.payloadHash !== undefined) {
      stored[this.attr.validation] = record.payloadHash;
    }
    const ours = '#idem.#idem_claim = :idem_claim AND #idem.#idem_status = :idem_inprogress';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: item.table,
          Key: item.key,
          UpdateExpression: withSet(write?.update, '#idem = :idem_record'),
          ConditionExpression: write?.expression === undefined ? ours : `(${write.expression}) AND ${ours}`,
          ExpressionAttributeNames: { ...write?.names, ...this.recordNames(attr, ['claim', 'status']) },
          ExpressionAttributeValues: {
            ...write?.values,
            ':idem_record': stored,
            ':idem_claim': item.claim,
            ':idem_inprogress': IdempotencyRecordStatus.INPROGRESS,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const { found } = onItem(error, attr);
      const mine = item.claim !== undefined && found?.[CLAIM_ATTR] === item.claim;
      // Only this claim's completion writes its token with COMPLETED: the write and the
      // completion are both in, from an earlier attempt whose answer was lost.
      if (mine && found[this.attr.status] === IdempotencyRecordStatus.COMPLETED) return;
      if (!mine) {
        throw new TransientError(
          `the idempotency record of ${record.idempotencyKey} is no longer this delivery's (its in-progress expiry passed); nothing was written`,
          { cause: error },
        );
      }
      // Nothing was written: give the key back so a retry need not wait for the in-progress expiry.
      try {
        await this.releaseOnItem(item);
      } catch (releaseError) {
        this.warnings?.warn('could not release the INPROGRESS idempotency record', {
          error: releaseError,
          idempotencyKey: record.idempotencyKey,
        });
      }
      if (staged !== undefined) throw await staged.rejected(error);
      throw error;
    }
  }

  /**
   * Removes the record from the guarded item while it is still this claim's INPROGRESS one (safe
   * under Lambda's timeout, as releaseInProgress). A record that is not ours any more stays.
   * @throws what DynamoDB answers, but a failed condition
   */
  private async releaseOnItem(item: GuardedItem): Promise<void> {
    if (item.claim === undefined) return;
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: item.table,
          Key: item.key,
          UpdateExpression: 'REMOVE #idem',
          ConditionExpression: '#idem.#idem_claim = :idem_claim AND #idem.#idem_status = :idem_inprogress',
          ExpressionAttributeNames: {
            '#idem': this.recordAttr as string,
            '#idem_claim': CLAIM_ATTR,
            '#idem_status': this.attr.status,
          },
          ExpressionAttributeValues: {
            ':idem_claim': item.claim,
            ':idem_inprogress': IdempotencyRecordStatus.INPROGRESS,
          },
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return;
      throw error;
    }
  }

  /**
   * The names of the record (`#idem`) and of the `fields` an expression uses (DynamoDB refuses a
   * request that names more than its expressions use).
   */
  private recordNames(
    attr: string,
    fields: readonly ('key' | 'status' | 'expiry' | 'inProgressExpiry' | 'claim')[],
  ): Record<string, string> {
    const placeholders = {
      key: ['#idem_key', this.attr.key],
      status: ['#idem_status', this.attr.status],
      expiry: ['#idem_expiry', this.attr.expiry],
      inProgressExpiry: ['#idem_in_progress_expiry', this.attr.inProgressExpiry],
      claim: ['#idem_claim', CLAIM_ATTR],
    } as const;
    return { '#idem': attr, ...Object.fromEntries(fields.map((field) => placeholders[field])) };
  }

  /** ITEM_CLAIM_CONDITION, evaluated here on the record a failed claim returned. */
  private claimable(found: Record<string, unknown>, idempotencyKey: string, now: number): boolean {
    const expiry = found[this.attr.expiry];
    const inProgressExpiry = found[this.attr.inProgressExpiry];
    const inProgress = found[this.attr.status] === IdempotencyRecordStatus.INPROGRESS;
    return (
      (typeof expiry === 'number' && expiry < now / 1000) ||
      (inProgress && typeof inProgressExpiry === 'number' && inProgressExpiry < now) ||
      (found[this.attr.key] !== idempotencyKey && !inProgress)
    );
  }

  /** A record as Powertools builds it from its stored fields. */
  private recordFrom(stored: Record<string, unknown>): IdempotencyRecord {
    return new IdempotencyRecord({
      idempotencyKey: stored[this.attr.key] as string,
      status: stored[this.attr.status] as IdempotencyRecordStatusValue,
      expiryTimestamp: stored[this.attr.expiry] as number | undefined,
      inProgressExpiryTimestamp: stored[this.attr.inProgressExpiry] as number | undefined,
      responseData: stored[this.attr.data] as JSONValue | undefined,
      payloadHash: stored[this.attr.validation] as string | undefined,
    });
  }

  /** Drops the job's write; the job itself too unless it still has a precondition to release. */
  private forgetWrite(key: string, job: JobStaging): void {
    job.write = undefined;
    if (job.precondition === undefined) this.jobs.delete(key);
  }

  /** An INPROGRESS record's fields as Powertools writes them, plus this claim's token. */
  private inProgressFields(record: IdempotencyRecord, claim: string): Record<string, unknown> {
    const fields: Record<string, unknown> = {
      [this.attr.key]: record.idempotencyKey,
      [this.attr.expiry]: record.expiryTimestamp,
      [this.attr.status]: record.getStatus(),
      [CLAIM_ATTR]: claim,
    };
    if (record.inProgressExpiryTimestamp !== undefined) {
      fields[this.attr.inProgressExpiry] = record.inProgressExpiryTimestamp;
    }
    if (this.isPayloadValidationEnabled() && record.payloadHash !== undefined) {
      fields[this.attr.validation] = record.payloadHash;
    }
    return fields;
  }

  /**
   * The INPROGRESS put as Powertools sends it, as a transact item, plus the `claim` token that
   * tells this claim's own record from another's (Powertools ignores the extra attribute).
   */
  private inProgress(record: IdempotencyRecord, claim: string): TransactItem {
    const item = this.inProgressFields(record, claim);
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
    return this.recordFrom(unmarshall(item) as Record<string, unknown>);
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

/** An expression with its placeholders renamed, so it merges with others without collisions. */
interface Renamed {
  readonly expression: string | undefined;
  readonly update: string | undefined;
  readonly names: Record<string, string>;
  readonly values: Record<string, unknown>;
}

/**
 * Renames every `#name` and `:value` placeholder of `input`'s expressions to `#<tag><n>` and
 * `:<tag><n>`: expressions written apart (the guard's, the staged write's, the record's) then
 * merge into one request without two placeholders sharing a name.
 */
function renamePlaceholders(
  input: {
    readonly ConditionExpression?: string;
    readonly UpdateExpression?: string;
    readonly ExpressionAttributeNames?: Record<string, string>;
    readonly ExpressionAttributeValues?: Record<string, unknown>;
  },
  tag: string,
): Renamed {
  const renamed = new Map<string, string>();
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  Object.entries(input.ExpressionAttributeNames ?? {}).forEach(([placeholder, name], i) => {
    renamed.set(placeholder, `#${tag}${i}`);
    names[`#${tag}${i}`] = name;
  });
  Object.entries(input.ExpressionAttributeValues ?? {}).forEach(([placeholder, value], i) => {
    renamed.set(placeholder, `:${tag}${i}`);
    values[`:${tag}${i}`] = value;
  });
  const rename = (expression: string | undefined): string | undefined =>
    expression?.replace(/[#:][A-Za-z0-9_]+/g, (token) => renamed.get(token) ?? token);
  return {
    expression: rename(input.ConditionExpression),
    update: rename(input.UpdateExpression),
    names,
    values,
  };
}

/**
 * `update` with `assignment` added to its SET clause (or a SET clause added). Clause keywords are
 * reserved words, never bare attribute names, and the placeholders were renamed to `#w0`, `:w0`…
 */
function withSet(update: string | undefined, assignment: string): string {
  if (update === undefined || update.trim() === '') return `SET ${assignment}`;
  const clauses = [...update.matchAll(/\b(SET|REMOVE|ADD|DELETE)\b/gi)];
  const set = clauses.find((c) => c[1]?.toUpperCase() === 'SET');
  if (set === undefined) return `${update.trim()} SET ${assignment}`;
  const next = clauses.find((c) => c.index > set.index);
  const end = next === undefined ? update.length : next.index;
  return `${update.slice(0, end).trimEnd()}, ${assignment}${next === undefined ? '' : ` ${update.slice(end)}`}`;
}

/** The item a failed conditional write returned (ALL_OLD), and the record map `attr` on it. */
function onItem(
  error: ConditionalCheckFailedException,
  attr: string,
): { current: Record<string, unknown> | undefined; found: Record<string, unknown> | undefined } {
  const current = error.Item === undefined ? undefined : (unmarshall(error.Item) as Record<string, unknown>);
  return { current, found: asRecordMap(current?.[attr]) };
}

/** `value` when it is a stored record (a map), else undefined. */
function asRecordMap(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** `item` without `attr` (the record is not the business precondition's to see). */
function withoutKey(item: Record<string, unknown>, attr: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(item).filter(([name]) => name !== attr));
}

/** Whether two document-client keys name the same item. */
function sameKey(a: Record<string, unknown> | undefined, b: Record<string, unknown>): boolean {
  if (a === undefined) return false;
  const names = Object.keys(b);
  return Object.keys(a).length === names.length && names.every((name) => a[name] === b[name]);
}
