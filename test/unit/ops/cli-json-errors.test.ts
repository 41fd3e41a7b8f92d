/**
 * With --json (the program's, `tenang --json status`, or the command's, `tenang status --json`),
 * every error is one JSON object on stdout, `{"error": {kind, message, hint?, exitCode}}`, with the
 * exit code it has without --json; the text stays on stderr. An invalid pipeline declaration is a
 * config error: its problems, no stack trace, exit 2 (bin/tenang.ts, the error funnel).
 */
import * as path from 'node:path';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { CredentialsProviderError } from '@smithy/core/config';
import { mockClient } from 'aws-sdk-client-mock';
import { exitCodeFor, funnelError, runCaptured, type CapturedRun } from '../../../bin/tenang';
import { encodePipeline, PipelineConfigError } from '../../../lib/config';
import { EXIT_CODE } from '../../../lib/ops/cli-errors';
import { cliPlace } from '../../../lib/ops/cli-place';
import { referencePipeline } from '../../../examples/reference/pipeline';

const CHECKOUT = path.resolve(__dirname, '..', '..', '..');
const SAM_FILE = path.join(CHECKOUT, 'test', 'unit', 'audit', 'fixtures', 'sam-worker.yaml');
const clients: readonly { reset(): void; onAnyCommand(): { rejects(error: Error): unknown } }[] = [
  mockClient(CloudFormationClient),
  mockClient(CloudWatchClient),
  mockClient(DynamoDBClient),
  mockClient(LambdaClient),
  mockClient(SQSClient),
  mockClient(SSMClient),
];
const savedEnv = { ...process.env };

interface ErrorObject {
  readonly error: { kind: string; message: string; hint?: string; exitCode: number; stack?: string };
}

function cli(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<CapturedRun> {
  return runCaptured(argv, { env, cwd: CHECKOUT });
}

/** stdout as the one JSON document it must be. */
function jsonOf(run: CapturedRun): ErrorObject {
  return JSON.parse(run.out) as ErrorObject;
}

/** A declaration whose job type names a provider the stage gives no URL. */
function invalidDeclaration(): string {
  const declaration = referencePipeline('unit', 'eu-west-1');
  const { payment: _dropped, ...providers } = declaration.stage.providers as Record<string, string>;
  return encodePipeline({ ...declaration, stage: { ...declaration.stage, providers } });
}

beforeEach(() => {
  for (const c of clients) c.reset();
  Object.assign(process.env, { AWS_REGION: 'eu-west-1', TENANG_STAGE: 'unit', TENANG_ACTOR: 'tester' });
});
afterAll(() => {
  process.env = savedEnv;
});

describe('Command: any, with --json', () => {
  describe('when there are no credentials', () => {
    beforeEach(() => {
      const missing = new CredentialsProviderError('Could not load credentials from any providers', false);
      for (const c of clients) c.onAnyCommand().rejects(missing);
    });

    it.each([
      ['on the command', ['status', '--json']],
      ['globally', ['--json', 'status']],
    ])(
      'when --json is given %s, the credentials error is one JSON object on stdout, exit 3',
      async (_, argv) => {
        // Act
        const run = await cli(argv);

        // Assess
        expect(run.code).toBe(EXIT_CODE.credentials);
        const { error } = jsonOf(run);
        expect(error).toMatchObject({ kind: 'credentials', exitCode: 3 });
        expect(error.message).toBe(
          'no AWS credentials found: CredentialsProviderError: Could not load credentials from any providers',
        );
        expect(error.hint).toContain('`npm run local -- up`');
        // The text stays on stderr for a person watching.
        expect(run.err).toMatch(/^error: no AWS credentials found/);
      },
    );

    it('when --json is not given, stdout stays empty', async () => {
      // Act
      const run = await cli(['status']);

      // Assess
      expect(run.code).toBe(3);
      expect(run.out).toBe('');
    });
  });

  it('when an option is missing, the usage error is a JSON object, exit 2', async () => {
    // Act
    const run = await cli(['pause', 'payment-consumer', '--for', '30m', '--json']);

    // Assess
    expect(run.code).toBe(2);
    expect(jsonOf(run).error).toMatchObject({ kind: 'usage', exitCode: 2 });
    expect(jsonOf(run).error.message).toContain('--reason');
  });

  it('when commander refuses an option before any action, the usage error is a JSON object, exit 2', async () => {
    // Act
    const run = await cli(['status', '--bogus', '--json']);

    // Assess
    expect(run.code).toBe(2);
    expect(jsonOf(run).error).toEqual({ kind: 'usage', message: "unknown option '--bogus'", exitCode: 2 });
  });

  it('when the declaration is invalid, it is a config error listing its problems, exit 2', async () => {
    // Act
    const run = await cli(['status', '--json'], { ...process.env, TENANG_PIPELINE: invalidDeclaration() });

    // Assess
    expect(run.code).toBe(2);
    const { error } = jsonOf(run);
    expect(error).toMatchObject({ kind: 'config', exitCode: 2 });
    expect(error.message).toContain('"payment" has no URL in stage.providers');
    expect(error.stack).toBeUndefined();
  });

  it('when the command printed its JSON answer and then failed, stdout stays that one document', async () => {
    // Act: the SAM worker fails error-level rules.
    const run = await cli(['audit', SAM_FILE, '--json']);

    // Assess
    expect(run.code).toBe(1);
    const answer = JSON.parse(run.out) as { failed: boolean; error?: unknown };
    expect(answer.failed).toBe(true);
    expect(answer.error).toBeUndefined();
    expect(run.err).toContain('error: audit failed');
  });

  it('when audit is asked for --format json and cannot read the input, the error is a JSON object', async () => {
    // Act
    const run = await cli(['audit', path.join(CHECKOUT, 'no-such-template.yaml'), '--format', 'json']);

    // Assess
    expect(run.code).toBe(2);
    expect(jsonOf(run).error).toMatchObject({ kind: 'usage', exitCode: 2 });
    expect(jsonOf(run).error.message).toContain('no template at');
  });
});

describe('Function: funnelError (declaration errors and bugs)', () => {
  it('when the declaration is invalid, it prints the listed problems without a stack trace and returns 2', () => {
    // Prepare
    const err = jest.fn();

    // Act
    const code = exitCodeFor(
      new PipelineConfigError(['jobTypes[0].resources.providers: "payment" has no URL in stage.providers']),
      err,
      {},
      cliPlace(CHECKOUT),
    );

    // Assess
    expect(code).toBe(2);
    const printed = err.mock.calls.map((c) => String(c[0])).join('\n');
    expect(printed).toBe(
      'error: Invalid pipeline config (1 problem):\n  - jobTypes[0].resources.providers: "payment" has no URL in stage.providers',
    );
  });

  it('when the declaration in TENANG_PIPELINE is invalid, the CLI says where it came from, without a trace', async () => {
    // Act
    const run = await cli(['status'], { ...process.env, TENANG_PIPELINE: invalidDeclaration() });

    // Assess
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/^error: TENANG_PIPELINE: Invalid pipeline config \(1 problem\):\n {2}- /);
    expect(run.err).not.toMatch(/\n\s+at |unexpected error/);
  });

  it('when the error is a bug, its report is kind unexpected with the stack, exit 1', () => {
    // Act
    const { report } = funnelError(new TypeError('x is undefined'), {}, cliPlace(CHECKOUT));

    // Assess
    expect(report).toMatchObject({
      kind: 'unexpected',
      message: 'unexpected error (a bug in tenang): x is undefined',
      exitCode: 1,
    });
    expect(report?.stack).toMatch(/^TypeError: x is undefined\n\s+at /);
  });
});
