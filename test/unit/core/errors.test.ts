import { Readable } from 'node:stream';
import { IdempotencyPersistenceLayerError } from '@aws-lambda-powertools/idempotency';
import { CloudWatchClient, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  InternalServerError,
  ProvisionedThroughputExceededException,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { GetEventSourceMappingCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { RequestThrottled, SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import {
  CacheUnavailableError,
  CircuitOpenError,
  ClaimInFlightError,
  ConcurrentUpdateError,
  IllegalTransitionError,
  LockBusyError,
  PermanentError,
  PermissionDeniedError,
  ShedError,
  StaleFencingTokenError,
  TenangError,
  TransientError,
  TransitionAlreadyDoneError,
  ValidationError,
  classifyError,
  classifyHttpStatus,
  errorClassName,
  permissionDenial,
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

/** IAM's denial wording, as every service returns it in the error message. */
const denied = (action: string, resource: string): string =>
  `User: arn:aws:sts::123456789012:assumed-role/tenang-dev-consumer-role/tenang-dev-consumer is not authorized to perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`;

/** The error a real SDK v3 client raises for this HTTP answer (a request handler that answers it). */
async function realSdkError(
  send: (handler: { handle: () => Promise<unknown> }) => Promise<unknown>,
  answer: { status: number; headers: Record<string, string>; body: unknown },
): Promise<Error> {
  const handler = {
    handle: () =>
      Promise.resolve({
        response: {
          statusCode: answer.status,
          headers: answer.headers,
          body: Readable.from([Buffer.from(JSON.stringify(answer.body))]),
        },
      }),
  };
  try {
    await send(handler);
  } catch (error) {
    return error as Error;
  }
  throw new Error('the client did not fail');
}

/** Client settings for a client whose only request handler is `handler`: no network, no retries. */
const offline = (handler: unknown) => ({
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
  maxAttempts: 1,
  requestHandler: handler as never,
});

const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-dev-notification-send';
const QUEUE_ARN = 'arn:aws:sqs:eu-west-1:123456789012:tenang-dev-notification-send';

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

  describe('when given an access denial (a deployment error)', () => {
    it.each([
      {
        case: 'SQS SendMessage (JSON, query-compatible: named after x-amzn-query-error)',
        expected: { name: 'AccessDenied', action: 'sqs:SendMessage', resource: QUEUE_ARN },
        error: () =>
          realSdkError(
            (h) =>
              new SQSClient(offline(h)).send(
                new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: '{}' }),
              ),
            {
              status: 403,
              headers: {
                'content-type': 'application/x-amz-json-1.0',
                'x-amzn-query-error': 'AccessDenied;Sender',
              },
              body: {
                __type: 'com.amazon.coral.service#AccessDeniedException',
                Message: denied('sqs:SendMessage', QUEUE_ARN),
              },
            },
          ),
      },
      {
        case: 'SQS SendMessage without the query-compatibility header (named after __type)',
        expected: { name: 'AccessDeniedException', action: 'sqs:SendMessage', resource: QUEUE_ARN },
        error: () =>
          realSdkError(
            (h) =>
              new SQSClient(offline(h)).send(
                new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: '{}' }),
              ),
            {
              status: 403,
              headers: { 'content-type': 'application/x-amz-json-1.0' },
              body: {
                __type: 'com.amazon.coral.service#AccessDeniedException',
                Message: denied('sqs:SendMessage', QUEUE_ARN),
              },
            },
          ),
      },
      {
        case: "SQS SendMessage refused by the queue's KMS key (KmsAccessDenied, KMS.AccessDeniedException)",
        expected: {
          name: 'KmsAccessDenied',
          action: 'kms:GenerateDataKey',
          resource: 'arn:aws:kms:eu-west-1:123456789012:key/k-1',
        },
        error: () =>
          realSdkError(
            (h) =>
              new SQSClient(offline(h)).send(
                new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: '{}' }),
              ),
            {
              status: 400,
              headers: {
                'content-type': 'application/x-amz-json-1.0',
                'x-amzn-query-error': 'KMS.AccessDeniedException;Sender',
              },
              body: {
                __type: 'com.amazonaws.sqs#KmsAccessDenied',
                message: denied('kms:GenerateDataKey', 'arn:aws:kms:eu-west-1:123456789012:key/k-1'),
              },
            },
          ),
      },
      {
        case: 'DynamoDB UpdateItem (AccessDeniedException, 400 client fault)',
        expected: {
          name: 'AccessDeniedException',
          action: 'dynamodb:UpdateItem',
          resource: 'arn:aws:dynamodb:eu-west-1:123456789012:table/tenang-dev-orders',
        },
        error: () =>
          realSdkError(
            (h) =>
              new DynamoDBClient(offline(h)).send(
                new UpdateItemCommand({ TableName: 'tenang-dev-orders', Key: { pk: { S: 'o-1' } } }),
              ),
            {
              status: 400,
              headers: { 'content-type': 'application/x-amz-json-1.0' },
              body: {
                __type: 'com.amazonaws.dynamodb.v20120810#AccessDeniedException',
                message: denied(
                  'dynamodb:UpdateItem',
                  'arn:aws:dynamodb:eu-west-1:123456789012:table/tenang-dev-orders',
                ),
              },
            },
          ),
      },
      {
        case: 'SSM GetParameter (JSON 1.1)',
        expected: {
          name: 'AccessDeniedException',
          action: 'ssm:GetParameter',
          resource: 'arn:aws:ssm:eu-west-1:123456789012:parameter/tenang/dev/flags/degrade',
        },
        error: () =>
          realSdkError((h) => new SSMClient(offline(h)).send(new GetParameterCommand({ Name: 'p' })), {
            status: 400,
            headers: { 'content-type': 'application/x-amz-json-1.1' },
            body: {
              __type: 'AccessDeniedException',
              message: denied(
                'ssm:GetParameter',
                'arn:aws:ssm:eu-west-1:123456789012:parameter/tenang/dev/flags/degrade',
              ),
            },
          }),
      },
      {
        case: 'Lambda GetEventSourceMapping (REST-JSON, x-amzn-ErrorType)',
        expected: {
          name: 'AccessDeniedException',
          action: 'lambda:GetEventSourceMapping',
          resource: 'arn:aws:lambda:eu-west-1:123456789012:event-source-mapping:u-1',
        },
        error: () =>
          realSdkError(
            (h) => new LambdaClient(offline(h)).send(new GetEventSourceMappingCommand({ UUID: 'u-1' })),
            {
              status: 403,
              headers: { 'content-type': 'application/json', 'x-amzn-ErrorType': 'AccessDeniedException' },
              body: {
                Message: denied(
                  'lambda:GetEventSourceMapping',
                  'arn:aws:lambda:eu-west-1:123456789012:event-source-mapping:u-1',
                ),
              },
            },
          ),
      },
      {
        case: 'CloudWatch PutMetricData (JSON, query-compatible; the message names no resource)',
        expected: { name: 'AccessDenied', action: 'cloudwatch:PutMetricData', resource: undefined },
        error: () =>
          realSdkError(
            (h) =>
              new CloudWatchClient(offline(h)).send(
                new PutMetricDataCommand({ Namespace: 'tenang', MetricData: [] }),
              ),
            {
              status: 403,
              headers: {
                'content-type': 'application/x-amz-json-1.0',
                'x-amzn-query-error': 'AccessDenied;Sender',
              },
              body: {
                __type: 'com.amazon.coral.service#AccessDeniedException',
                Message:
                  'User: arn:aws:sts::123456789012:assumed-role/r/fn is not authorized to perform: cloudwatch:PutMetricData because no identity-based policy allows the cloudwatch:PutMetricData action',
              },
            },
          ),
      },
    ])(
      'when it is a real SDK error of $case, it is deployment and names the action',
      async ({ error, expected }) => {
        // Prepare
        const raised = await error();

        // Act
        const kind = classifyError(raised);
        const denial = permissionDenial(raised);

        // Assess
        expect(raised.name).toBe(expected.name);
        expect(kind).toBe('deployment');
        expect(denial).toMatchObject({ action: expected.action, resource: expected.resource });
      },
    );

    it.each([
      { name: 'AccessDeniedException', httpStatusCode: 400 },
      { name: 'AccessDenied', httpStatusCode: 403 },
      { name: 'KMS.AccessDeniedException', httpStatusCode: 400 },
      { name: 'KmsAccessDenied', httpStatusCode: 400 },
      { name: 'KMSAccessDeniedException', httpStatusCode: 400 },
      { name: 'AuthorizationError', httpStatusCode: 403 },
      { name: 'AuthorizationErrorException', httpStatusCode: 403 },
      { name: 'UnauthorizedOperation', httpStatusCode: 403 },
    ])(
      'when its name is $name with a $httpStatusCode and a client fault, it is deployment, not permanent',
      ({ name, httpStatusCode }) => {
        // Prepare
        const error = sdkShaped({ name, httpStatusCode, fault: 'client' });

        // Act
        const kind = classifyError(error);

        // Assess
        expect(kind).toBe('deployment');
        expect(permissionDenial(error)?.code).toBe(name);
      },
    );

    it.each([
      { field: 'Code', value: { Code: 'AccessDenied' } },
      { field: 'code', value: { code: 'AccessDeniedException' } },
      { field: 'Error.Code', value: { Error: { Code: 'AuthorizationError' } } },
      { field: '__type', value: { __type: 'com.amazon.coral.service#AccessDeniedException' } },
    ])('when only its $field says access denied, it is deployment', ({ value }) => {
      // Prepare
      const error = Object.assign(
        sdkShaped({ name: 'SQSServiceException', httpStatusCode: 403, fault: 'client' }),
        value,
      );

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('deployment');
    });

    it('when a plain 400 ValidationException with a client fault comes, it is still permanent', () => {
      // Prepare
      const error = sdkShaped({ name: 'ValidationException', httpStatusCode: 400, fault: 'client' });

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('permanent');
      expect(permissionDenial(error)).toBeUndefined();
    });

    it.each(['AccessDeniedFoo', 'NotAccessDenied', 'KMS.DisabledException'])(
      'when its name only resembles a denial (%s, 400 client fault), it stays permanent',
      (name) => {
        // Act
        const kind = classifyError(sdkShaped({ name, httpStatusCode: 400, fault: 'client' }));

        // Assess
        expect(kind).toBe('permanent');
      },
    );

    it('when a plain Error only mentions AccessDenied in its message, it is a bug: names and codes decide', () => {
      // Act
      const kind = classifyError(new Error('AccessDenied'));

      // Assess
      expect(kind).toBe('bug');
    });

    it.each([
      {
        case: "the runner's own wrapper (a plain Error with the denial as its cause)",
        wrap: (cause: Error) =>
          Object.assign(new Error('attempt 1 failed; retrying', { cause }), { name: 'RetryLaterError' }),
      },
      {
        case: "Powertools' IdempotencyPersistenceLayerError around the persistence layer's error",
        wrap: (cause: Error) =>
          new IdempotencyPersistenceLayerError('Failed to save in progress record to idempotency store', {
            cause,
          }),
      },
      {
        case: 'a PermanentError around it: the denial wins over what the wrapper concluded',
        wrap: (cause: Error) => new PermanentError('reservation refused', { cause }),
      },
      {
        case: 'a TransientError around it',
        wrap: (cause: Error) => new TransientError('the claiming transaction was cancelled', { cause }),
      },
      {
        case: 'two wrappers deep',
        wrap: (cause: Error) =>
          new Error('outer', { cause: new IdempotencyPersistenceLayerError('inner', { cause }) }),
      },
    ])('when the denial is wrapped as the cause of $case, it is deployment', ({ wrap }) => {
      // Prepare
      const error = wrap(
        Object.assign(sdkShaped({ name: 'AccessDeniedException', httpStatusCode: 400, fault: 'client' }), {
          message: denied(
            'dynamodb:PutItem',
            'arn:aws:dynamodb:eu-west-1:123456789012:table/tenang-dev-idempotency',
          ),
        }),
      );

      // Act
      const kind = classifyError(error);

      // Assess
      expect(kind).toBe('deployment');
      expect(permissionDenial(error)).toMatchObject({
        code: 'AccessDeniedException',
        action: 'dynamodb:PutItem',
        resource: 'arn:aws:dynamodb:eu-west-1:123456789012:table/tenang-dev-idempotency',
        principal: 'arn:aws:sts::123456789012:assumed-role/tenang-dev-consumer-role/tenang-dev-consumer',
      });
    });

    it('when a cause chain has a cycle and no denial, it ends and keeps the outer kind', () => {
      // Prepare
      const a = new TransientError('a');
      const b = new Error('b', { cause: a });
      Object.defineProperty(a, 'cause', { value: b });

      // Act
      const kind = classifyError(a);

      // Assess
      expect(kind).toBe('transient');
      expect(permissionDenial(a)).toBeUndefined();
    });

    it.each([
      {
        case: 'an explicit deny',
        message:
          'User: arn:aws:sts::123456789012:assumed-role/r/fn is not authorized to perform: sqs:ChangeMessageVisibility on resource: arn:aws:sqs:eu-west-1:123456789012:q.fifo with an explicit deny in an identity-based policy',
        action: 'sqs:ChangeMessageVisibility',
        resource: 'arn:aws:sqs:eu-west-1:123456789012:q.fifo',
      },
      {
        case: "SQS's older wording",
        message: 'Access to the resource https://sqs.eu-west-1.amazonaws.com/123456789012/q is denied.',
        action: undefined,
        resource: 'https://sqs.eu-west-1.amazonaws.com/123456789012/q',
      },
      {
        case: "KMS's ciphertext wording (no resource named)",
        message:
          'User: arn:aws:sts::123456789012:assumed-role/r/fn is not authorized to perform: kms:Decrypt on the resource associated with this ciphertext because the resource does not exist in this Region',
        action: 'kms:Decrypt',
        resource: undefined,
      },
      { case: 'no details at all', message: 'Access Denied', action: undefined, resource: undefined },
    ])('when the message is $case, the denial names what it says', ({ message, action, resource }) => {
      // Prepare
      const error = Object.assign(sdkShaped({ name: 'AccessDenied', httpStatusCode: 403, fault: 'client' }), {
        message,
      });

      // Act
      const denial = permissionDenial(error);

      // Assess
      expect(denial).toMatchObject({ code: 'AccessDenied', action, resource, message });
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

describe('Class: PermissionDeniedError', () => {
  it('when built with the action and resource, it is a deployment error that keeps them and its cause', () => {
    // Prepare
    const cause = sdkShaped({ name: 'AccessDenied', httpStatusCode: 403, fault: 'client' });

    // Act
    const error = new PermissionDeniedError('cannot defer the job', {
      cause,
      action: 'sqs:SendMessage',
      resource: QUEUE_ARN,
    });

    // Assess
    expect(error).toBeInstanceOf(TenangError);
    expect(error.kind).toBe('deployment');
    expect(error.name).toBe('PermissionDeniedError');
    expect(error.cause).toBe(cause);
    expect(classifyError(error)).toBe('deployment');
    expect(permissionDenial(error)).toMatchObject({
      code: 'AccessDenied',
      action: 'sqs:SendMessage',
      resource: QUEUE_ARN,
    });
  });

  it('when built without details or cause, it is still a deployment error, named by its own class', () => {
    // Act
    const error = new PermissionDeniedError('denied');

    // Assess
    expect(classifyError(error)).toBe('deployment');
    expect(permissionDenial(error)).toMatchObject({
      code: 'PermissionDeniedError',
      action: undefined,
      resource: undefined,
    });
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
