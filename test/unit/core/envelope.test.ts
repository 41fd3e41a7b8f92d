import fc from 'fast-check';
import { ENVELOPE_VERSION, MAX_PAYLOAD_BYTES, makeEnvelope } from '../../../lib/core/envelope';
import {
  type JobTypeName,
  type PayloadOf,
  parseReferenceEnvelope,
} from '../../../examples/reference/domain/payloads';
import { ValidationError, classifyError } from '../../../lib/core/errors';

const NOW = new Date('2030-06-01T12:00:00.000Z');

/** A valid payload of each job type. */
const PAYLOAD: { readonly [T in JobTypeName]: PayloadOf<T> } = {
  'payment.capture': { orderId: 'ord-1', paymentId: 'pay_1', amountMinor: 1999, currency: 'EUR' },
  'notification.send': {
    orderId: 'ord-1',
    template: 'order-paid',
    recipient: 'ada@example.com',
    orderVersion: 3,
  },
  'inventory.reserve': { orderId: 'ord-1', sku: 'SKU:42.a', quantity: 2 },
};
const JOB_TYPES = Object.keys(PAYLOAD) as JobTypeName[];

/** A valid envelope of `type` as a plain object, with `overrides` spread over it. */
function envelopeOf(type: JobTypeName, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type,
    version: ENVELOPE_VERSION,
    idempotencyKey: `${type}:ord-1`,
    correlationId: 'corr-1',
    payload: PAYLOAD[type],
    enqueuedAt: NOW.toISOString(),
    ...overrides,
  };
}

/** A payment.capture body with `payload` fields overridden. */
function paymentBody(payloadOverrides: Record<string, unknown>): string {
  return JSON.stringify(
    envelopeOf('payment.capture', { payload: { ...PAYLOAD['payment.capture'], ...payloadOverrides } }),
  );
}

/** Runs `action` and returns the ValidationError it throws; fails the test otherwise. */
function validationErrorOf(action: () => unknown): ValidationError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError, but nothing was thrown');
}

