/**
 * The local Lambda control plane: event source mappings' Enabled state, and Invoke. On AWS the
 * flag reconciler and `tenang pause` flip a mapping's Enabled and the Lambda service polls
 * accordingly. In moto an enabled mapping would consume its queue by itself, so mappings stay
 * disabled there, and this small proxy in front of moto keeps each mapping's Enabled state
 * instead: Get/Update/List of event source mappings answer with that state; every other Lambda
 * call goes to moto unchanged, except Invoke: moto cannot run a function (it would need Docker),
 * so when an `invoke` hook is given the platform's function hosts serve it here; and
 * GetAccountSettings, which moto 5.2.1 does not implement (an HTML 404), answered from a quota of
 * the platform's and the reserved concurrency moto keeps, so `tenang preflight` checks the
 * account's concurrency here as on AWS. Functions and the CLI reach it through
 * AWS_ENDPOINT_URL_LAMBDA; the local pollers read it.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InvokeResult } from './function-host';

const ESM_PATH = /^\/2015-03-31\/event-source-mappings\/?([0-9a-fA-F-]{36})?\/?(\?.*)?$/;
const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/?]+)\/invocations\/?(\?.*)?$/;
/** The API reference writes it with a trailing slash, the SDK sends it without. */
const ACCOUNT_SETTINGS_PATH = /^\/2016-08-19\/account-settings\/?(\?.*)?$/;

/**
 * Lambda's default "Concurrent executions" quota per account and Region: 1,000 ("Lambda quotas",
 * docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html; new accounts start lower
 * until AWS raises it with their usage).
 */
export const DEFAULT_ACCOUNT_CONCURRENCY = 1000;

/**
 * AccountLimit's storage figures as AWS answers them for the default quotas ("Lambda quotas":
 * 75 GB of code storage, 50 MB zipped deployment package uploaded directly, 250 MB unzipped).
 */
const CODE_LIMITS = {
  TotalCodeSize: 75 * 1024 ** 3,
  CodeSizeUnzipped: 250 * 1024 ** 2,
  CodeSizeZipped: 50 * 1024 ** 2,
} as const;

/** Runs a function for the Invoke API; undefined when no such function is deployed. */
export type ControlInvoke = (functionName: string, payload: unknown) => Promise<InvokeResult | undefined>;

/**
 * The function name of an Invoke's FunctionName: a name, `name:qualifier`, a partial ARN
 * (`123456789012:function:name`) or a full ARN, each with an optional qualifier.
 */
export function functionNameOf(reference: string): string {
  const parts = reference.split(':');
  const at = parts.indexOf('function');
  return (at >= 0 ? parts[at + 1] : parts[0]) ?? reference;
}

