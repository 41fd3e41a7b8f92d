/**
 * The job envelope every queued message carries, and the payload of each job type.
 * A message that does not parse is a permanent error (bad input never improves by retrying).
 */
import * as z from '../config/zod';
import { ValidationError } from './errors';

/** Envelope versions this code understands; a newer producer's message is refused, not guessed at. */
export const ENVELOPE_VERSION = 1;

/** Largest payload accepted, in bytes of JSON (SQS allows 1 MiB per message; jobs stay small). */
export const MAX_PAYLOAD_BYTES = 64 * 1024;

const id = z
  .string()
  .check(z.minLength(1), z.maxLength(128), z.regex(/^[A-Za-z0-9._:-]+$/, 'only letters, digits and . _ : -'));

/** payment.capture: capture an order's payment exactly once. */
export const PaymentCapturePayload = z.object({
  orderId: id,
  paymentId: id,
  amountMinor: z.int().check(z.positive(), z.lte(100_000_000)),
  currency: z.string().check(z.regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code')),
});
export type PaymentCapturePayload = z.infer<typeof PaymentCapturePayload>;

/** notification.send: tell the customer about an order. */
export const NotificationSendPayload = z.object({
  orderId: id,
  template: z.enum(['order-paid', 'order-shipped', 'payment-failed']),
  recipient: z.email(),
  /** The order version that triggered it; dedup is per (order, template). */
  orderVersion: z.int().check(z.nonnegative()),
});
export type NotificationSendPayload = z.infer<typeof NotificationSendPayload>;

/** inventory.reserve: reserve stock for an order line. */
export const InventoryReservePayload = z.object({
  orderId: id,
  sku: id,
  quantity: z.int().check(z.positive(), z.lte(10_000)),
});
export type InventoryReservePayload = z.infer<typeof InventoryReservePayload>;

/** Payload schema per job type. */
export const PAYLOADS = {
  'payment.capture': PaymentCapturePayload,
  'notification.send': NotificationSendPayload,
  'inventory.reserve': InventoryReservePayload,
} as const;
/** A job type of the reference pipeline, whose payload schema this module holds. */
export type JobTypeName = keyof typeof PAYLOADS;
/** The payload of a job type: the reference's from PAYLOADS; any other app's as its schema says. */
export type PayloadOf<T extends string> = T extends JobTypeName ? z.infer<(typeof PAYLOADS)[T]> : unknown;

/**
 * The payload schema of a reference job type, or a permissive one for any other: code that knows
 * an app only by its config (the CLI replaying a DLQ) checks the envelope, and the consumer checks
 * the payload again when the job runs.
 */
export function knownPayloadSchema(name: string): PayloadSchema {
  return (PAYLOADS as Readonly<Record<string, PayloadSchema>>)[name] ?? z.unknown();
}

/** A job type name as the config requires it: `domain.action`. */
export const JOB_TYPE_NAME = /^[a-z]+(\.[a-z]+)+$/;

const EnvelopeSchema = z.object({
  type: z.string().check(z.regex(JOB_TYPE_NAME, 'must be a job type name such as payment.capture')),
  version: z.int().check(z.gte(1)),
  idempotencyKey: z.string().check(z.minLength(1), z.maxLength(256)),
  correlationId: z.string().check(z.minLength(1), z.maxLength(128)),
  payload: z.unknown(),
  enqueuedAt: z.iso.datetime({ offset: true }),
});

/** A parsed, validated job. */
export interface JobEnvelope<T extends string = JobTypeName> {
  readonly type: T;
  readonly version: number;
  readonly idempotencyKey: string;
  readonly correlationId: string;
  readonly payload: PayloadOf<T>;
  readonly enqueuedAt: string;
}

function issues(error: z.core.$ZodError, prefix = ''): string[] {
  return error.issues.map(
    (i) => `${[prefix, ...i.path.map(String)].filter(Boolean).join('.') || 'message'}: ${i.message}`,
  );
}

/** The schema of a payload (any zod/mini schema). */
export type PayloadSchema = z.ZodMiniType;

/**
 * Parses a message body into an envelope of the expected job type, its payload checked with
 * `payloadSchema` (a reference job type's own when not given).
 * @throws ValidationError (permanent) for invalid JSON, a wrong schema, an unknown or
 * unexpected type, a future version or an oversize payload.
 */
export function parseEnvelope<T extends string>(
  body: string,
  expectedType: T,
  payloadSchema?: PayloadSchema,
): JobEnvelope<T> {
  const schema = payloadSchema ?? (PAYLOADS as Readonly<Record<string, PayloadSchema>>)[expectedType];
  if (schema === undefined) throw new Error(`no payload schema for job type ${expectedType}`);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (cause) {
    throw new ValidationError('message body is not JSON', [(cause as Error).message], { cause });
  }
  const envelope = EnvelopeSchema.safeParse(json);
  if (!envelope.success) throw new ValidationError('invalid job envelope', issues(envelope.error));
  const e = envelope.data;
  if (e.type !== expectedType) {
    throw new ValidationError('wrong job type for this queue', [
      `type: expected ${expectedType}, got ${e.type}`,
    ]);
  }
  if (e.version > ENVELOPE_VERSION) {
    throw new ValidationError('envelope from a newer producer', [
      `version: ${e.version} is newer than ${ENVELOPE_VERSION}, which this consumer understands`,
    ]);
  }
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(e.payload ?? null), 'utf8');
  } catch (cause) {
    // A payload nested a few thousand levels deep overflows the stack: bad input, not a bug.
    throw new ValidationError('payload cannot be measured', [`payload: ${(cause as Error).message}`], {
      cause,
    });
  }
  if (size > MAX_PAYLOAD_BYTES) {
    throw new ValidationError('payload too large', [`payload: ${size} bytes exceeds ${MAX_PAYLOAD_BYTES}`]);
  }
  const payload = schema.safeParse(e.payload);
  if (!payload.success)
    throw new ValidationError(`invalid ${expectedType} payload`, issues(payload.error, 'payload'));
  return { ...e, type: expectedType, payload: payload.data as PayloadOf<T> };
}

/** Builds an envelope for a producer. */
export function makeEnvelope<T extends string>(
  type: T,
  payload: PayloadOf<T>,
  opts: { idempotencyKey: string; correlationId: string; now: Date },
): JobEnvelope<T> {
  return {
    type,
    version: ENVELOPE_VERSION,
    idempotencyKey: opts.idempotencyKey,
    correlationId: opts.correlationId,
    payload,
    enqueuedAt: opts.now.toISOString(),
  };
}
