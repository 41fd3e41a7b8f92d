/**
 * The HTTP API, served locally: moto skips API Gateway HTTP APIs, so the platform answers the
 * template's routes itself and invokes the function behind each with the payload-format 2.0
 * event API Gateway would send. IAM authorization is not checked locally (there is no caller
 * identity to check); every other part of the request reaches the function unchanged.
 */
import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { DeployedRoute } from './deployment';
import type { InvokeResult } from './function-host';

/** A running local HTTP API. */
export interface LocalHttpApi {
  readonly url: string;
  close(): Promise<void>;
}

interface CompiledRoute extends DeployedRoute {
  readonly pattern: RegExp;
  readonly params: readonly string[];
}

function compile(route: DeployedRoute): CompiledRoute {
  const params: string[] = [];
  const source = route.path.replace(/\{([^}/]+)\}/g, (_, name: string) => {
    params.push(name);
    return '([^/]+)';
  });
  return { ...route, pattern: new RegExp(`^${source}$`), params };
}

/** Builds the payload-format 2.0 event for a request. */
export function toHttpApiEvent(
  route: { method: string; path: string },
  req: { method: string; path: string; query: string; headers: Record<string, string>; body: string },
  pathParameters: Record<string, string>,
): APIGatewayProxyEventV2 {
  const now = new Date();
  return {
    version: '2.0',
    routeKey: `${route.method} ${route.path}`,
    rawPath: req.path,
    rawQueryString: req.query,
    headers: req.headers,
    queryStringParameters:
      req.query.length > 0 ? Object.fromEntries(new URLSearchParams(req.query).entries()) : undefined,
    pathParameters: Object.keys(pathParameters).length > 0 ? pathParameters : undefined,
    requestContext: {
      accountId: '123456789012',
      apiId: 'local',
      domainName: req.headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method: req.method,
        path: req.path,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: req.headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: `${route.method} ${route.path}`,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    body: req.body.length > 0 ? req.body : undefined,
    isBase64Encoded: false,
  };
}

/** Starts the API on 127.0.0.1. */
export async function startLocalHttpApi(
  routes: readonly DeployedRoute[],
  invoke: (functionName: string, event: APIGatewayProxyEventV2) => Promise<InvokeResult>,
  port = 0,
): Promise<LocalHttpApi> {
  const compiled = routes.map(compile);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async (): Promise<void> => {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const method = req.method ?? 'GET';
        const route = compiled.find((r) => r.method === method && r.pattern.test(url.pathname));
        if (route === undefined) {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ message: 'Not Found' }));
          return;
        }
        const match = route.pattern.exec(url.pathname) ?? [];
        const pathParameters = Object.fromEntries(
          route.params.map((p, i) => [p, decodeURIComponent(match[i + 1] ?? '')]),
        );
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [
            k.toLowerCase(),
            Array.isArray(v) ? v.join(',') : (v ?? ''),
          ]),
        );
        const event = toHttpApiEvent(
          route,
          {
            method,
            path: url.pathname,
            query: url.search.replace(/^\?/, ''),
            headers,
            body: Buffer.concat(chunks).toString(),
          },
          pathParameters,
        );
        const result = await invoke(route.functionName, event);
        if (result.status !== 'ok') {
          // API Gateway answers 500 when the integration fails, and 503 when it times out.
          res.writeHead(result.status === 'timeout' ? 503 : 500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ message: 'Internal Server Error' }));
          return;
        }
        const out = (result.result ?? {}) as APIGatewayProxyStructuredResultV2;
        res.writeHead(out.statusCode ?? 200, {
          'content-type': 'application/json',
          ...(out.headers as Record<string, string>),
        });
        res.end(out.body ?? '');
      })().catch((error: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: String(error) }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