/** A running control plane. */
export interface LambdaControl {
  /** Endpoint for AWS_ENDPOINT_URL_LAMBDA. */
  readonly url: string;
  /** A mapping's Enabled state as AWS would have it. */
  isEnabled(uuid: string): boolean;
  /** Sets it directly (the platform's own use). */
  setEnabled(uuid: string, enabled: boolean): void;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

/** Starts the proxy in front of moto (`upstream`, e.g. http://localhost:5055). */
export async function startLambdaControl(opts: {
  readonly upstream: string;
  /** Enabled state of a mapping nobody has set yet (AWS creates them enabled). @default true */
  readonly initiallyEnabled?: boolean;
  /** Serves Invoke (RequestResponse). @default - Invoke goes to moto, which cannot run functions */
  readonly invoke?: ControlInvoke;
  /**
   * Whether a mapping's pollers are still delivering work: a disabled mapping reports Disabling
   * until they are done, then Disabled, as the Lambda service does. @default never busy
   */
  readonly busy?: (uuid: string) => boolean;
  /**
   * GetAccountSettings' AccountLimit.ConcurrentExecutions (the account's quota); its
   * UnreservedConcurrentExecutions is that minus the reserved concurrency of every function
   * moto holds. @default DEFAULT_ACCOUNT_CONCURRENCY
   */
  readonly accountConcurrency?: number;
}): Promise<LambdaControl> {
  const accountConcurrency = opts.accountConcurrency ?? DEFAULT_ACCOUNT_CONCURRENCY;
  if (!Number.isInteger(accountConcurrency) || accountConcurrency < 1)
    throw new RangeError(
      `accountConcurrency must be a whole number of at least 1, got ${accountConcurrency}`,
    );
  const upstream = new URL(opts.upstream);
  const enabled = new Map<string, boolean>();
  const stateOf = (uuid: string): boolean => enabled.get(uuid) ?? opts.initiallyEnabled ?? true;
  const patch = (esm: Json): Json => {
    const uuid = esm.UUID;
    if (typeof uuid !== 'string') return esm;
    if (stateOf(uuid)) return { ...esm, State: 'Enabled' };
    return { ...esm, State: opts.busy?.(uuid) === true ? 'Disabling' : 'Disabled' };
  };

  const forward = (
    req: http.IncomingMessage,
    body: Buffer,
    path = req.url ?? '/',
    method = req.method ?? 'GET',
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const headers = { ...req.headers, host: upstream.host, 'content-length': String(body.length) };
      const out = http.request(
        { hostname: upstream.hostname, port: upstream.port, path, method, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', reject);
        },
      );
      out.on('error', reject);
      out.end(body);
    });

