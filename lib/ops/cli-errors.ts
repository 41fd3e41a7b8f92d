/**
 * The `tenang` CLI's exit codes, and the one class of failure a user meets first: no usable AWS
 * credentials. The SDK reports it in two shapes: the credential provider chain gives up before any
 * request is sent (a CredentialsProviderError or TokenProviderError, @smithy/core's
 * property-provider), or AWS answers a signed request with a service exception naming the token
 * as expired or unknown (ExpiredToken[Exception], InvalidClientTokenId,
 * UnrecognizedClientException, the signature errors). Both are classified here by name, not by
 * class: an application can hold more than one copy of the SDK's packages.
 */

import { cliPlace, type CliPlace } from './cli-place';

/** Exit codes of the `tenang` CLI (printed by `--help`, listed in the README). */
export const EXIT_CODE = {
  ok: 0,
  /** A command ran and failed, or AWS answered with an error. */
  failure: 1,
  /** Wrong or missing options, or an invalid pipeline declaration. */
  usage: 2,
  /** No usable AWS credentials: none found, expired, or not accepted by AWS. */
  credentials: 3,
} as const;

/** The help text's line about exit codes. */
export const EXIT_CODES_HELP = `Exit codes: ${EXIT_CODE.ok} ok, ${EXIT_CODE.failure} failure, ${EXIT_CODE.usage} usage error (or an invalid pipeline declaration), ${EXIT_CODE.credentials} no usable AWS credentials.`;

/** What went wrong, in the words the CLI reports it: text on stderr and, with --json, one JSON object on stdout. */
export interface CliErrorReport {
  /** usage: options; config: the pipeline declaration; failure: a command's own; aws/network: the call; unexpected: a bug. */
  readonly kind: 'usage' | 'config' | 'credentials' | 'failure' | 'aws' | 'network' | 'unexpected';
  /** One line, without the `error: ` prefix (a declaration's problems follow on lines of their own). */
  readonly message: string;
  /** What to do about it. @default none */
  readonly hint?: string;
  readonly exitCode: number;
  /** The stack, for a bug only. @default none */
  readonly stack?: string;
}

/** The JSON object `--json` prints for an error: `{"error": {kind, message, hint?, exitCode}}`. */
export function errorJson(report: CliErrorReport): string {
  return JSON.stringify({ error: report }, null, 2);
}

/** What is wrong with the credentials. */
export type CredentialsProblem =
  /** The provider chain found none (nothing configured, unknown profile, SSO not logged in). */
  | 'missing'
  /** A session token or SSO session that has run out. */
  | 'expired'
  /** AWS does not know the access key, or the secret does not match it. */
  | 'rejected';

/** A credentials failure found in an error (or one of its causes). */
export interface CredentialsFailure {
  readonly problem: CredentialsProblem;
  /** The SDK's error name, e.g. `CredentialsProviderError`, `ExpiredTokenException`. */
  readonly name: string;
  /** The first line of its message. */
  readonly message: string;
}

/** Errors of the SDK's credential and token providers (the chain gave up before any request). */
const PROVIDER_ERRORS: ReadonlySet<string> = new Set(['CredentialsProviderError', 'TokenProviderError']);

/** Service exceptions AWS answers when the request's security token has run out. */
const EXPIRED_TOKEN_ERRORS: ReadonlySet<string> = new Set([
  'ExpiredToken', // query protocol (CloudFormation, CloudWatch, SNS, STS) and SQS
  'ExpiredTokenException', // JSON protocols (DynamoDB, SSM, Lambda)
]);

/** Service exceptions AWS answers when it does not accept the access key or its signature. */
const REJECTED_CREDENTIALS_ERRORS: ReadonlySet<string> = new Set([
  'InvalidClientTokenId', // query protocol and SQS: an access key AWS does not know
  'UnrecognizedClientException', // JSON protocols: the same
  'SignatureDoesNotMatch', // query protocol: the secret does not match the key
  'InvalidSignatureException', // JSON protocols: the same
]);

const EXPIRED_MESSAGE =
  /\b(security token included in the request is expired|token is expired|session .*has expired)/i;

/** How many `cause` links are followed (a command may wrap the SDK's error). */
const MAX_CAUSES = 5;

function firstLine(message: string): string {
  return message.split('\n')[0] ?? '';
}

