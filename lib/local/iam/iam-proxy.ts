/**
 * The IAM proxy: an HTTP endpoint in front of moto (and of the local Lambda control plane) that
 * authorizes what moto never checks. Every request signed with credentials the platform handed
 * to a deployed function, to the Lambda service acting for it, or to CloudWatch is mapped to the
 * IAM actions AWS checks (lib/local/iam/request-actions.ts) and evaluated against the deployed
 * stack's policies (lib/local/iam/authorizer.ts). A denied request gets AWS's own AccessDenied
 * answer for that service (so the SDK raises the same error class it raises on AWS) and one
 * log line `[iam] denied <role> <action> <resource>`; an allowed one goes upstream unchanged.
 * Requests signed with other credentials (the CLI, tests, the provisioner) pass unevaluated.
 *
 * Context keys: the local endpoint is plain HTTP, but it stands for the HTTPS endpoint every SDK
 * client uses on AWS, so `aws:SecureTransport` is true; a service principal's
 * `aws:SourceArn`/`aws:SourceAccount` come from the platform's own header (stripped before the
 * request goes on), which only the platform's service clients set.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { IamAuthorizer } from './authorizer';
import {
  accessDeniedResponse,
  apiRequestOf,
  RequestParseError,
  signerOf,
  type ApiRequest,
  type WireRequest,
} from './request-actions';

/** Header by which the platform's service clients say on whose behalf they act (aws:SourceArn). */
export const SOURCE_ARN_HEADER = 'x-tenang-source-arn';

/** Options of startIamProxy. */
export interface IamProxyOptions {
  /** moto, e.g. http://localhost:5055 */
  readonly upstream: string;
  /** Where Lambda API requests go (the local control plane). @default upstream */
  readonly lambdaUpstream?: string;
  readonly authorizer: IamAuthorizer;
  /** Receives the `[iam] denied …` lines and problems. */
  readonly log: (line: string) => void;
}

/** A running proxy. */
export interface IamProxy {
  /** Endpoint for AWS_ENDPOINT_URL (and AWS_ENDPOINT_URL_LAMBDA). */
  readonly url: string;
  close(): Promise<void>;
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Starts the proxy on 127.0.0.1 (a free port). */
export async function startIamProxy(opts: IamProxyOptions): Promise<IamProxy> {
  const moto = new URL(opts.upstream);
  const lambda = new URL(opts.lambdaUpstream ?? opts.upstream);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const { authorizer } = opts;
  const ctx = { region: authorizer.policies.region, accountId: authorizer.policies.accountId };

  const forward = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, target: URL): void => {
    const headers: http.OutgoingHttpHeaders = { ...req.headers, host: target.host };
    delete headers[SOURCE_ARN_HEADER];
    headers['content-length'] = String(body.length);
    delete headers['transfer-encoding'];
    const out = http.request(
      { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers, agent },
      (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, upstream.headers);
        upstream.pipe(res);
      },
    );
    out.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`iam proxy: upstream ${target.host}: ${error.message}`);
    });
    out.end(body);
  };

  const deny = (res: http.ServerResponse, api: ApiRequest, message: string): void => {
    const answer = accessDeniedResponse(api, message);
    res.writeHead(answer.status, {
      ...answer.headers,
      'content-length': String(Buffer.byteLength(answer.body)),
    });
    res.end(answer.body);
  };

  const handle = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void => {
    const wire: WireRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body,
    };
    const signer = signerOf(wire);
    const target = signer?.service === 'lambda' ? lambda : moto;
    const caller = authorizer.callerOf(signer?.accessKeyId);
    if (caller === undefined) return forward(req, res, body, target);
    const who = IamAuthorizer.describe(caller);
    let api: ApiRequest;
    try {
      api = apiRequestOf(wire, ctx);
    } catch (error) {
      // Fail closed: a request the platform cannot map could not be shown to be allowed.
      const reason = error instanceof RequestParseError ? error.message : String(error);
      opts.log(
        `[iam] denied ${who} ? ${req.method ?? ''} ${req.url ?? ''} (cannot map the request: ${reason})`,
      );
      const unknown: ApiRequest = { service: 'unknown', operation: 'unknown', checks: [] };
      return deny(
        res,
        unknown,
        `the local platform cannot tell which IAM actions this request needs: ${reason}`,
      );
    }
    const sourceArn = caller.kind === 'service' ? header(req.headers[SOURCE_ARN_HEADER]) : undefined;
    const outcome = authorizer.authorize(caller, api, {
      'aws:SecureTransport': true,
      'aws:RequestedRegion': signer?.region,
      'aws:CurrentTime': new Date().toISOString(),
      'aws:EpochTime': Math.floor(Date.now() / 1000),
      'aws:SourceArn': sourceArn,
      'aws:SourceAccount': sourceArn === undefined ? undefined : authorizer.policies.accountId,
    });
    if (outcome.denied !== undefined) {
      opts.log(`[iam] denied ${who} ${outcome.denied.check.action} ${outcome.denied.check.resource}`);
      return deny(res, api, outcome.denied.message);
    }
    return forward(req, res, body, target);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        handle(req, res, Buffer.concat(chunks));
      } catch (error) {
        opts.log(`[iam] proxy error: ${String(error)}`);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`iam proxy: ${String(error)}`);
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    // "localhost", as moto needs for the template URLs of a deploy (the platform's endpoint spelling).
    url: `http://localhost:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        agent.destroy();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