  const reply = (res: http.ServerResponse, status: number, json: unknown): void => {
    const text = JSON.stringify(json);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  /** AWS's error answer: the error code in x-amzn-ErrorType, where the SDK reads it. */
  const awsError = (res: http.ServerResponse, status: number, code: string, message: string): void => {
    const text = JSON.stringify({ Type: 'User', message });
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-amzn-errortype': code,
    });
    res.end(text);
  };

  /** Invoke as AWS answers it: a function error is still 200, flagged by X-Amz-Function-Error. */
  const serveInvoke = async (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    invoke: ControlInvoke,
    reference: string,
    body: Buffer,
  ): Promise<void> => {
    if (req.method !== 'POST') return awsError(res, 405, 'MethodNotAllowedException', 'Invoke is a POST');
    const type = String(req.headers['x-amz-invocation-type'] ?? 'RequestResponse');
    if (type !== 'RequestResponse') {
      return awsError(
        res,
        400,
        'InvalidParameterValueException',
        `the local control plane serves RequestResponse invocations only, not ${type}`,
      );
    }
    let payload: unknown = {};
    if (body.length > 0) {
      try {
        payload = JSON.parse(body.toString()) as unknown;
      } catch {
        return awsError(res, 400, 'InvalidRequestContentException', 'Could not parse request body into json');
      }
    }
    const name = functionNameOf(reference);
    const result = await invoke(name, payload);
    if (result === undefined)
      return awsError(res, 404, 'ResourceNotFoundException', `Function not found: ${reference}`);
    const failed = result.status !== 'ok';
    const text = JSON.stringify(
      failed
        ? { errorType: result.errorType, errorMessage: result.errorMessage, trace: [] }
        : (result.result ?? null),
    );
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-amz-executed-version': '$LATEST',
      ...(failed ? { 'x-amz-function-error': 'Unhandled' } : {}),
    });
    res.end(text);
  };

  /**
   * GetAccountSettings from moto's own state: its functions (ListFunctions, every page) and each
   * one's reserved concurrency (GetFunctionConcurrency), read per request so a reservation made
   * or removed since counts, as on AWS. The caller's headers go along, so moto answers for the
   * caller's account and Region. Code size is the functions' $LATEST only (AWS counts every
   * version and layer too).
   */
  const serveAccountSettings = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const functions: Json[] = [];
    let marker: string | undefined;
    do {
      const page = await forward(
        req,
        Buffer.alloc(0),
        `/2015-03-31/functions/${marker === undefined ? '' : `?Marker=${encodeURIComponent(marker)}`}`,
        'GET',
      );
      if (page.status >= 300) {
        res.writeHead(page.status, page.headers);
        res.end(page.body);
        return;
      }
      const json = JSON.parse(page.body.toString()) as Json;
      functions.push(...((json.Functions as Json[] | undefined) ?? []));
      marker = typeof json.NextMarker === 'string' && json.NextMarker !== '' ? json.NextMarker : undefined;
    } while (marker !== undefined);
    const reserved = await Promise.all(
      functions.map(async (fn) => {
        const name = String(fn.FunctionName);
        const r = await forward(
          req,
          Buffer.alloc(0),
          `/2019-09-30/functions/${encodeURIComponent(name)}/concurrency`,
          'GET',
        );
        // Deleted since the listing: it reserves nothing any more.
        if (r.status === 404) return 0;
        if (r.status >= 300)
          throw new Error(`GetFunctionConcurrency of ${name} answered ${r.status}: ${r.body.toString()}`);
        const value = (JSON.parse(r.body.toString()) as Json).ReservedConcurrentExecutions;
        // moto keeps what PutFunctionConcurrency was given, a number or its string.
        const n = Number(value ?? 0);
        return Number.isFinite(n) ? n : 0;
      }),
    );
    const totalReserved = reserved.reduce((a, b) => a + b, 0);
    return reply(res, 200, {
      AccountLimit: {
        ...CODE_LIMITS,
        ConcurrentExecutions: accountConcurrency,
        // "The maximum number of simultaneous function executions, minus the capacity that's
        // reserved for individual functions with PutFunctionConcurrency" (AccountLimit; minimum 0).
        UnreservedConcurrentExecutions: Math.max(0, accountConcurrency - totalReserved),
      },
      AccountUsage: {
        TotalCodeSize: functions.reduce(
          (a, fn) => a + (typeof fn.CodeSize === 'number' ? fn.CodeSize : 0),
          0,
        ),
        FunctionCount: functions.length,
      },
    });
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async (): Promise<void> => {
        const body = Buffer.concat(chunks);
        if (req.method === 'GET' && ACCOUNT_SETTINGS_PATH.test(req.url ?? ''))
          return serveAccountSettings(req, res);
        const invocation = INVOKE_PATH.exec(req.url ?? '');
        if (invocation !== null && opts.invoke !== undefined) {
          return serveInvoke(req, res, opts.invoke, decodeURIComponent(invocation[1] ?? ''), body);
        }
        const match = ESM_PATH.exec(req.url ?? '');
        if (match === null) {
          const r = await forward(req, body);
          res.writeHead(r.status, r.headers);
          res.end(r.body);
          return;
        }
        const uuid = match[1];
        if (req.method === 'PUT' && uuid !== undefined) {
          const update = body.length > 0 ? (JSON.parse(body.toString()) as Json) : {};
          if (typeof update.Enabled === 'boolean') enabled.set(uuid, update.Enabled);
          const rest: Json = { ...update };
          delete rest.Enabled;
          const r =
            Object.keys(rest).length > 0
              ? await forward(req, Buffer.from(JSON.stringify(rest)))
              : await forward(req, Buffer.alloc(0), req.url, 'GET');
          if (r.status >= 300) {
            res.writeHead(r.status, r.headers);
            res.end(r.body);
            return;
          }
          return reply(res, 202, patch(JSON.parse(r.body.toString()) as Json));
        }
        const r = await forward(req, body);
        if (r.status >= 300 || r.body.length === 0) {
          res.writeHead(r.status, r.headers);
          res.end(r.body);
          return;
        }
        const json = JSON.parse(r.body.toString()) as Json;
        if (Array.isArray(json.EventSourceMappings)) {
          return reply(res, r.status, {
            ...json,
            EventSourceMappings: (json.EventSourceMappings as Json[]).map(patch),
          });
        }
        return reply(res, r.status, patch(json));
      })().catch((error: unknown) => reply(res, 502, { message: `lambda control: ${String(error)}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}`,
    isEnabled: stateOf,
    setEnabled: (uuid, value) => enabled.set(uuid, value),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
