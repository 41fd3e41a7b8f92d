import {
  ConditionalCheckFailedException,
  InternalServerError,
  ProvisionedThroughputExceededException,
} from '@aws-sdk/client-dynamodb';
import { RequestThrottled } from '@aws-sdk/client-sqs';
import {
  CacheUnavailableError,
  CircuitOpenError,
  ClaimInFlightError,
  ConcurrentUpdateError,
  IllegalTransitionError,
  LockBusyError,
  PermanentError,
  ShedError,
  StaleFencingTokenError,
  TenangError,
  TransientError,
  TransitionAlreadyDoneError,
  ValidationError,
  classifyError,
  classifyHttpStatus,
  errorClassName,
} from '../../../lib/core/errors';

/** An error shaped like an AWS SDK v3 service exception, without depending on one client's classes. */
function sdkShaped(fields: {
  name: string;
  httpStatusCode?: number;
  fault?: 'client' | 'server';
  retryable?: { throttling?: boolean };
}): Error {
  const error = new Error(`${fields.name} from the service`);
  error.name = fields.name;
  return Object.assign(error, {
    $metadata: fields.httpStatusCode === undefined ? {} : { httpStatusCode: fields.httpStatusCode },
    ...(fields.fault === undefined ? {} : { $fault: fields.fault }),
    ...(fields.retryable === undefined ? {} : { $retryable: fields.retryable }),
  });
}

/** A Node.js network error: the code is on `code`, the name stays `Error`. */
function networkError(code: string): Error {
  return Object.assign(new Error(`socket failed: ${code}`), { code });
}

