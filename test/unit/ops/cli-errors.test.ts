/**
 * The CLI's credentials failures, in each shape the SDK raises them: the provider chain's
 * CredentialsProviderError / TokenProviderError (built as @aws-sdk/credential-provider-node,
 * -env, -sso and @aws-sdk/token-providers build them), and the service exceptions AWS answers
 * a request with an expired or unknown token (built as each client's deserializer builds an
 * unmodelled error, and once more deserialized for real from a local stand-in per protocol,
 * test/helpers/aws-token-errors.ts).
 */
import {
  CloudFormationClient,
  CloudFormationServiceException,
  ListStackResourcesCommand,
} from '@aws-sdk/client-cloudformation';
import { DynamoDBClient, DynamoDBServiceException, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { LambdaClient, LambdaServiceException, ListFunctionsCommand } from '@aws-sdk/client-lambda';
import { ListQueuesCommand, QueueDoesNotExist, SQSClient, SQSServiceException } from '@aws-sdk/client-sqs';
import { GetParameterCommand, SSMClient, SSMServiceException } from '@aws-sdk/client-ssm';
import { fromEnv } from '@aws-sdk/credential-provider-env';
import { CredentialsProviderError, ProviderError, TokenProviderError } from '@smithy/core/config';
import { exitCodeFor } from '../../../bin/tenang';
import { CommandFailedError } from '../../../lib/ops/cli-context';
import {
  credentialsFailureOf,
  describeCredentialsFailure,
  EXIT_CODE,
  type CredentialsProblem,
} from '../../../lib/ops/cli-errors';
import {
  EXPIRED_TOKEN_MESSAGE,
  INVALID_TOKEN_MESSAGE,
  startTokenErrorServer,
  type TokenErrorServer,
} from '../../helpers/aws-token-errors';

const EXPIRED = EXPIRED_TOKEN_MESSAGE;
const INVALID = INVALID_TOKEN_MESSAGE;
const metadata = (httpStatusCode: number) => ({ httpStatusCode, attempts: 1, totalRetryDelay: 0 });

/** An unmodelled error as the SDK's deserializers build it: the service's base exception named by the error code. */
function serviceError(
  Base: new (options: {
    name: string;
    $fault: 'client' | 'server';
    $metadata: ReturnType<typeof metadata>;
    message: string;
  }) => Error,
  name: string,
  message: string,
  httpStatusCode = 403,
): Error {
  return new Base({ name, $fault: 'client', $metadata: metadata(httpStatusCode), message });
}

describe('Function: credentialsFailureOf', () => {
  describe('when the provider chain finds no credentials', () => {
    it.each<[string, CredentialsProblem, () => Error | Promise<Error>]>([
      [
        'the default chain (credential-provider-node) gave up',
        'missing',
        () =>
          new CredentialsProviderError('Could not load credentials from any providers', {
            tryNextLink: false,
          }),
      ],
      [
        'the environment has no keys (credential-provider-env, run for real)',
        'missing',
        async () => {
          const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
          delete process.env.AWS_ACCESS_KEY_ID;
          delete process.env.AWS_SECRET_ACCESS_KEY;
          try {
            return await fromEnv()().then(
              () => new Error('fromEnv found credentials'),
              (error: Error) => error,
            );
          } finally {
            if (saved.id !== undefined) process.env.AWS_ACCESS_KEY_ID = saved.id;
            if (saved.secret !== undefined) process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
          }
        },
      ],
      [
        'AWS_PROFILE names a profile no file has (credential-provider-ini)',
        'missing',
        () =>
          new CredentialsProviderError(
            'Could not resolve credentials using profile: [nope] in configuration/credentials file(s).',
            { tryNextLink: false },
          ),
      ],
      [
        'the SSO session ran out (credential-provider-sso)',
        'expired',
        () =>
          new CredentialsProviderError(
            'The SSO session associated with this profile has expired. To refresh this SSO session run aws sso login with the corresponding profile.',
            { tryNextLink: false },
          ),
      ],
      [
        "the SSO token ran out (token-providers' TokenProviderError)",
        'expired',
        () =>
          new TokenProviderError(
            "Token is expired. To refresh this SSO session run 'aws sso login' with the corresponding profile.",
            false,
          ),
      ],
    ])('when %s, it is a credentials failure (%s)', async (_, problem, make) => {
      // Prepare
      const error = await make();

      // Act
      const failure = credentialsFailureOf(error);

      // Assess
      expect(error.name).toMatch(/ProviderError$/);
      expect(failure).toEqual({ problem, name: error.name, message: error.message.split('\n')[0] });
    });
  });

  describe('when AWS answers that the token is expired or unknown', () => {
    it.each<[string, CredentialsProblem, Error]>([
      [
        'CloudFormation (query protocol): ExpiredToken',
        'expired',
        serviceError(CloudFormationServiceException, 'ExpiredToken', EXPIRED),
      ],
      [
        'DynamoDB (JSON): ExpiredTokenException',
        'expired',
        serviceError(DynamoDBServiceException, 'ExpiredTokenException', EXPIRED, 400),
      ],
      [
        'SSM (JSON): ExpiredTokenException',
        'expired',
        serviceError(SSMServiceException, 'ExpiredTokenException', EXPIRED, 400),
      ],
      [
        'SQS: InvalidClientTokenId naming an expired token',
        'expired',
        serviceError(SQSServiceException, 'InvalidClientTokenId', EXPIRED),
      ],
      [
        'SQS: InvalidClientTokenId',
        'rejected',
        serviceError(SQSServiceException, 'InvalidClientTokenId', INVALID),
      ],
      [
        'Lambda (REST JSON): UnrecognizedClientException',
        'rejected',
        serviceError(LambdaServiceException, 'UnrecognizedClientException', INVALID),
      ],
      [
        'CloudFormation: SignatureDoesNotMatch',
        'rejected',
        serviceError(
          CloudFormationServiceException,
          'SignatureDoesNotMatch',
          'The request signature we calculated does not match the signature you provided.',
        ),
      ],
      [
        'DynamoDB: InvalidSignatureException',
        'rejected',
        serviceError(
          DynamoDBServiceException,
          'InvalidSignatureException',
          'The request signature we calculated does not match the signature you provided.',
          400,
        ),
      ],
    ])('when %s, it is a credentials failure (%s)', (_, problem, error) => {
      expect(credentialsFailureOf(error)).toEqual({ problem, name: error.name, message: error.message });
    });
  });

  it('when a command wrapped the SDK error as its cause, it finds it', () => {
    // Prepare
    const sdk = new CredentialsProviderError('Could not load credentials from any providers', false);
    const wrapped = new CommandFailedError('no pipeline config for stage "dev": …', { cause: sdk });

    // Act
    const failure = credentialsFailureOf(wrapped);

    // Assess
    expect(failure?.problem).toBe('missing');
    expect(failure?.name).toBe('CredentialsProviderError');
  });

  it.each<[string, unknown]>([
    [
      'another service error',
      new QueueDoesNotExist({ message: 'The specified queue does not exist.', $metadata: {} }),
    ],
    [
      'a permission error (credentials work, the policy says no)',
      serviceError(DynamoDBServiceException, 'AccessDeniedException', 'User: … is not authorized', 400),
    ],
    ['a provider error of another kind (region)', new ProviderError('Region is missing', false)],
    ['an Error that only borrows the name', Object.assign(new Error(EXPIRED), { name: 'ExpiredToken' })],
    ['a bug', new TypeError('x is undefined')],
    ['no Error at all', 'ExpiredToken'],
  ])('when the error is %s, it is not a credentials failure', (_, error) => {
    expect(credentialsFailureOf(error)).toBeUndefined();
  });
});

describe('Function: credentialsFailureOf, on errors the SDK deserialized from AWS-shaped answers', () => {
  let server: TokenErrorServer;

  beforeAll(async () => {
    server = await startTokenErrorServer();
  });

  afterAll(async () => {
    await server.close();
  });

  const config = () => ({
    endpoint: server.endpoint,
    region: 'us-east-1',
    maxAttempts: 1,
    credentials: { accessKeyId: 'ASIAEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token' },
  });

  /** Makes one call and destroys the client (no socket left open). */
  async function once<C extends { destroy(): void }>(
    client: C,
    call: (c: C) => Promise<unknown>,
  ): Promise<unknown> {
    try {
      return await call(client);
    } finally {
      client.destroy();
    }
  }

  it.each<[string, string, CredentialsProblem, () => Promise<unknown>]>([
    [
      'CloudFormation',
      'ExpiredToken',
      'expired',
      () =>
        once(new CloudFormationClient(config()), (c) =>
          c.send(new ListStackResourcesCommand({ StackName: 's' })),
        ),
    ],
    [
      'DynamoDB',
      'ExpiredTokenException',
      'expired',
      () => once(new DynamoDBClient(config()), (c) => c.send(new ListTablesCommand({}))),
    ],
    [
      'SSM',
      'ExpiredTokenException',
      'expired',
      () => once(new SSMClient(config()), (c) => c.send(new GetParameterCommand({ Name: 'p' }))),
    ],
    [
      'SQS',
      'InvalidClientTokenId',
      'rejected',
      () => once(new SQSClient(config()), (c) => c.send(new ListQueuesCommand({}))),
    ],
    [
      'Lambda',
      'UnrecognizedClientException',
      'rejected',
      () => once(new LambdaClient(config()), (c) => c.send(new ListFunctionsCommand({}))),
    ],
  ])(
    'when %s answers, the SDK raises %s and it is a credentials failure (%s)',
    async (_, name, problem, call) => {
      // Act
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );

      // Assess
      expect(credentialsFailureOf(error)).toMatchObject({ problem, name });
    },
  );
});

