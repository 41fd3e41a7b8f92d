import { createHash, createHmac } from 'node:crypto';
import { fromEnv } from '@aws-sdk/credential-provider-env';
import {
  elastiCacheIamToken,
  environmentCredentials,
  IAM_TOKEN_EXPIRY_SECONDS,
  IAM_TOKEN_REFRESH_SECONDS,
  IamTokenSource,
  type IamTokenTarget,
} from '../../../lib/adapters/redis/elasticache-iam';

const TARGET: IamTokenTarget = {
  cacheName: 'tenang-prod',
  userId: 'tenang-prod-app',
  region: 'eu-west-1',
  serverless: true,
};
const CREDENTIALS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session/token+with=chars',
};
const SIGNED_AT = new Date('2030-06-01T12:00:00.000Z');

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

/** SigV4 for a presigned GET, computed independently of the signer under test. */
function expectedSignature(host: string, query: URLSearchParams): string {
  const encode = (s: string): string =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const canonicalQuery = [...query.entries()]
    .filter(([name]) => name !== 'X-Amz-Signature')
    .map(([name, value]) => [encode(name), encode(value)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const emptyHash = createHash('sha256').update('').digest('hex');
  const canonicalRequest = ['GET', '/', canonicalQuery, `host:${host}`, '', 'host', emptyHash].join('\n');
  const date = '20300601';
  const scope = `${date}/eu-west-1/elasticache/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    '20300601T120000Z',
    scope,
    createHash('sha256').update(canonicalRequest).digest('hex'),
  ].join('\n');
  let key: Buffer = hmac(`AWS4${CREDENTIALS.secretAccessKey}`, date);
  for (const part of ['eu-west-1', 'elasticache', 'aws4_request']) key = hmac(key, part);
  return createHmac('sha256', key).update(stringToSign).digest('hex');
}

describe('Function: elastiCacheIamToken', () => {
  it('when signed, it is the presigned connect URL without a scheme, for the user and the serverless cache', async () => {
    // Act
    const token = await elastiCacheIamToken(TARGET, CREDENTIALS, SIGNED_AT);

    // Assess
    expect(token.startsWith('tenang-prod/?')).toBe(true);
    expect(token).not.toMatch(/^https?:/);
    const query = new URLSearchParams(token.slice('tenang-prod/?'.length));
    expect(query.get('Action')).toBe('connect');
    expect(query.get('User')).toBe('tenang-prod-app');
    expect(query.get('ResourceType')).toBe('ServerlessCache');
    expect(query.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(query.get('X-Amz-Credential')).toBe('AKIDEXAMPLE/20300601/eu-west-1/elasticache/aws4_request');
    expect(query.get('X-Amz-Date')).toBe('20300601T120000Z');
    expect(query.get('X-Amz-Expires')).toBe(String(IAM_TOKEN_EXPIRY_SECONDS));
    expect(query.get('X-Amz-SignedHeaders')).toBe('host');
    expect(query.get('X-Amz-Security-Token')).toBe(CREDENTIALS.sessionToken);
  });

  it('when signed, its signature is the SigV4 signature of the connect request for host = cache name', async () => {
    // Act
    const token = await elastiCacheIamToken(TARGET, CREDENTIALS, SIGNED_AT);

    // Assess
    const query = new URLSearchParams(token.slice('tenang-prod/?'.length));
    expect(query.get('X-Amz-Signature')).toBe(expectedSignature('tenang-prod', query));
  });

  it('when the cache is not serverless, the query has no ResourceType', async () => {
    // Act
    const token = await elastiCacheIamToken({ ...TARGET, serverless: false }, CREDENTIALS, SIGNED_AT);

    // Assess
    const query = new URLSearchParams(token.slice('tenang-prod/?'.length));
    expect(query.has('ResourceType')).toBe(false);
    expect(query.get('X-Amz-Signature')).toBe(expectedSignature('tenang-prod', query));
  });

  it('when signed, the secret key never appears in the token', async () => {
    // Act
    const token = await elastiCacheIamToken(TARGET, CREDENTIALS, SIGNED_AT);

    // Assess
    expect(token).not.toContain(CREDENTIALS.secretAccessKey);
    expect(decodeURIComponent(token)).not.toContain(CREDENTIALS.secretAccessKey);
  });
});

describe('Class: IamTokenSource', () => {
  it('when asked again before the refresh age, it returns the same token without signing again', async () => {
    // Prepare
    let now = SIGNED_AT.getTime();
    const credentials = jest.fn(() => Promise.resolve(CREDENTIALS));
    const source = new IamTokenSource(TARGET, credentials, () => new Date(now));
    const first = await source.token();

    // Act
    now += (IAM_TOKEN_REFRESH_SECONDS - 1) * 1000;
    const second = await source.token();

    // Assess
    expect(second).toBe(first);
    expect(credentials).toHaveBeenCalledTimes(1);
    expect(source.isStale()).toBe(false);
  });

  it('when the token reaches the refresh age, well before it expires, a new one is signed', async () => {
    // Prepare
    let now = SIGNED_AT.getTime();
    const source = new IamTokenSource(
      TARGET,
      () => Promise.resolve(CREDENTIALS),
      () => new Date(now),
    );
    const first = await source.token();

    // Act
    now += IAM_TOKEN_REFRESH_SECONDS * 1000;
    const stale = source.isStale();
    const second = await source.token();

    // Assess
    expect(IAM_TOKEN_REFRESH_SECONDS).toBeLessThan(IAM_TOKEN_EXPIRY_SECONDS);
    expect(stale).toBe(true);
    expect(second).not.toBe(first);
    expect(new URLSearchParams(second.split('?')[1]).get('X-Amz-Date')).toBe('20300601T121000Z');
  });

  it('when many callers ask at once, one token is signed for all', async () => {
    // Prepare
    const credentials = jest.fn(() => Promise.resolve(CREDENTIALS));
    const source = new IamTokenSource(TARGET, credentials, () => SIGNED_AT);

    // Act
    const tokens = await Promise.all(Array.from({ length: 10 }, () => source.token()));

    // Assess
    expect(new Set(tokens).size).toBe(1);
    expect(credentials).toHaveBeenCalledTimes(1);
  });
});

describe('Function: environmentCredentials', () => {
  const saved = { ...process.env };

  afterEach(() => {
    process.env = { ...saved };
  });

  it("when the function's credentials are set, it resolves the ones the SDK's fromEnv resolves", async () => {
    // Prepare
    process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
    process.env.AWS_SESSION_TOKEN = CREDENTIALS.sessionToken;
    process.env.AWS_CREDENTIAL_EXPIRATION = '2030-06-01T18:00:00Z';

    // Act
    const credentials = await environmentCredentials()();

    // Assess
    expect(credentials).toEqual({
      ...CREDENTIALS,
      expiration: new Date('2030-06-01T18:00:00Z'),
    });
    expect(await fromEnv()()).toMatchObject(credentials);
  });

  it('when there is no session token, it resolves the key and secret alone', async () => {
    // Act
    const credentials = await environmentCredentials({
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'secret',
    })();

    // Assess
    expect(credentials).toEqual({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' });
  });

  it('when the secret is not set, it rejects naming the variables', async () => {
    // Act
    const resolved = environmentCredentials({
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: '',
    })();

    // Assess
    await expect(resolved).rejects.toThrow(/AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/);
  });
});
