/**
 * The job envelope every queued message carries: its job type, idempotency key, correlation id
 * and a payload, checked against the job type's own schema (a job module's `payload`).
 * A message that does not parse is a permanent error (bad input never improves by retrying).
 */
import { onFirstUse } from '../config/on-first-use';
import * as z from '../config/zod';
import { ValidationError } from './errors';

/** Envelope versions this code understands; a newer producer's message is refused, not guessed at. */
export const ENVELOPE_VERSION = 1;

/** Largest payload accepted, in bytes of JSON (SQS allows 1 MiB per message; jobs stay small). */
export const MAX_PAYLOAD_BYTES = 64 * 1024;

/** A job type name as the config requires it: `domain.action`. */
export const JOB_TYPE_NAME = /^[a-z]+(\.[a-z]+)+$/;

/** Built when a consumer parses its first message: a producer only writes envelopes. */
const envelopeSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    type: z.string().check(z.regex(JOB_TYPE_NAME, 'must be a job type name such as invoice.issue')),
    version: z.int().check(z.gte(1)),
    idempotencyKey: z.string().check(z.minLength(1), z.maxLength(256)),
    correlationId: z.string().check(z.minLength(1), z.maxLength(128)),
    payload: z.unknown(),
    enqueuedAt: z.iso.datetime({ offset: true }),
  }),
);

/** A parsed, validated job whose payload is a `P` (its job type's schema said so). */
export interface JobEnvelope<P = unknown> {
  /** The job type's name (`domain.action`). */
  readonly type: string;
  readonly version: number;
  readonly idempotencyKey: string;
  readonly correlationId: string;
  readonly payload: P;
  readonly enqueuedAt: string;
}

function issues(error: z.core.$ZodError, prefix = ''): string[] {
  return error.issues.map(
    (i) => `${[prefix, ...i.path.map(String)].filter(Boolean).join('.') || 'message'}: ${i.message}`,
  );
}

/** The schema of a payload (any zod/mini schema). */
export type PayloadSchema<P = unknown> = z.ZodMiniType<P>;

/**
 * Parses a message body into an envelope of the expected job type, its payload checked with
 * `payloadSchema` (the job type's own; code that knows a job type only by its declaration, such
 * as the CLI replaying a DLQ, passes `z.unknown()` and leaves the payload to the consumer).
 * @throws ValidationError (permanent) for invalid JSON, a wrong schema, an unknown or
 * unexpected type, a future version or an oversize payload.
 */
export function parseEnvelope<P>(
  body: string,
  expectedType: string,
  payloadSchema: PayloadSchema<P>,
): JobEnvelope<P> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (cause) {
    throw new ValidationError('message body is not JSON', [(cause as Error).message], { cause });
  }
  const envelope = envelopeSchema().safeParse(json);
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
  const payload = payloadSchema.safeParse(e.payload);
  if (!payload.success)
    throw new ValidationError(`invalid ${expectedType} payload`, issues(payload.error, 'payload'));
  return { ...e, type: expectedType, payload: payload.data };
}

/** Builds an envelope for a producer. */
export function makeEnvelope<P>(
  type: string,
  payload: P,
  opts: { idempotencyKey: string; correlationId: string; now: Date },
): JobEnvelope<P> {
  return {
    type,
    version: ENVELOPE_VERSION,
    idempotencyKey: opts.idempotencyKey,
    correlationId: opts.correlationId,
    payload,
    enqueuedAt: opts.now.toISOString(),
  };
}
