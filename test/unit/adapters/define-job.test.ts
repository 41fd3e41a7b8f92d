import {
  IdempotencyAlreadyInProgressError,
  IdempotencyInconsistentStateError,
  IdempotencyKeyError,
  IdempotencyPersistenceLayerError,
  IdempotencyValidationError,
} from '@aws-lambda-powertools/idempotency';
import { FunctionEnvError } from '../../../lib/adapters/lambda-env';
import { jobDepsFromEnv, toDomainError } from '../../../lib/adapters/define-job';
import {
  classifyError,
  TransientError,
  TransitionAlreadyDoneError,
  ValidationError,
} from '../../../lib/core/errors';
import { OrderAlreadyPaidError } from '../../../examples/reference/domain/payment';

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
      const mapped = toDomainError(given);

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
    const mapped = toDomainError(wrapped);

    // Assess
    expect(mapped).toBe(domain);
  });

  it('when the claim was refused because the order is already paid, it is that OrderAlreadyPaidError (the handler reports a duplicate)', () => {
    // Prepare
    const domain = new OrderAlreadyPaidError('order-1', 'PAID');
    const wrapped = new IdempotencyPersistenceLayerError('Failed to save in progress record', {
      cause: domain,
    });

    // Act
    const mapped = toDomainError(wrapped);

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
    const mapped = toDomainError(wrapped);

    // Assess
    expect(mapped).toBe(throttled);
    expect(classifyError(mapped)).toBe('transient');
  });

  it('when the persistence layer failed on something unknown, it stays as it is (a bug)', () => {
    // Prepare
    const wrapped = new IdempotencyPersistenceLayerError('Failed', { cause: new Error('what?') });

    // Act
    const mapped = toDomainError(wrapped);

    // Assess
    expect(mapped).toBe(wrapped);
    expect(classifyError(mapped)).toBe('bug');
  });

  it('when the error is not Powertools’, it passes through unchanged', () => {
    // Prepare
    const error = new TransientError('provider answered 503');

    // Act
    const mapped = toDomainError(error);

    // Assess
    expect(mapped).toBe(error);
  });
});

describe('Function: jobDepsFromEnv', () => {
  const ENV = {
    TENANG_STAGE: 'unit',
    AWS_REGION: 'eu-west-1',
    ORDERS_TABLE: 'tenang-unit-orders',
    IDEMPOTENCY_TABLE: 'tenang-unit-idempotency',
    PAYMENT_PROVIDER_URL: 'https://payments.example.com',
    QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-payment-capture.fifo',
    DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-payment-capture-dlq.fifo',
  };

  function envErrorOf(env: NodeJS.ProcessEnv): FunctionEnvError {
    try {
      jobDepsFromEnv('payment.capture', env);
    } catch (error) {
      if (error instanceof FunctionEnvError) return error;
      throw error;
    }
    throw new Error('jobDepsFromEnv accepted the environment');
  }

  it('when the runner’s and the declared tables’ and providers’ variables are missing or malformed, it names every one in one error', () => {
    // Prepare
    const env = {
      ...ENV,
      ORDERS_TABLE: undefined,
      DLQ_URL: 'not a url',
      PAYMENT_PROVIDER_URL: 'nowhere',
    };

    // Act
    const error = envErrorOf(env);

    // Assess
    expect(error.message).toMatch(/^Invalid environment of payment-consumer:/);
    expect(error.problems.map((p) => p.split(':')[0])).toEqual([
      'DLQ_URL',
      'ORDERS_TABLE',
      'PAYMENT_PROVIDER_URL',
    ]);
  });

  it('when the stage is not set, it names it with the runner’s other missing variables', () => {
    // Act
    const error = envErrorOf({ AWS_REGION: 'eu-west-1' });

    // Assess
    expect(error.problems).toEqual([
      'TENANG_STAGE: is not set',
      'QUEUE_URL: is not set',
      'DLQ_URL: is not set',
    ]);
  });
});
