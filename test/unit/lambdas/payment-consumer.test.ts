import {
  IdempotencyAlreadyInProgressError,
  IdempotencyInconsistentStateError,
  IdempotencyKeyError,
  IdempotencyPersistenceLayerError,
  IdempotencyValidationError,
} from '@aws-lambda-powertools/idempotency';
import type * as PaymentConsumerModule from '../../../lambdas/payment-consumer';
import { FunctionEnvError, parseFunctionEnv } from '../../../lib/adapters/lambda-env';
import {
  classifyError,
  TransientError,
  TransitionAlreadyDoneError,
  ValidationError,
} from '../../../lib/core/errors';

const ENV = {
  TENANG_STAGE: 'unit',
  AWS_REGION: 'eu-west-1',
  ORDERS_TABLE: 'tenang-unit-orders',
  IDEMPOTENCY_TABLE: 'tenang-unit-idempotency',
  PAYMENT_PROVIDER_URL: 'https://payments.example.com',
  QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-payment-capture.fifo',
  DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-payment-capture-dlq.fifo',
};

let consumer: typeof PaymentConsumerModule;

beforeAll(async () => {
  const saved = { ...process.env };
  Object.assign(process.env, ENV);
  try {
    consumer = await import('../../../lambdas/payment-consumer');
  } finally {
    process.env = saved;
  }
});

describe('Function: toDomainError', () => {
  it.each([
    {
      given: new IdempotencyAlreadyInProgressError('in progress'),
      expected: TransientError,
      kind: 'transient',
    },
    {
      given: new IdempotencyInconsistentStateError('expired while in progress'),
      expected: TransientError,
      kind: 'transient',
    },
    {
      given: new IdempotencyValidationError('Payload does not match stored record for this event key'),
      expected: ValidationError,
      kind: 'permanent',
    },
    {
      given: new IdempotencyPersistenceLayerError('Failed to save in progress record', {
        cause: new IdempotencyKeyError('No data found to create a hashed idempotency_key'),
      }),
      expected: ValidationError,
      kind: 'permanent',
    },
  ])(
    'when Powertools throws $given.name, it becomes a $kind $expected.name keeping the cause',
    ({ given, expected, kind }) => {
      // Act
      const mapped = consumer.toDomainError(given);

      // Assess
      expect(mapped).toBeInstanceOf(expected);
      expect(classifyError(mapped)).toBe(kind);
      expect((mapped as Error).cause).toBeDefined();
    },
  );

  it('when the persistence layer failed with a domain error (the completing transaction), it is that error', () => {
    // Prepare
    const domain = new TransitionAlreadyDoneError('order is already PAID');
    const wrapped = new IdempotencyPersistenceLayerError('Failed to update success record', {
      cause: domain,
    });

    // Act
    const mapped = consumer.toDomainError(wrapped);

    // Assess
    expect(mapped).toBe(domain);
  });

  it('when the persistence layer failed on a retryable SDK error, it is that error (transient)', () => {
    // Prepare
    const throttled = Object.assign(new Error('slow down'), {
      name: 'ProvisionedThroughputExceededException',
    });
    const wrapped = new IdempotencyPersistenceLayerError('Failed to save in progress record', {
      cause: throttled,
    });

    // Act
    const mapped = consumer.toDomainError(wrapped);

    // Assess
    expect(mapped).toBe(throttled);
    expect(classifyError(mapped)).toBe('transient');
  });

  it('when the persistence layer failed on something unknown, it stays as it is (a bug)', () => {
    // Prepare
    const wrapped = new IdempotencyPersistenceLayerError('Failed', { cause: new Error('what?') });

    // Act
    const mapped = consumer.toDomainError(wrapped);

    // Assess
    expect(mapped).toBe(wrapped);
    expect(classifyError(mapped)).toBe('bug');
  });

  it('when the error is not Powertools’, it passes through unchanged', () => {
    // Prepare
    const error = new TransientError('provider answered 503');

    // Act
    const mapped = consumer.toDomainError(error);

    // Assess
    expect(mapped).toBe(error);
  });
});

describe('Schema: PaymentConsumerEnvSchema', () => {
  it('when variables are missing or malformed, it names every one in one error', () => {
    // Prepare
    const env = { ...ENV, ORDERS_TABLE: undefined, DLQ_URL: 'not a url', IDEMPOTENCY_TABLE: undefined };

    // Act
    let error: unknown;
    try {
      parseFunctionEnv('payment-consumer', consumer.PaymentConsumerEnvSchema, env);
    } catch (thrown) {
      error = thrown;
    }

    // Assess
    expect(error).toBeInstanceOf(FunctionEnvError);
    expect((error as FunctionEnvError).problems.map((p) => p.split(':')[0])).toEqual([
      'ORDERS_TABLE',
      'IDEMPOTENCY_TABLE',
      'DLQ_URL',
    ]);
  });
});