describe('Function: parseEnvelope', () => {
  describe('when the message is valid', () => {
    it.each(JOB_TYPES)('when it is a valid %s envelope, it returns the typed envelope', (type) => {
      // Prepare
      const body = JSON.stringify(envelopeOf(type));

      // Act
      const envelope = parseReferenceEnvelope(body, type);

      // Assess
      expect(envelope).toEqual(envelopeOf(type));
    });

    it('when the payload has fields the schema does not know, it drops them', () => {
      // Prepare
      const body = paymentBody({ note: 'gift wrap' });

      // Act
      const envelope = parseReferenceEnvelope(body, 'payment.capture');

      // Assess
      expect(envelope.payload).toEqual(PAYLOAD['payment.capture']);
    });

    it('when enqueuedAt carries an offset, it accepts it', () => {
      // Prepare
      const body = JSON.stringify(
        envelopeOf('inventory.reserve', { enqueuedAt: '2030-06-01T14:00:00+02:00' }),
      );

      // Act
      const envelope = parseReferenceEnvelope(body, 'inventory.reserve');

      // Assess
      expect(envelope.enqueuedAt).toBe('2030-06-01T14:00:00+02:00');
    });

    it.each([
      { field: 'correlationId', value: 'Ωμέγα-🚀 <script>alert(1)</script>' },
      { field: 'idempotencyKey', value: "payment:ord-1'; DROP TABLE orders;--" },
      { field: 'idempotencyKey', value: '../../etc/passwd\u0000' },
    ])(
      'when $field is free text with unicode or injection characters, it accepts it as data',
      ({ field, value }) => {
        // Prepare
        const body = JSON.stringify(envelopeOf('payment.capture', { [field]: value }));

        // Act
        const envelope = parseReferenceEnvelope(body, 'payment.capture');

        // Assess
        expect(envelope[field as 'correlationId' | 'idempotencyKey']).toBe(value);
      },
    );
  });

  describe('when the message is invalid, it throws a permanent ValidationError', () => {
    it('when the body is not JSON, it says so and keeps the parser error as the cause', () => {
      // Act
      const error = validationErrorOf(() =>
        parseReferenceEnvelope('{"type": "payment.capture",', 'payment.capture'),
      );

      // Assess
      expect(error.message).toMatch(/^message body is not JSON: /);
      expect(error.problems).toHaveLength(1);
      expect(error.cause).toBeInstanceOf(SyntaxError);
      expect(classifyError(error)).toBe('permanent');
    });

    it.each([
      { case: 'null', body: 'null' },
      { case: 'an array', body: '[]' },
      { case: 'a string', body: '"payment.capture"' },
      { case: 'a number', body: '42' },
    ])('when the body is $case instead of an object, it names the whole message', ({ body }) => {
      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.problems).toEqual([expect.stringMatching(/^message: .*expected object/)]);
    });

    it('when the envelope is an empty object, it names every required field', () => {
      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope('{}', 'payment.capture'));

      // Assess
      const fields = error.problems.map((p) => p.split(':')[0]);
      expect(fields).toEqual(
        expect.arrayContaining([
          'type',
          'version',
          'idempotencyKey',
          'correlationId',
          'payload',
          'enqueuedAt',
        ]),
      );
    });

    it('when the type is unknown, it names the type field', () => {
      // Prepare
      const body = JSON.stringify(envelopeOf('payment.capture', { type: 'payment.refund' }));

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.problems).toEqual([expect.stringMatching(/^type: /)]);
    });

    it('when the type belongs to another queue, it names the expected and the received type', () => {
      // Prepare
      const body = JSON.stringify(envelopeOf('notification.send'));

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.problems).toEqual(['type: expected payment.capture, got notification.send']);
    });

    it('when the idempotencyKey is missing, it names it', () => {
      // Prepare
      const body = JSON.stringify(envelopeOf('payment.capture', { idempotencyKey: undefined }));

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.problems).toEqual([expect.stringMatching(/^idempotencyKey: /)]);
    });

    it('when the idempotencyKey is empty, it names it', () => {
      // Prepare
      const body = JSON.stringify(envelopeOf('payment.capture', { idempotencyKey: '' }));

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.problems).toEqual([expect.stringMatching(/^idempotencyKey: /)]);
    });

    it('when the version is newer than this consumer understands, it refuses it by version', () => {
      // Prepare
      const body = JSON.stringify(envelopeOf('payment.capture', { version: ENVELOPE_VERSION + 1 }));

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.message).toMatch(/newer producer/);
      expect(error.problems).toEqual([expect.stringMatching(/^version: 2 is newer than 1/)]);
    });

    it('when the payload is larger than the limit, it names the payload and its size', () => {
      // Prepare: within the schema (an ignored field) but over the byte limit.
      const body = paymentBody({ note: 'x'.repeat(MAX_PAYLOAD_BYTES) });

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.problems).toEqual([expect.stringMatching(/^payload: \d+ bytes exceeds 65536$/)]);
    });

    it('when the payload is exactly at the limit, it accepts it', () => {
      // Prepare: pad the ignored field so the payload's JSON is exactly MAX_PAYLOAD_BYTES bytes.
      const withoutPad = JSON.stringify({ ...PAYLOAD['payment.capture'], note: '' }).length;
      const body = paymentBody({ note: 'x'.repeat(MAX_PAYLOAD_BYTES - withoutPad) });

      // Act
      const envelope = parseReferenceEnvelope(body, 'payment.capture');

      // Assess
      expect(envelope.payload.orderId).toBe('ord-1');
    });

    it('when the payload is nested deeper than the stack can measure, it is bad input, not a bug', () => {
      // Prepare: ~20 KB of brackets, well under the size limit.
      const depth = 10_000;
      const body = JSON.stringify(envelopeOf('payment.capture', { payload: null })).replace(
        '"payload":null',
        `"payload":${'['.repeat(depth)}${']'.repeat(depth)}`,
      );

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.problems).toEqual([expect.stringMatching(/^payload: /)]);
      expect(classifyError(error)).toBe('permanent');
    });

    it.each([
      { case: 'version as a string', overrides: { version: '1' }, field: 'version' },
      { case: 'a fractional version', overrides: { version: 1.5 }, field: 'version' },
      { case: 'a correlationId as a number', overrides: { correlationId: 7 }, field: 'correlationId' },
      { case: 'enqueuedAt that is no ISO time', overrides: { enqueuedAt: 'yesterday' }, field: 'enqueuedAt' },
      { case: 'a null payload', overrides: { payload: null }, field: 'payload' },
    ])('when the envelope has $case, it names $field', ({ overrides, field }) => {
      // Prepare
      const body = JSON.stringify(envelopeOf('payment.capture', overrides));

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.problems).toEqual([expect.stringMatching(new RegExp(`^${field}: `))]);
    });

    it.each([
      { case: 'amountMinor as a string', overrides: { amountMinor: '1999' }, field: 'payload.amountMinor' },
      { case: 'a fractional amountMinor', overrides: { amountMinor: 19.99 }, field: 'payload.amountMinor' },
      { case: 'a zero amountMinor', overrides: { amountMinor: 0 }, field: 'payload.amountMinor' },
      { case: 'a lowercase currency', overrides: { currency: 'eur' }, field: 'payload.currency' },
      { case: 'a missing paymentId', overrides: { paymentId: undefined }, field: 'payload.paymentId' },
    ])('when the payload has $case, it names $field', ({ overrides, field }) => {
      // Prepare
      const body = paymentBody(overrides);

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.message).toMatch(/^invalid payment.capture payload: /);
      expect(error.problems).toEqual([expect.stringMatching(new RegExp(`^${field.replace('.', '\\.')}: `))]);
    });

    it.each([
      { case: 'SQL injection', value: "ord-1'; DROP TABLE orders;--" },
      { case: 'a path traversal', value: '../../etc/passwd' },
      { case: 'a non-ASCII letter', value: 'ordér-1' },
      { case: 'an emoji', value: 'ord-🚀' },
      { case: 'a newline', value: 'ord-1\nX-Injected: yes' },
      { case: 'a NUL byte', value: 'ord-1\u0000' },
      { case: 'a space', value: 'ord 1' },
      { case: 'an id of 129 characters', value: 'a'.repeat(129) },
    ])('when an id contains $case, the id pattern rejects it by field', ({ value }) => {
      // Prepare
      const body = paymentBody({ orderId: value });

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'payment.capture'));

      // Assess
      expect(error.problems).toEqual([expect.stringMatching(/^payload\.orderId: /)]);
    });

    it('when a notification recipient is not an e-mail address, it names the recipient', () => {
      // Prepare
      const body = JSON.stringify(
        envelopeOf('notification.send', {
          payload: { ...PAYLOAD['notification.send'], recipient: 'ada@example.com\r\nBcc: all@example.com' },
        }),
      );

      // Act
      const error = validationErrorOf(() => parseReferenceEnvelope(body, 'notification.send'));

      // Assess
      expect(error.problems).toEqual([expect.stringMatching(/^payload\.recipient: /)]);
    });
  });

  describe('Property: any input', () => {
    /** Mostly the valid value; sometimes anything JSON can hold, sometimes missing (undefined is dropped by JSON). */
    const validOrAny = <T>(valid: T): fc.Arbitrary<unknown> =>
      fc.oneof(
        { arbitrary: fc.constant(valid), weight: 18 },
        { arbitrary: fc.jsonValue(), weight: 1 },
        { arbitrary: fc.constant(undefined), weight: 1 },
      );
    /** An envelope close to a valid one of `type`: each field, and each payload field, valid or not. */
    const nearlyValidBody = (type: JobTypeName): fc.Arbitrary<string> =>
      fc
        .record({
          type: fc.oneof(
            { arbitrary: fc.constant(type), weight: 8 },
            { arbitrary: fc.constantFrom(...JOB_TYPES), weight: 1 },
            { arbitrary: fc.string(), weight: 1 },
          ),
          version: validOrAny(ENVELOPE_VERSION),
          idempotencyKey: validOrAny('k-1'),
          correlationId: validOrAny('c-1'),
          enqueuedAt: validOrAny(NOW.toISOString()),
          payload: fc.oneof(
            {
              arbitrary: fc.record(
                Object.fromEntries(Object.entries(PAYLOAD[type]).map(([k, v]) => [k, validOrAny(v)])),
              ),
              weight: 9,
            },
            { arbitrary: fc.jsonValue(), weight: 1 },
          ),
        })
        .map((envelope) => JSON.stringify(envelope));
    /** An expected type and a body: arbitrary JSON, arbitrary text, or a nearly valid envelope. */
    const anyInput = fc
      .constantFrom(...JOB_TYPES)
      .chain((type) =>
        fc.tuple(
          fc.constant(type),
          fc.oneof(fc.json(), fc.string(), nearlyValidBody(type), nearlyValidBody(type)),
        ),
      );

    it('when given any body, it returns an envelope of the expected type or throws a ValidationError naming a field', () => {
      let accepted = 0;
      let rejected = 0;
      fc.assert(
        fc.property(anyInput, ([expectedType, body]) => {
          // Act
          let outcome: unknown;
          try {
            outcome = parseReferenceEnvelope(body, expectedType);
          } catch (error) {
            outcome = error;
          }

          // Assess
          if (outcome instanceof Error) {
            rejected += 1;
            expect(outcome).toBeInstanceOf(ValidationError);
            expect(classifyError(outcome)).toBe('permanent');
            const { problems } = outcome as ValidationError;
            expect(problems.length).toBeGreaterThan(0);
            if (!outcome.message.startsWith('message body is not JSON')) {
              for (const problem of problems) expect(problem).toMatch(/^[A-Za-z0-9_.]+: /);
            }
          } else {
            accepted += 1;
            expect(outcome).toMatchObject({ type: expectedType, version: ENVELOPE_VERSION });
          }
        }),
        { numRuns: 500 },
      );
      // Both branches must be exercised, or the property proves nothing.
      expect(accepted).toBeGreaterThan(0);
      expect(rejected).toBeGreaterThan(0);
    });

    it('when every field is valid, it always accepts the envelope', () => {
      fc.assert(
        fc.property(
          fc.constantFrom(...JOB_TYPES),
          fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/),
          fc.string({ minLength: 1, maxLength: 128, unit: 'grapheme' }),
          (type, orderId, correlationId) => {
            // Prepare
            const body = JSON.stringify(
              envelopeOf(type, { correlationId, payload: { ...PAYLOAD[type], orderId } }),
            );

            // Act
            const envelope = parseReferenceEnvelope(body, type);

            // Assess
            expect(envelope.payload.orderId).toBe(orderId);
            expect(envelope.correlationId).toBe(correlationId);
          },
        ),
      );
    });
  });
});

describe('Function: makeEnvelope', () => {
  it.each(JOB_TYPES)('when an envelope of %s is made, it round-trips through parseEnvelope', (type) => {
    // Prepare
    const made = makeEnvelope(type, PAYLOAD[type], {
      idempotencyKey: `${type}:ord-1`,
      correlationId: 'corr-1',
      now: NOW,
    });

    // Act
    const parsed = parseReferenceEnvelope(JSON.stringify(made), type);

    // Assess
    expect(made.version).toBe(ENVELOPE_VERSION);
    expect(made.enqueuedAt).toBe('2030-06-01T12:00:00.000Z');
    expect(parsed).toEqual(made);
  });
});
