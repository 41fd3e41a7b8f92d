/**
 * The reference app's orders stream. Reads a record of the orders table's stream (NEW_AND_OLD_IMAGES) at the boundary: which entity
 * changed, how, and its old and new images as plain objects. Records of anything but an order
 * are reported as unknown so the consumer can log and skip them instead of retrying forever.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'tenang/runtime';
import { REFERENCE_TABLE_KEYS } from './tables';

/** A stream event name. */
export type StreamEventName = 'INSERT' | 'MODIFY' | 'REMOVE';

/** A change of one order, as the stream reports it. */
export interface OrderStreamChange {
  readonly kind: 'order';
  readonly eventName: StreamEventName;
  readonly orderId: string;
  /** Undefined on INSERT. */
  readonly oldImage: Record<string, unknown> | undefined;
  /** Undefined on REMOVE. */
  readonly newImage: Record<string, unknown> | undefined;
}

/** A record this consumer does not understand (another entity, another view type). */
export interface UnknownStreamRecord {
  readonly kind: 'unknown';
  readonly reason: string;
}

type Image = NonNullable<NonNullable<DynamoDBRecord['dynamodb']>['NewImage']>;

function plain(image: Image | undefined): Record<string, unknown> | undefined {
  // aws-lambda's and the SDK's AttributeValue types describe the same JSON shape.
  return image === undefined ? undefined : unmarshall(image as Record<string, AttributeValue>);
}

/** Reads `record` as an order change, or says why it is not one. */
export function readOrderChange(record: DynamoDBRecord): OrderStreamChange | UnknownStreamRecord {
  const eventName = record.eventName;
  if (eventName !== 'INSERT' && eventName !== 'MODIFY' && eventName !== 'REMOVE') {
    return { kind: 'unknown', reason: `event name ${String(eventName)}` };
  }
  const orderId = record.dynamodb?.Keys?.[REFERENCE_TABLE_KEYS.orders.partitionKey]?.S;
  if (orderId === undefined) {
    const keys = Object.keys(record.dynamodb?.Keys ?? {}).join(', ') || 'none';
    return { kind: 'unknown', reason: `no ${REFERENCE_TABLE_KEYS.orders.partitionKey} key (keys: ${keys})` };
  }
  const oldImage = plain(record.dynamodb?.OldImage);
  const newImage = plain(record.dynamodb?.NewImage);
  if (
    (eventName !== 'INSERT' && oldImage === undefined) ||
    (eventName !== 'REMOVE' && newImage === undefined)
  ) {
    return { kind: 'unknown', reason: `${eventName} without the images NEW_AND_OLD_IMAGES would carry` };
  }
  return { kind: 'order', eventName, orderId, oldImage, newImage };
}