describe('Function: classifyError', () => {
  describe('when given a domain error', () => {
    it.each([
      { error: new TransientError('provider slow'), expected: 'transient' },
      { error: new LockBusyError('lock held'), expected: 'transient' },
      { error: new CircuitOpenError('breaker open'), expected: 'transient' },
      { error: new ConcurrentUpdateError('version moved'), expected: 'transient' },
      { error: new CacheUnavailableError('redis timeout'), expected: 'transient' },
      { error: new PermanentError('card declined'), expected: 'permanent' },
      { error: new ValidationError('bad input', ['orderId: required']), expected: 'permanent' },
      { error: new StaleFencingTokenError('lease lost'), expected: 'permanent' },
      { error: new TransitionAlreadyDoneError('already PAID'), expected: 'permanent' },
      { error: new IllegalTransitionError('CANCELLED → PAID'), expected: 'permanent' },
      { error: new ShedError('degraded'), expected: 'permanent' },
    ])('when it is a $error.name, it is $expected', ({ error, expected }) => {
      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe(expected);
    });

    it('when a domain error wraps an SDK throttling error as its cause, its own kind wins', () => {
      // Prepare
      const error = new PermanentError('refused', { cause: sdkShaped({ name: 'ThrottlingException' }) });

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('permanent');
    });
  });

  describe('when given an SDK-shaped error', () => {
    it('when its name is ThrottlingException (400, client fault), it is transient', () => {
      // Prepare
      const error = sdkShaped({ name: 'ThrottlingException', httpStatusCode: 400, fault: 'client' });

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('transient');
    });

    it('when it carries $retryable, it is transient whatever its name and status', () => {
      // Prepare
      const error = sdkShaped({
        name: 'SomeNewThrottle',
        httpStatusCode: 400,
        fault: 'client',
        retryable: { throttling: true },
      });

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('transient');
    });

    it('when its status is 500 with a server fault, it is transient', () => {
      // Prepare
      const error = sdkShaped({ name: 'InternalFailure', httpStatusCode: 500, fault: 'server' });

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('transient');
    });

    it('when its status is 400 with a client fault, it is permanent (retrying a bad request cannot help)', () => {
      // Prepare
      const error = sdkShaped({ name: 'ValidationException', httpStatusCode: 400, fault: 'client' });

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('permanent');
    });

    it('when its status is 400 without a client fault, it is a bug', () => {
      // Prepare
      const error = sdkShaped({ name: 'Unexplained', httpStatusCode: 400 });

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('bug');
    });

    it('when its status is 429, it is transient even with a client fault', () => {
      // Prepare
      const error = sdkShaped({ name: 'TooManyRequests', httpStatusCode: 429, fault: 'client' });

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('transient');
    });

    it.each([
      {
        case: 'DynamoDB ConditionalCheckFailedException',
        error: new ConditionalCheckFailedException({ message: 'c', $metadata: { httpStatusCode: 400 } }),
        expected: 'permanent',
      },
      {
        case: 'DynamoDB InternalServerError',
        error: new InternalServerError({ message: 'i', $metadata: { httpStatusCode: 500 } }),
        expected: 'transient',
      },
      {
        case: 'DynamoDB ProvisionedThroughputExceededException',
        error: new ProvisionedThroughputExceededException({
          message: 'p',
          $metadata: { httpStatusCode: 400 },
        }),
        expected: 'transient',
      },
      {
        // SQS throttles with this name, a 400 and a client fault: without the name it would be
        // classified permanent and dead-lettered at once.
        case: 'SQS RequestThrottled',
        error: new RequestThrottled({ message: 't', $metadata: { httpStatusCode: 400 } }),
        expected: 'transient',
      },
    ])('when it is a real $case, it is $expected', ({ error, expected }) => {
      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe(expected);
    });

    it.each([
      'RequestThrottledException',
      'Throttling',
      'TooManyRequestsException',
      'LimitExceededException',
    ])('when it is the SDK throttling error %s with a 400 and a client fault, it is transient', (name) => {
      // Prepare
      const error = sdkShaped({ name, httpStatusCode: 400, fault: 'client' });

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('transient');
    });
  });

  describe('when given a network or timeout error', () => {
    it.each(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE'])(
      'when its code is %s, it is transient',
      (code) => {
        // Prepare
        const error = networkError(code);

        // Act
        const kind = classifyError(error);

        // Assess
        expect(kind).toBe('transient');
      },
    );

    it('when its code is an unknown network code, it is a bug', () => {
      // Prepare
      const error = networkError('EWHATEVER');

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('bug');
    });

    it.each(['TimeoutError', 'AbortError'])('when it is named %s, it is transient', (name) => {
      // Prepare
      const error = new Error('gave up');
      error.name = name;

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('transient');
    });
  });

  describe('when given anything else', () => {
    it('when it is a plain Error, it is a bug', () => {
      // Act
      const kind = classifyError(new Error('undefined is not a function'));

      // Assess
      expect(kind).toBe('bug');
    });

    it('when it is a TypeError, it is a bug', () => {
      // Act
      const kind = classifyError(new TypeError('cannot read properties of undefined'));

      // Assess
      expect(kind).toBe('bug');
    });

    it.each([
      { case: 'a string', value: 'ThrottlingException' },
      { case: 'undefined', value: undefined },
      { case: 'null', value: null },
      { case: 'a number', value: 500 },
      { case: 'an error-like plain object', value: { name: 'ThrottlingException', message: 'slow down' } },
    ])('when it is $case (not an Error), it is a bug', ({ value }) => {
      // Act
      const kind = classifyError(value);

      // Assess
      expect(kind).toBe('bug');
    });
  });
});

describe('Function: classifyHttpStatus', () => {
  it.each([
    { status: 400, expected: 'permanent' },
    { status: 401, expected: 'permanent' },
    { status: 404, expected: 'permanent' },
    { status: 408, expected: 'transient' },
    { status: 409, expected: 'permanent' },
    { status: 422, expected: 'permanent' },
    { status: 429, expected: 'transient' },
    { status: 500, expected: 'transient' },
    { status: 503, expected: 'transient' },
  ])('when the status is $status, it is $expected', ({ status, expected }) => {
    // Act
    const kind = classifyHttpStatus(status);

    // Assess
    expect(kind).toBe(expected);
  });

  it('when the status is not an error (200), it is a bug to classify it', () => {
    // Act
    const kind = classifyHttpStatus(200);

    // Assess
    expect(kind).toBe('bug');
  });
});