describe('Function: describeCredentialsFailure', () => {
  const missing = {
    problem: 'missing',
    name: 'CredentialsProviderError',
    message: 'Could not load credentials from any providers',
  } as const;

  it('when no credentials were found, it says so and names every way to provide them', () => {
    // Act
    const text = describeCredentialsFailure(missing, { AWS_REGION: 'eu-west-1' });

    // Assess
    expect(text.split('\n')[0]).toBe(
      'error: no AWS credentials found: CredentialsProviderError: Could not load credentials from any providers',
    );
    expect(text).toContain('region eu-west-1');
    expect(text).toContain('aws configure');
    expect(text).toContain('export AWS_PROFILE=<profile>');
    expect(text).toContain('aws sso login');
    expect(text).toContain('npm run local -- up');
    expect(text).toContain(`exit code ${EXIT_CODE.credentials}`);
  });

  it('when the session token expired, it names the source and says how to refresh it', () => {
    // Act
    const text = describeCredentialsFailure(
      { problem: 'expired', name: 'ExpiredTokenException', message: EXPIRED },
      { AWS_PROFILE: 'ops' },
    );

    // Assess
    expect(text.split('\n')[0]).toBe(
      `error: the AWS credentials have expired (from profile "ops" (AWS_PROFILE)): ExpiredTokenException: ${EXPIRED}`,
    );
    expect(text).toContain('aws sso login --profile ops');
    expect(text).toContain('AWS_SESSION_TOKEN');
  });

  it("when AWS did not accept the key and an endpoint is set, it points at the local platform's environment", () => {
    // Act
    const text = describeCredentialsFailure(
      { problem: 'rejected', name: 'InvalidClientTokenId', message: INVALID },
      { AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE', AWS_ENDPOINT_URL: 'http://localhost:5055' },
    );

    // Assess
    expect(text.split('\n')[0]).toBe(
      `error: AWS did not accept the credentials (from AWS_ACCESS_KEY_ID): InvalidClientTokenId: ${INVALID}`,
    );
    expect(text).toContain('aws sts get-caller-identity');
    expect(text).toContain('AWS_ENDPOINT_URL=http://localhost:5055');
  });
});

describe('Function: exitCodeFor, on credentials failures', () => {
  it('when no credentials were found, it prints the explanation without a stack trace and returns 3', () => {
    // Prepare
    const err = jest.fn();
    const error = new CredentialsProviderError('Could not load credentials from any providers', false);

    // Act
    const code = exitCodeFor(error, err, {});

    // Assess
    expect(code).toBe(EXIT_CODE.credentials);
    expect(code).toBe(3);
    const printed = err.mock.calls.map((c) => String(c[0])).join('\n');
    expect(printed).toMatch(/^error: no AWS credentials found/);
    expect(printed).not.toMatch(/unexpected error|\n\s+at /);
  });

  it('when a token expired, it returns 3 instead of the generic AWS error code', () => {
    const err = jest.fn();
    expect(
      exitCodeFor(serviceError(DynamoDBServiceException, 'ExpiredTokenException', EXPIRED, 400), err, {}),
    ).toBe(3);
    expect(String(err.mock.calls[0]?.[0])).toMatch(/^error: the AWS credentials have expired/);
  });
});