function classifyOne(error: Error): CredentialsProblem | undefined {
  if (PROVIDER_ERRORS.has(error.name)) return EXPIRED_MESSAGE.test(error.message) ? 'expired' : 'missing';
  // Service exceptions carry $metadata (ServiceException); a provider error does not.
  if (!('$metadata' in error)) return undefined;
  if (EXPIRED_TOKEN_ERRORS.has(error.name)) return 'expired';
  if (REJECTED_CREDENTIALS_ERRORS.has(error.name))
    return EXPIRED_MESSAGE.test(error.message) ? 'expired' : 'rejected';
  return undefined;
}

/** The credentials failure `error` is (or wraps through `cause`), or undefined for any other error. */
export function credentialsFailureOf(error: unknown): CredentialsFailure | undefined {
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_CAUSES && current instanceof Error; depth += 1) {
    const problem = classifyOne(current);
    if (problem !== undefined) return { problem, name: current.name, message: firstLine(current.message) };
    current = current.cause;
  }
  return undefined;
}

const HEADLINE: Readonly<Record<CredentialsProblem, string>> = {
  missing: 'no AWS credentials found',
  expired: 'the AWS credentials have expired',
  rejected: 'AWS did not accept the credentials',
};

/** Where the SDK took the credentials from, as far as the environment tells. */
function credentialSource(env: NodeJS.ProcessEnv): string {
  if (nonEmpty(env.AWS_ACCESS_KEY_ID))
    return nonEmpty(env.AWS_SESSION_TOKEN)
      ? 'AWS_ACCESS_KEY_ID with AWS_SESSION_TOKEN (temporary credentials)'
      : 'AWS_ACCESS_KEY_ID';
  const profile = env.AWS_PROFILE ?? env.AWS_DEFAULT_PROFILE;
  if (nonEmpty(profile)) return `profile "${profile}" (AWS_PROFILE)`;
  return 'the default profile';
}

function nonEmpty(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

/** What to do about it, one step a line. */
function remedies(problem: CredentialsProblem, env: NodeJS.ProcessEnv, place: CliPlace): string[] {
  const profile = env.AWS_PROFILE ?? env.AWS_DEFAULT_PROFILE;
  const profileFlag = nonEmpty(profile) ? ` --profile ${profile}` : '';
  const steps: string[] = [];
  if (problem === 'expired') {
    steps.push(
      `SSO profile: aws sso login${profileFlag}`,
      'temporary keys (AWS_SESSION_TOKEN): get new ones from your identity provider or `aws sts`, and export them again',
    );
  } else {
    steps.push(
      'access keys: aws configure (writes ~/.aws/credentials), or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY',
      'a named profile: export AWS_PROFILE=<profile> (an SSO profile also needs: aws sso login --profile <profile>)',
    );
    if (problem === 'rejected') steps.push('check which identity AWS sees: aws sts get-caller-identity');
  }
  steps.push(
    nonEmpty(env.AWS_ENDPOINT_URL)
      ? `the local platform (AWS_ENDPOINT_URL=${env.AWS_ENDPOINT_URL}): export every line \`${place.localUp}\` printed, credentials included`
      : `the local platform instead of AWS: start \`${place.localUp}\` and run the \`export\` lines it prints in this shell`,
  );
  return steps;
}

/** The report of a credentials failure: the headline, and every way to fix it as the hint. */
export function credentialsReport(
  failure: CredentialsFailure,
  env: NodeJS.ProcessEnv = process.env,
  place: CliPlace = cliPlace(),
): CliErrorReport {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const profile = env.AWS_PROFILE ?? env.AWS_DEFAULT_PROFILE;
  const source =
    failure.problem !== 'missing'
      ? ` (from ${credentialSource(env)})`
      : nonEmpty(profile)
        ? ` (profile "${profile}")`
        : '';
  return {
    kind: 'credentials',
    message: `${HEADLINE[failure.problem]}${source}: ${failure.name}: ${failure.message}`,
    hint: [
      `tenang calls AWS (region ${region}) with the SDK's usual credentials. To fix it, one of:`,
      ...remedies(failure.problem, env, place).map((step) => `  - ${step}`),
    ].join('\n'),
    exitCode: EXIT_CODE.credentials,
  };
}

/** The message the CLI prints for a credentials failure (no stack trace: it is not a bug). */
export function describeCredentialsFailure(
  failure: CredentialsFailure,
  env: NodeJS.ProcessEnv = process.env,
  place: CliPlace = cliPlace(),
): string {
  const report = credentialsReport(failure, env, place);
  return [
    `error: ${report.message}`,
    report.hint ?? '',
    `(exit code ${EXIT_CODE.credentials}: no usable AWS credentials)`,
  ].join('\n');
}