describe('Class: ValidationError', () => {
  it('when built with problems, it keeps them, lists them in its message and is permanent', () => {
    // Prepare
    const problems = ['payload.orderId: required', 'version: too new'];

    // Act
    const error = new ValidationError('invalid job envelope', problems);

    // Assess
    expect(error.problems).toEqual(problems);
    expect(error.message).toBe('invalid job envelope: payload.orderId: required; version: too new');
    expect(error.kind).toBe('permanent');
    expect(error).toBeInstanceOf(PermanentError);
    expect(classifyError(error)).toBe('permanent');
  });
});

describe('Class: TenangError', () => {
  const cause = new Error('root cause');

  it.each([
    { Class: TransientError, name: 'TransientError', kind: 'transient' },
    { Class: PermanentError, name: 'PermanentError', kind: 'permanent' },
    { Class: LockBusyError, name: 'LockBusyError', kind: 'transient' },
    { Class: StaleFencingTokenError, name: 'StaleFencingTokenError', kind: 'permanent' },
    { Class: TransitionAlreadyDoneError, name: 'TransitionAlreadyDoneError', kind: 'permanent' },
    { Class: IllegalTransitionError, name: 'IllegalTransitionError', kind: 'permanent' },
    { Class: CircuitOpenError, name: 'CircuitOpenError', kind: 'transient' },
    { Class: ConcurrentUpdateError, name: 'ConcurrentUpdateError', kind: 'transient' },
    { Class: CacheUnavailableError, name: 'CacheUnavailableError', kind: 'transient' },
    { Class: ShedError, name: 'ShedError', kind: 'permanent' },
  ])('when a $name is built with a cause, it sets its name, kind and cause', ({ Class, name, kind }) => {
    // Act
    const error = new Class('it failed', { cause });

    // Assess
    expect(error).toBeInstanceOf(TenangError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect(error.kind).toBe(kind);
    expect(error.cause).toBe(cause);
    expect(error.message).toBe('it failed');
    expect(errorClassName(error)).toBe(name);
  });

  it('when a ClaimInFlightError is built, it is transient, names the key and keeps the cause', () => {
    // Act
    const error = new ClaimInFlightError('outbox:order:o-1:v1:notification.send:order-paid', { cause });

    // Assess
    expect(error).toBeInstanceOf(TransientError);
    expect(error.name).toBe('ClaimInFlightError');
    expect(classifyError(error)).toBe('transient');
    expect(error.key).toBe('outbox:order:o-1:v1:notification.send:order-paid');
    expect(error.message).toContain(
      'outbox:order:o-1:v1:notification.send:order-paid is claimed by another attempt',
    );
    expect(error.cause).toBe(cause);
  });

  it('when a ValidationError is built with a cause, it sets its name and keeps the cause', () => {
    // Act
    const error = new ValidationError('bad', ['x: y'], { cause });

    // Assess
    expect(error.name).toBe('ValidationError');
    expect(error.cause).toBe(cause);
  });

  it('when a subclass outside this module extends a domain error, its own class name is used', () => {
    // Prepare
    class ProviderDownError extends TransientError {}

    // Act
    const error = new ProviderDownError('down');

    // Assess
    expect(error.name).toBe('ProviderDownError');
  });
});

describe('Function: errorClassName', () => {
  it('when given a non-Error, it returns its typeof', () => {
    // Act
    const names = [errorClassName('boom'), errorClassName(undefined), errorClassName({ name: 'X' })];

    // Assess
    expect(names).toEqual(['string', 'undefined', 'object']);
  });
});
