/** API Gateway HTTP API (payload format 2.0) events, shaped as API Gateway delivers them. */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

/** Options of httpApiEvent. */
export interface HttpApiEventOptions {
  /** Raw body; sent base64-encoded when `base64` is set. */
  readonly body?: string;
  /** Header names as the client wrote them (API Gateway lowercases them; so does this). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly base64?: boolean;
  /** The route key API Gateway matched. @default '$default' */
  readonly routeKey?: string;
  readonly pathParameters?: Readonly<Record<string, string>>;
  /** @default 'req-1' */
  readonly requestId?: string;
}

/** An HTTP API event for `method path`. */
export function httpApiEvent(
  method: string,
  path: string,
  opts: HttpApiEventOptions = {},
): APIGatewayProxyEventV2 {
  const now = Date.now();
  const headers = Object.fromEntries(
    Object.entries({ 'content-type': 'application/json', ...opts.headers }).map(([k, v]) => [
      k.toLowerCase(),
      v,
    ]),
  );
  return {
    version: '2.0',
    routeKey: opts.routeKey ?? '$default',
    rawPath: path,
    rawQueryString: '',
    headers,
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'jest' },
      requestId: opts.requestId ?? 'req-1',
      routeKey: opts.routeKey ?? '$default',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
    },
    ...(opts.pathParameters === undefined ? {} : { pathParameters: { ...opts.pathParameters } }),
    ...(opts.body === undefined
      ? {}
      : { body: opts.base64 === true ? Buffer.from(opts.body).toString('base64') : opts.body }),
    isBase64Encoded: opts.base64 === true,
  };
}

/** The JSON body of a response. */
export function responseJson(response: APIGatewayProxyStructuredResultV2): Record<string, unknown> {
  return JSON.parse(response.body ?? '{}') as Record<string, unknown>;
}
