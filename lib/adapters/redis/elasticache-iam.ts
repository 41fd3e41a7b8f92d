/**
 * ElastiCache IAM authentication tokens: a SigV4-presigned `connect` request, used as the AUTH
 * password of the cache user. No password exists anywhere; a token lives 15 minutes and is
 * never logged.
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import type {
  AwsCredentialIdentity,
  AwsCredentialIdentityProvider,
  Checksum,
  HttpRequest,
  SourceData,
} from '@smithy/types';

/** ElastiCache accepts a token for at most 15 minutes. */
export const IAM_TOKEN_EXPIRY_SECONDS = 900;
/** A token is replaced after 10 minutes, well before it expires. */
export const IAM_TOKEN_REFRESH_SECONDS = 600;

/** What a token is for. */
export interface IamTokenTarget {
  /** The cache name (the signed request's host), not its endpoint. */
  readonly cacheName: string;
  /** The IAM-enabled cache user id (equal to its name). */
  readonly userId: string;
  readonly region: string;
  /** ElastiCache Serverless needs `ResourceType=ServerlessCache` in the signed query. */
  readonly serverless: boolean;
}

/** SHA-256 (and HMAC-SHA-256 when given a secret) over node:crypto, for the SigV4 signer. */
class NodeSha256 implements Checksum {
  private hash: Hash | Hmac;

  public constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }

  public update(data: Uint8Array): void {
    this.hash.update(toBuffer(data));
  }

  public digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }

  public reset(): void {
    this.hash = this.fresh();
  }

  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(this.secret));
  }
}

function toBuffer(data: SourceData): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

/** RFC 3986 escaping, as SigV4 canonicalizes the query. */
function escape(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * A token for `target`: the presigned `GET http://<cacheName>/?Action=connect&User=<userId>`
 * (service `elasticache`, 900 s) without its scheme.
 */
export async function elastiCacheIamToken(
  target: IamTokenTarget,
  credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider,
  signingDate: Date = new Date(),
): Promise<string> {
  // Loaded when the first token is signed, not with the module: a function that connects without
  // IAM (REDIS_URL, CACHE_AUTH=none) and builds no SDK client then never loads the signer, which
  // was 6 % of the cache invalidator's cold start over an empty bundle (instructions counted).
  const { SignatureV4 } = await import('@smithy/signature-v4');
  const signer = new SignatureV4({
    service: 'elasticache',
    region: target.region,
    credentials,
    sha256: NodeSha256,
  });
  const query: Record<string, string> = { Action: 'connect', User: target.userId };
  if (target.serverless) query.ResourceType = 'ServerlessCache';
  const request: HttpRequest = {
    method: 'GET',
    protocol: 'http:',
    hostname: target.cacheName,
    path: '/',
    query,
    headers: { host: target.cacheName },
  };
  const signed = await signer.presign(request, { expiresIn: IAM_TOKEN_EXPIRY_SECONDS, signingDate });
  const signedQuery = signed.query ?? {};
  const pairs: string[] = [];
  for (const name of Object.keys(signedQuery).sort()) {
    const value = signedQuery[name];
    const values = value === null || value === undefined ? [] : Array.isArray(value) ? value : [value];
    for (const v of values) pairs.push(`${escape(name)}=${escape(v)}`);
  }
  return `${target.cacheName}/?${pairs.join('&')}`;
}

/**
 * The function's own credentials as Lambda gives them (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN, AWS_CREDENTIAL_EXPIRATION), read when a token is signed. The SDK's fromEnv
 * reads the same variables, but importing it keeps @aws-sdk/core's endpoint rules (about 19 KB,
 * a module declared side-effectful) in every cache-using function's bundle, parsed at each cold
 * start for nothing: signing a token resolves no endpoint.
 * @throws Error (rejects) when the key or the secret is not set
 */
export function environmentCredentials(env: NodeJS.ProcessEnv = process.env): AwsCredentialIdentityProvider {
  /** A variable's value, or undefined when it is unset or empty. */
  const set = (name: string): string | undefined => (env[name] === '' ? undefined : env[name]);
  return () => {
    const accessKeyId = set('AWS_ACCESS_KEY_ID');
    const secretAccessKey = set('AWS_SECRET_ACCESS_KEY');
    if (accessKeyId === undefined || secretAccessKey === undefined)
      return Promise.reject(
        new Error(
          'no credentials in the environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set',
        ),
      );
    const sessionToken = set('AWS_SESSION_TOKEN');
    const expiration = set('AWS_CREDENTIAL_EXPIRATION');
    return Promise.resolve({
      accessKeyId,
      secretAccessKey,
      ...(sessionToken === undefined ? {} : { sessionToken }),
      ...(expiration === undefined ? {} : { expiration: new Date(expiration) }),
    });
  };
}

/** Holds the current token and replaces it once it is IAM_TOKEN_REFRESH_SECONDS old. */
export class IamTokenSource {
  private current: { readonly token: string; readonly issuedAtMs: number } | undefined;
  private pending: Promise<string> | undefined;

  public constructor(
    private readonly target: IamTokenTarget,
    private readonly credentials: AwsCredentialIdentityProvider,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Whether the held token is missing or due for replacement. */
  public isStale(): boolean {
    const current = this.current;
    return (
      current === undefined || this.clock().getTime() - current.issuedAtMs >= IAM_TOKEN_REFRESH_SECONDS * 1000
    );
  }

  /** A token valid for at least the next five minutes; concurrent callers share one signing. */
  public async token(): Promise<string> {
    if (!this.isStale() && this.current !== undefined) return this.current.token;
    this.pending ??= this.issue().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async issue(): Promise<string> {
    const now = this.clock();
    const token = await elastiCacheIamToken(this.target, await this.credentials(), now);
    this.current = { token, issuedAtMs: now.getTime() };
    return token;
  }
}
