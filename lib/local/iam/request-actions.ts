/**
 * What IAM checks an AWS API request needs, and how AWS answers when one fails.
 *
 * The local platform's authorizing proxy sits in front of moto. For every request it asks:
 * who signed it ({@link signerOf}), which service and operation it is and which IAM
 * authorization checks AWS performs for it ({@link apiRequestOf}), and, on a denial, the bytes
 * AWS would send so the AWS SDK for JavaScript v3 raises the same error ({@link accessDeniedResponse}).
 *
 * Sources (the Service Authorization Reference, "Actions, resources, and condition keys for …",
 * gives each action's resource types; an action with none is authorized on `*`):
 * - DynamoDB: table ARN `arn:aws:dynamodb:R:A:table/T`, index `…/table/T/index/I`, stream
 *   `…/table/T/stream/L`. ListTables, ListStreams, DescribeLimits, DescribeEndpoints, List* have no
 *   resource type. "TransactWriteItems IAM permissions": a transaction is authorized item by item,
 *   Put as dynamodb:PutItem, Update as UpdateItem, Delete as DeleteItem, ConditionCheck as
 *   ConditionCheckItem; TransactGetItems as GetItem per item. PartiQL statements are authorized as
 *   dynamodb:PartiQL{Select,Insert,Update,Delete} on the table (Select: or its index).
 * - DynamoDB Streams: DescribeStream, GetShardIterator, GetRecords on the stream. GetRecords names
 *   no stream, only a shard iterator; AWS's and moto's iterators both start with the stream ARN
 *   followed by `|` (API reference example `arn:aws:dynamodb:…:table/Forum/stream/2015-05-20T20:51:10.252|1|AAAA…`,
 *   moto `dynamodbstreams/models.py` `ShardIterator.arn`), which is what is read here.
 * - SQS ("Amazon SQS API permissions: Actions and resource reference"): queue ARN
 *   `arn:aws:sqs:R:A:name`; "you cannot set permissions explicitly for SendMessageBatch,
 *   DeleteMessageBatch, or ChangeMessageVisibilityBatch", they are authorized as SendMessage,
 *   DeleteMessage, ChangeMessageVisibility. ListQueues has no resource type.
 * - SSM: parameter ARN `arn:aws:ssm:R:A:parameter/${ParameterNameWithoutLeadingSlash}` (so both
 *   `x` and `/x` are `parameter/x`); GetParameters is authorized per requested name and
 *   GetParametersByPath against the requested path, not the parameters it returns ("How Parameter
 *   Store authorizes parameter retrieval"). DescribeParameters has no resource type.
 * - Lambda ("Fine-tuning the Resources and Conditions sections of policies"): "Lambda makes
 *   authorization decisions by comparing the resource element in the IAM policy with both the
 *   FunctionName and Qualifier passed in API calls … if your policy references the unqualified ARN,
 *   Lambda accepts requests that reference the unqualified ARN but denies requests that reference a
 *   qualified ARN". So every FunctionName form (name, `name:qualifier`, `account:function:name`, a
 *   full ARN, plus the `Qualifier` query parameter) is normalised to the function ARN and a
 *   qualifier is kept, not stripped: Invoke of `f:live` is checked on `…:function:f:live`.
 *   Event source mappings: `arn:aws:lambda:R:A:event-source-mapping:UUID` (Get/Update/Delete);
 *   ListEventSourceMappings, CreateEventSourceMapping and GetAccountSettings have no resource type.
 * - SNS: topic ARN `arn:aws:sns:R:A:name`; PublishBatch is sns:Publish. Publish to a TargetArn
 *   (a platform endpoint) is checked on that ARN, to a PhoneNumber on `*`.
 * - KMS: key ARN `arn:aws:kms:R:A:key/id`, alias ARN `…:alias/name`. AWS authorizes a
 *   cryptographic operation named by alias against the key the alias points to; this module cannot
 *   resolve aliases, so such a request is checked on the alias ARN (a policy naming the key will
 *   not match it). Decrypt without KeyId names its key only inside the ciphertext blob and is
 *   refused with a RequestParseError.
 * - CloudWatch: PutMetricData, GetMetricStatistics, GetMetricData, ListMetrics,
 *   DescribeAlarmsForMetric … have no resource type; alarm actions (DescribeAlarms,
 *   DescribeAlarmHistory, SetAlarmState, PutMetricAlarm, DeleteAlarms, Enable/DisableAlarmActions)
 *   take `arn:aws:cloudwatch:R:A:alarm:name`. DescribeAlarms (and DescribeAlarmHistory) without
 *   alarm names is checked on `arn:aws:cloudwatch:R:A:alarm:*`, an approximation: the reference
 *   gives the resource type but not which ARN a listing of every alarm is evaluated against.
 * - STS GetCallerIdentity: no checks ("No permissions are required to perform this operation").
 *   logs, X-Ray, EventBridge, CloudFormation, IAM, other STS operations: only the operations the
 *   reference lists without a resource type are mapped (on `*`); any other throws.
 */
import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';

/** One HTTP request as the proxy received it. */
export interface WireRequest {
  readonly method: string;
  /** With query string. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

/** Who signed a request, from its SigV4 credential scope. */
export interface Signer {
  readonly accessKeyId: string;
  /** Credential scope, e.g. 'sqs' (CloudWatch signs as 'monitoring', DynamoDB Streams as 'dynamodb'). */
  readonly service: string;
  readonly region: string;
}

/** One authorization check AWS performs for a request. */
export interface AuthorizationCheck {
  /** e.g. 'dynamodb:PutItem'. */
  readonly action: string;
  /** ARN, or '*' for an action without a resource type. */
  readonly resource: string;
}

export type ApiService =
  | 'dynamodb'
  | 'dynamodb-streams'
  | 'sqs'
  | 'ssm'
  | 'lambda'
  | 'sns'
  | 'kms'
  | 'cloudwatch'
  | 'sts'
  | 'logs'
  | 'xray'
  | 'events'
  | 'cloudformation'
  | 's3'
  | 'iam'
  | 'unknown';

/** The wire protocol a request used, where a service speaks more than one (SQS and CloudWatch: JSON or query). */
export type ApiProtocol = 'json' | 'query' | 'rest-json' | 'rest-xml';

/** A request as IAM sees it. */
export interface ApiRequest {
  readonly service: ApiService;
  /** The API operation ('Invoke'; its action may differ: 'lambda:InvokeFunction'). */
  readonly operation: string;
  /**
   * Every check AWS performs, in order; the request is allowed when all pass. Empty only for an
   * operation AWS always allows (STS GetCallerIdentity). {@link apiRequestOf} never returns service
   * 'unknown' (it throws instead, so a proxy fails closed); the value is there for callers that
   * build the ApiRequest of a request they could not map, to answer it with {@link accessDeniedResponse}.
   */
  readonly checks: readonly AuthorizationCheck[];
  /** How the request was encoded; the denial is answered the same way. @default the service's SDK protocol */
  readonly protocol?: ApiProtocol;
}

/** Where ARNs of resources a request names without region/account live. */
export interface ArnContext {
  readonly region: string;
  readonly accountId: string;
}

/** A request of a known service that cannot be mapped to its checks; the message says why. */
export class RequestParseError extends Error {
  override readonly name: string = 'RequestParseError';
}

/** An HTTP answer. */
export interface WireResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

// ---------------------------------------------------------------------------------------------
// Signer

function header(req: WireRequest, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(req.headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function splitPath(path: string): { pathname: string; query: URLSearchParams } {
  const at = path.indexOf('?');
  return at < 0
    ? { pathname: path, query: new URLSearchParams() }
    : { pathname: path.slice(0, at), query: new URLSearchParams(path.slice(at + 1)) };
}

function signerFromCredential(credential: string): Signer | undefined {
  // AKID/20261201/us-east-1/sqs/aws4_request
  const parts = credential.trim().split('/');
  if (parts.length !== 5 || parts[4] !== 'aws4_request') return undefined;
  const [accessKeyId, , region, service] = parts;
  if (!accessKeyId || !region || !service) return undefined;
  return { accessKeyId, service, region };
}

/** From `Authorization: AWS4-HMAC-SHA256 Credential=AKID/20261201/us-east-1/sqs/aws4_request, ...` (and the X-Amz-Credential query parameter of presigned URLs). */
export function signerOf(req: WireRequest): Signer | undefined {
  const authorization = header(req, 'authorization');
  if (authorization !== undefined) {
    const match = /^AWS4-HMAC-SHA256\s+(?:.*[\s,])?Credential=([^,\s]+)/.exec(authorization.trim());
    return match?.[1] === undefined ? undefined : signerFromCredential(match[1]);
  }
  const credential = splitPath(req.path).query.get('X-Amz-Credential');
  return credential === null ? undefined : signerFromCredential(credential);
}

// ---------------------------------------------------------------------------------------------
// Request bodies

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function bodyText(req: WireRequest, what: string): string {
  const encoding = header(req, 'content-encoding') ?? '';
  if (!/\bgzip\b/i.test(encoding)) return req.body.toString('utf8');
  try {
    return gunzipSync(req.body).toString('utf8');
  } catch (e) {
    throw new RequestParseError(`${what}: the body says Content-Encoding gzip but does not gunzip`, {
      cause: e,
    });
  }
}

function jsonBody(req: WireRequest, what: string): Json {
  const text = bodyText(req, what);
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new RequestParseError(`${what}: the body is not JSON (${JSON.stringify(text.slice(0, 60))})`, {
      cause: e,
    });
  }
  if (!isObject(parsed)) throw new RequestParseError(`${what}: the JSON body is not an object`);
  return parsed;
}

/** A request's parameters, whether a JSON body or query (form) parameters. */
interface Fields {
  /** The operation, for messages ('SQS SendMessage'). */
  readonly what: string;
  str(name: string): string | undefined;
  /** A list of strings: a JSON array, or query `Name.member.N`. */
  list(name: string): string[];
}

function jsonFields(body: Json, what: string): Fields {
  return {
    what,
    str: (name) => {
      const value = body[name];
      return typeof value === 'string' ? value : undefined;
    },
    list: (name) => {
      const value = body[name];
      return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
    },
  };
}

function queryFields(params: URLSearchParams, what: string): Fields {
  return {
    what,
    str: (name) => params.get(name) ?? undefined,
    list: (name) => {
      const out: string[] = [];
      for (let i = 1; ; i++) {
        const value = params.get(`${name}.member.${i}`) ?? params.get(`${name}.${i}`);
        if (value === null) return out;
        out.push(value);
      }
    },
  };
}

function required(fields: Fields, name: string): string {
  const value = fields.str(name);
  if (value === undefined || value === '')
    throw new RequestParseError(`${fields.what}: the request has no ${name}`);
  return value;
}

function requiredList(fields: Fields, name: string): string[] {
  const values = fields.list(name);
  if (values.length === 0) throw new RequestParseError(`${fields.what}: the request has no ${name}`);
  return values;
}

function isFormEncoded(req: WireRequest): boolean {
  return /application\/x-www-form-urlencoded/i.test(header(req, 'content-type') ?? '');
}

/** Query-protocol parameters: the URL's query string, then a form body. */
function queryParams(req: WireRequest, what: string): URLSearchParams {
  const params = new URLSearchParams(splitPath(req.path).query);
  if (isFormEncoded(req) || (req.body.length > 0 && header(req, 'content-type') === undefined)) {
    for (const [key, value] of new URLSearchParams(bodyText(req, what))) params.append(key, value);
  }
  return params;
}

const check = (action: string, resource: string): AuthorizationCheck => ({ action, resource });
const anyResource = (action: string): AuthorizationCheck[] => [check(action, '*')];
const words = (text: string): ReadonlySet<string> => new Set(text.trim().split(/\s+/));

// ---------------------------------------------------------------------------------------------
// DynamoDB

/** Operations whose only resource is the table named by TableName (its ARN is accepted too). */
const DYNAMODB_TABLE_OPS = words(`
  GetItem PutItem UpdateItem DeleteItem DescribeTable CreateTable DeleteTable UpdateTable
  DescribeTimeToLive UpdateTimeToLive DescribeContinuousBackups UpdateContinuousBackups CreateBackup
  DescribeKinesisStreamingDestination EnableKinesisStreamingDestination DisableKinesisStreamingDestination
  UpdateKinesisStreamingDestination DescribeTableReplicaAutoScaling UpdateTableReplicaAutoScaling`);
/** Operations the reference lists without a resource type. */
const DYNAMODB_NO_RESOURCE_OPS = words(`
  ListTables ListStreams DescribeLimits DescribeEndpoints ListBackups ListContributorInsights ListExports
  ListGlobalTables ListImports`);
/** Operations on the resource whose ARN the request carries. */
const DYNAMODB_ARN_OPS: Readonly<Record<string, string>> = {
  ListTagsOfResource: 'ResourceArn',
  TagResource: 'ResourceArn',
  UntagResource: 'ResourceArn',
  GetResourcePolicy: 'ResourceArn',
  PutResourcePolicy: 'ResourceArn',
  DeleteResourcePolicy: 'ResourceArn',
  DescribeBackup: 'BackupArn',
  DeleteBackup: 'BackupArn',
  DescribeExport: 'ExportArn',
  DescribeImport: 'ImportArn',
};
const TRANSACT_WRITE_ACTIONS: Readonly<Record<string, string>> = {
  Put: 'dynamodb:PutItem',
  Update: 'dynamodb:UpdateItem',
  Delete: 'dynamodb:DeleteItem',
  ConditionCheck: 'dynamodb:ConditionCheckItem',
};

function tableArn(nameOrArn: string, ctx: ArnContext): string {
  return nameOrArn.startsWith('arn:')
    ? nameOrArn
    : `arn:aws:dynamodb:${ctx.region}:${ctx.accountId}:table/${nameOrArn}`;
}

function tableOf(value: unknown, what: string): string {
  const name = isObject(value) ? value['TableName'] : undefined;
  if (typeof name !== 'string' || name === '') throw new RequestParseError(`${what} has no TableName`);
  return name;
}

const PARTIQL_NAME = String.raw`(?:"((?:[^"]|"")+)"|([A-Za-z0-9_-]+))`;
const PARTIQL_TARGET = String.raw`${PARTIQL_NAME}(?:\s*\.\s*${PARTIQL_NAME})?`;
const PARTIQL_FORMS: readonly (readonly [RegExp, string])[] = [
  [new RegExp(String.raw`^\s*SELECT\b[\s\S]*?\bFROM\s+${PARTIQL_TARGET}`, 'i'), 'dynamodb:PartiQLSelect'],
  [new RegExp(String.raw`^\s*INSERT\s+INTO\s+${PARTIQL_TARGET}`, 'i'), 'dynamodb:PartiQLInsert'],
  [new RegExp(String.raw`^\s*UPDATE\s+${PARTIQL_TARGET}`, 'i'), 'dynamodb:PartiQLUpdate'],
  [new RegExp(String.raw`^\s*DELETE\s+FROM\s+${PARTIQL_TARGET}`, 'i'), 'dynamodb:PartiQLDelete'],
];

function partiqlCheck(statement: unknown, what: string, ctx: ArnContext): AuthorizationCheck {
  if (typeof statement !== 'string') throw new RequestParseError(`${what} has no Statement`);
  for (const [pattern, action] of PARTIQL_FORMS) {
    const m = pattern.exec(statement);
    if (m === null) continue;
    const table = (m[1]?.replaceAll('""', '"') ?? m[2])!;
    const index = m[3]?.replaceAll('""', '"') ?? m[4];
    // Only a SELECT reads through an index; `"t"."x"` elsewhere is not a PartiQL form DynamoDB accepts.
    if (index !== undefined && action !== 'dynamodb:PartiQLSelect') break;
    const arn = tableArn(table, ctx);
    return check(action, index === undefined ? arn : `${arn}/index/${index}`);
  }
  throw new RequestParseError(
    `${what}: cannot tell the PartiQL statement's kind (SELECT, INSERT, UPDATE, DELETE) and table from ${JSON.stringify(statement.slice(0, 80))}`,
  );
}

function dynamodbChecks(op: string, body: Json, ctx: ArnContext): AuthorizationCheck[] {
  const what = `DynamoDB ${op}`;
  const action = `dynamodb:${op}`;
  if (DYNAMODB_NO_RESOURCE_OPS.has(op)) return anyResource(action);
  if (DYNAMODB_TABLE_OPS.has(op)) return [check(action, tableArn(tableOf(body, what), ctx))];
  const arnField = DYNAMODB_ARN_OPS[op];
  if (arnField !== undefined) return [check(action, required(jsonFields(body, what), arnField))];
  switch (op) {
    case 'Query':
    case 'Scan':
    case 'DescribeContributorInsights':
    case 'UpdateContributorInsights': {
      const table = tableArn(tableOf(body, what), ctx);
      const index = body['IndexName'];
      return [check(action, typeof index === 'string' ? `${table}/index/${index}` : table)];
    }
    case 'BatchGetItem':
    case 'BatchWriteItem': {
      const items = body['RequestItems'];
      if (!isObject(items) || Object.keys(items).length === 0)
        throw new RequestParseError(`${what}: the request has no RequestItems`);
      return Object.keys(items).map((table) => check(action, tableArn(table, ctx)));
    }
    case 'TransactWriteItems':
    case 'TransactGetItems': {
      const items = body['TransactItems'];
      if (!Array.isArray(items) || items.length === 0)
        throw new RequestParseError(`${what}: the request has no TransactItems`);
      return items.map((item: unknown, i) => {
        const at = `${what} TransactItems[${i}]`;
        if (!isObject(item)) throw new RequestParseError(`${at} is not an object`);
        if (op === 'TransactGetItems')
          return check('dynamodb:GetItem', tableArn(tableOf(item['Get'], `${at}.Get`), ctx));
        const kinds = Object.keys(item).filter((k) => k in TRANSACT_WRITE_ACTIONS);
        const kind = kinds[0];
        if (kinds.length !== 1 || kind === undefined)
          throw new RequestParseError(
            `${at} must hold exactly one of Put, Update, Delete, ConditionCheck (it holds ${Object.keys(item).join(', ') || 'nothing'})`,
          );
        return check(TRANSACT_WRITE_ACTIONS[kind]!, tableArn(tableOf(item[kind], `${at}.${kind}`), ctx));
      });
    }
    case 'ExecuteStatement':
      return [partiqlCheck(body['Statement'], what, ctx)];
    case 'BatchExecuteStatement':
    case 'ExecuteTransaction': {
      const list = body[op === 'ExecuteTransaction' ? 'TransactStatements' : 'Statements'];
      if (!Array.isArray(list) || list.length === 0)
        throw new RequestParseError(`${what}: the request has no statements`);
      return list.map((s: unknown, i) =>
        partiqlCheck(isObject(s) ? s['Statement'] : undefined, `${what}[${i}]`, ctx),
      );
    }
    default:
      throw new RequestParseError(`${what}: no IAM mapping is known for this operation`);
  }
}

function streamsChecks(op: string, body: Json): AuthorizationCheck[] {
  const what = `DynamoDB Streams ${op}`;
  const fields = jsonFields(body, what);
  const action = `dynamodb:${op}`;
  switch (op) {
    case 'ListStreams':
      return anyResource(action);
    case 'DescribeStream':
    case 'GetShardIterator':
      return [check(action, required(fields, 'StreamArn'))];
    case 'GetRecords': {
      const iterator = required(fields, 'ShardIterator');
      const streamArn = iterator.split('|')[0] ?? '';
      if (!/^arn:[^:]+:dynamodb:[^:]*:[^:]*:table\/[^/]+\/stream\/.+/.test(streamArn))
        throw new RequestParseError(`${what}: the ShardIterator does not start with its stream ARN`);
      return [check(action, streamArn)];
    }
    default:
      throw new RequestParseError(`${what}: no IAM mapping is known for this operation`);
  }
}

// ---------------------------------------------------------------------------------------------
// SQS

const SQS_BATCH_ACTIONS: Readonly<Record<string, string>> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};
const SQS_QUEUE_URL_OPS = words(`
  SendMessage SendMessageBatch ReceiveMessage DeleteMessage DeleteMessageBatch ChangeMessageVisibility
  ChangeMessageVisibilityBatch GetQueueAttributes SetQueueAttributes PurgeQueue DeleteQueue AddPermission
  RemovePermission ListDeadLetterSourceQueues ListQueueTags TagQueue UntagQueue`);

/** `http://localhost:5055/123456789012/name` (moto) or `https://sqs.R.amazonaws.com/123456789012/name` → the queue ARN. */
export function queueArnFromUrl(url: string, what: string, ctx: ArnContext): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RequestParseError(`${what}: QueueUrl ${JSON.stringify(url)} is not a URL`);
  }
  const queue = queueArnFromPath(parsed.pathname, parsed.hostname, ctx);
  if (queue === undefined)
    throw new RequestParseError(
      `${what}: QueueUrl ${JSON.stringify(url)} is not …/<12-digit account>/<queue name>`,
    );
  return queue;
}

function queueArnFromPath(pathname: string, hostname: string, ctx: ArnContext): string | undefined {
  const parts = pathname.split('/').filter(Boolean);
  const [account, name] = parts;
  if (parts.length !== 2 || account === undefined || name === undefined || !/^\d{12}$/.test(account))
    return undefined;
  const region =
    /^sqs\.([a-z0-9-]+)\.amazonaws\.com/.exec(hostname)?.[1] ??
    /^([a-z]{2}(?:-[a-z]+)+-\d)\.queue\.amazonaws\.com/.exec(hostname)?.[1] ??
    ctx.region;
  return `arn:aws:sqs:${region}:${account}:${decodeURIComponent(name)}`;
}

function sqsChecks(op: string, fields: Fields, ctx: ArnContext, requestPath: string): AuthorizationCheck[] {
  const action = `sqs:${SQS_BATCH_ACTIONS[op] ?? op}`;
  const byName = (account: string) => `arn:aws:sqs:${ctx.region}:${account}:${required(fields, 'QueueName')}`;
  switch (op) {
    case 'ListQueues':
      return anyResource(action);
    case 'CreateQueue':
      return [check(action, byName(ctx.accountId))];
    case 'GetQueueUrl':
      return [check(action, byName(fields.str('QueueOwnerAWSAccountId') ?? ctx.accountId))];
    case 'ListMessageMoveTasks':
    case 'StartMessageMoveTask':
      return [check(action, required(fields, 'SourceArn'))];
  }
  if (!SQS_QUEUE_URL_OPS.has(op))
    throw new RequestParseError(`${fields.what}: no IAM mapping is known for this operation`);
  const url = fields.str('QueueUrl');
  if (url !== undefined) return [check(action, queueArnFromUrl(url, fields.what, ctx))];
  // The query protocol may also address the queue by posting to its URL.
  const fromPath = queueArnFromPath(splitPath(requestPath).pathname, '', ctx);
  if (fromPath === undefined) throw new RequestParseError(`${fields.what}: the request has no QueueUrl`);
  return [check(action, fromPath)];
}

// ---------------------------------------------------------------------------------------------
// SSM

/** `x`, `/x`, `x:3` (version or label selector) or a parameter ARN → the parameter ARN. */
function parameterArn(name: string, ctx: ArnContext): string {
  const at = name.indexOf(':parameter/');
  if (name.startsWith('arn:') && at >= 0) {
    const rest = name.slice(at + ':parameter/'.length);
    return `${name.slice(0, at)}:parameter/${rest.split(':')[0]}`;
  }
  const bare = name.split(':')[0] ?? name;
  return `arn:aws:ssm:${ctx.region}:${ctx.accountId}:parameter/${bare.replace(/^\//, '')}`;
}

function ssmChecks(op: string, body: Json, ctx: ArnContext): AuthorizationCheck[] {
  const what = `SSM ${op}`;
  const fields = jsonFields(body, what);
  const action = `ssm:${op}`;
  switch (op) {
    case 'DescribeParameters':
      return anyResource(action);
    case 'GetParameter':
    case 'PutParameter':
    case 'DeleteParameter':
    case 'GetParameterHistory':
    case 'LabelParameterVersion':
    case 'UnlabelParameterVersion':
      return [check(action, parameterArn(required(fields, 'Name'), ctx))];
    case 'GetParameters':
    case 'DeleteParameters':
      return requiredList(fields, 'Names').map((name) => check(action, parameterArn(name, ctx)));
    case 'GetParametersByPath':
      return [check(action, parameterArn(required(fields, 'Path'), ctx))];
    default:
      throw new RequestParseError(`${what}: no IAM mapping is known for this operation`);
  }
}

// ---------------------------------------------------------------------------------------------
// Lambda

/** Any FunctionName form, with the Qualifier query parameter, → the (qualified) function ARN Lambda authorizes. */
function functionArn(reference: string, qualifier: string | null, ctx: ArnContext): string {
  const parts = reference.split(':');
  let region = ctx.region;
  let account = ctx.accountId;
  let rest: string[];
  if (parts[0] === 'arn' && parts[5] === 'function') {
    region = parts[3] ?? region;
    account = parts[4] ?? account;
    rest = parts.slice(6);
  } else if (parts[1] === 'function' && /^\d{12}$/.test(parts[0] ?? '')) {
    account = parts[0]!;
    rest = parts.slice(2);
  } else {
    rest = parts;
  }
  const [name, inlineQualifier] = rest;
  if (name === undefined || name === '' || rest.length > 2)
    throw new RequestParseError(`Lambda: ${JSON.stringify(reference)} is not a function name or ARN`);
  const q = inlineQualifier ?? (qualifier === null || qualifier === '' ? undefined : qualifier);
  const partition = parts[0] === 'arn' ? (parts[1] ?? 'aws') : 'aws';
  return `arn:${partition}:lambda:${region}:${account}:function:${name}${q === undefined ? '' : `:${q}`}`;
}

interface LambdaRoute {
  /** The path's API version. @default '2015-03-31' */
  readonly version?: string;
  readonly method: string;
  /** Path segments after the API version; '{fn}' and '{uuid}' are variables. */
  readonly segments: readonly string[];
  readonly operation: string;
  readonly action?: string;
}

const LAMBDA_ROUTES: readonly LambdaRoute[] = [
  {
    method: 'POST',
    segments: ['functions', '{fn}', 'invocations'],
    operation: 'Invoke',
    action: 'InvokeFunction',
  },
  { method: 'GET', segments: ['functions', '{fn}', 'configuration'], operation: 'GetFunctionConfiguration' },
  {
    method: 'PUT',
    segments: ['functions', '{fn}', 'configuration'],
    operation: 'UpdateFunctionConfiguration',
  },
  { method: 'PUT', segments: ['functions', '{fn}', 'code'], operation: 'UpdateFunctionCode' },
  { method: 'GET', segments: ['functions', '{fn}', 'policy'], operation: 'GetPolicy' },
  { method: 'POST', segments: ['functions', '{fn}', 'policy'], operation: 'AddPermission' },
  { method: 'DELETE', segments: ['functions', '{fn}', 'policy', '{id}'], operation: 'RemovePermission' },
  { method: 'GET', segments: ['functions', '{fn}', 'versions'], operation: 'ListVersionsByFunction' },
  { method: 'POST', segments: ['functions', '{fn}', 'versions'], operation: 'PublishVersion' },
  { method: 'GET', segments: ['functions', '{fn}', 'aliases'], operation: 'ListAliases' },
  { method: 'POST', segments: ['functions', '{fn}', 'aliases'], operation: 'CreateAlias' },
  { method: 'GET', segments: ['functions', '{fn}', 'aliases', '{id}'], operation: 'GetAlias' },
  { method: 'PUT', segments: ['functions', '{fn}', 'aliases', '{id}'], operation: 'UpdateAlias' },
  { method: 'DELETE', segments: ['functions', '{fn}', 'aliases', '{id}'], operation: 'DeleteAlias' },
  { method: 'GET', segments: ['functions', '{fn}'], operation: 'GetFunction' },
  { method: 'DELETE', segments: ['functions', '{fn}'], operation: 'DeleteFunction' },
  { method: 'GET', segments: ['functions'], operation: 'ListFunctions' },
  { method: 'GET', segments: ['event-source-mappings'], operation: 'ListEventSourceMappings' },
  { method: 'POST', segments: ['event-source-mappings'], operation: 'CreateEventSourceMapping' },
  { method: 'GET', segments: ['event-source-mappings', '{uuid}'], operation: 'GetEventSourceMapping' },
  { method: 'PUT', segments: ['event-source-mappings', '{uuid}'], operation: 'UpdateEventSourceMapping' },
  { method: 'DELETE', segments: ['event-source-mappings', '{uuid}'], operation: 'DeleteEventSourceMapping' },
  // GET /2016-08-19/account-settings/ (API reference); the Service Authorization Reference lists
  // lambda:GetAccountSettings without a resource type, so it is checked on "*".
  { version: '2016-08-19', method: 'GET', segments: ['account-settings'], operation: 'GetAccountSettings' },
];

function lambdaRequest(req: WireRequest, ctx: ArnContext): ApiRequest {
  const { pathname, query } = splitPath(req.path);
  const method = req.method.toUpperCase();
  let segments: string[];
  try {
    segments = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new RequestParseError(`Lambda: the path ${JSON.stringify(pathname)} is not URL-encoded correctly`);
  }
  const [version, ...rest] = segments;
  for (const route of LAMBDA_ROUTES) {
    if (
      version !== (route.version ?? '2015-03-31') ||
      route.method !== method ||
      route.segments.length !== rest.length
    )
      continue;
    if (!route.segments.every((s, i) => s.startsWith('{') || s === rest[i])) continue;
    const action = `lambda:${route.action ?? route.operation}`;
    const at = (name: string) => rest[route.segments.indexOf(name)]!;
    let resource = '*';
    if (route.segments.includes('{fn}')) resource = functionArn(at('{fn}'), query.get('Qualifier'), ctx);
    else if (route.segments.includes('{uuid}'))
      resource = `arn:aws:lambda:${ctx.region}:${ctx.accountId}:event-source-mapping:${at('{uuid}')}`;
    return {
      service: 'lambda',
      operation: route.operation,
      checks: [check(action, resource)],
      protocol: 'rest-json',
    };
  }
  throw new RequestParseError(`Lambda: no operation is known for ${method} ${pathname}`);
}

// ---------------------------------------------------------------------------------------------
// SNS

/** Operations the reference lists without a resource type. */
const SNS_NO_RESOURCE_OPS = words(`
  CheckIfPhoneNumberIsOptedOut CreatePlatformApplication CreatePlatformEndpoint CreateSMSSandboxPhoneNumber
  DeleteEndpoint DeletePlatformApplication DeleteSMSSandboxPhoneNumber GetEndpointAttributes
  GetPlatformApplicationAttributes GetSMSAttributes GetSMSSandboxAccountStatus GetSubscriptionAttributes
  ListEndpointsByPlatformApplication ListOriginationNumbers ListPhoneNumbersOptedOut ListPlatformApplications
  ListSMSSandboxPhoneNumbers ListSubscriptions ListTopics OptInPhoneNumber SetEndpointAttributes
  SetPlatformApplicationAttributes SetSMSAttributes SetSubscriptionAttributes Unsubscribe
  VerifySMSSandboxPhoneNumber`);
const SNS_TOPIC_OPS = words(`
  AddPermission ConfirmSubscription DeleteTopic GetDataProtectionPolicy GetTopicAttributes ListSubscriptionsByTopic
  PutDataProtectionPolicy RemovePermission SetTopicAttributes Subscribe`);

function snsChecks(op: string, fields: Fields, ctx: ArnContext): AuthorizationCheck[] {
  const action = `sns:${op === 'PublishBatch' ? 'Publish' : op}`;
  if (SNS_NO_RESOURCE_OPS.has(op)) return anyResource(action);
  if (SNS_TOPIC_OPS.has(op) || op === 'PublishBatch') return [check(action, required(fields, 'TopicArn'))];
  switch (op) {
    case 'Publish': {
      const target = fields.str('TopicArn') ?? fields.str('TargetArn');
      if (target !== undefined) return [check(action, target)];
      if (fields.str('PhoneNumber') !== undefined) return anyResource(action);
      throw new RequestParseError(`${fields.what}: the request has no TopicArn, TargetArn or PhoneNumber`);
    }
    case 'CreateTopic':
      return [check(action, `arn:aws:sns:${ctx.region}:${ctx.accountId}:${required(fields, 'Name')}`)];
    case 'TagResource':
    case 'UntagResource':
    case 'ListTagsForResource':
      return [check(action, required(fields, 'ResourceArn'))];
    default:
      throw new RequestParseError(`${fields.what}: no IAM mapping is known for this operation`);
  }
}

// ---------------------------------------------------------------------------------------------
// KMS

const KMS_NO_RESOURCE_OPS = words(`
  ConnectCustomKeyStore CreateCustomKeyStore CreateKey DeleteCustomKeyStore DescribeCustomKeyStores
  DisconnectCustomKeyStore GenerateRandom ListAliases ListKeys ListRetirableGrants UpdateCustomKeyStore`);
/** Operations on the key named by KeyId. */
const KMS_KEY_OPS = words(`
  CancelKeyDeletion CreateGrant Decrypt DeleteImportedKeyMaterial DeriveSharedSecret DescribeKey DisableKey
  DisableKeyRotation EnableKey EnableKeyRotation Encrypt GenerateDataKey GenerateDataKeyPair
  GenerateDataKeyPairWithoutPlaintext GenerateDataKeyWithoutPlaintext GenerateMac GetKeyPolicy
  GetKeyRotationStatus GetParametersForImport GetPublicKey ImportKeyMaterial ListGrants ListKeyPolicies
  ListKeyRotations ListResourceTags PutKeyPolicy ReplicateKey RetireGrant RevokeGrant RotateKeyOnDemand
  ScheduleKeyDeletion Sign TagResource UntagResource UpdateKeyDescription UpdatePrimaryRegion Verify VerifyMac`);

/**
 * A KeyId (key id, key ARN, `alias/name` or alias ARN) → the ARN checked. An alias is NOT resolved
 * to its key (AWS would check the key): the alias ARN is returned, see the module comment.
 */
function kmsArn(keyId: string, ctx: ArnContext): string {
  if (keyId.startsWith('arn:')) return keyId;
  const prefix = `arn:aws:kms:${ctx.region}:${ctx.accountId}`;
  return keyId.startsWith('alias/') ? `${prefix}:${keyId}` : `${prefix}:key/${keyId}`;
}

function kmsChecks(op: string, body: Json, ctx: ArnContext): AuthorizationCheck[] {
  const what = `KMS ${op}`;
  const fields = jsonFields(body, what);
  const action = `kms:${op}`;
  if (KMS_NO_RESOURCE_OPS.has(op)) return anyResource(action);
  if (op === 'Decrypt' && fields.str('KeyId') === undefined)
    throw new RequestParseError(
      `${what}: the request has no KeyId; the key is named only inside the ciphertext blob, which cannot be read here`,
    );
  if (KMS_KEY_OPS.has(op)) return [check(action, kmsArn(required(fields, 'KeyId'), ctx))];
  switch (op) {
    case 'ReEncrypt': {
      const source = fields.str('SourceKeyId');
      if (source === undefined)
        throw new RequestParseError(
          `${what}: the request has no SourceKeyId; the source key is inside the ciphertext blob`,
        );
      return [
        check('kms:ReEncryptFrom', kmsArn(source, ctx)),
        check('kms:ReEncryptTo', kmsArn(required(fields, 'DestinationKeyId'), ctx)),
      ];
    }
    case 'CreateAlias':
    case 'UpdateAlias':
      return [
        check(action, kmsArn(required(fields, 'AliasName'), ctx)),
        check(action, kmsArn(required(fields, 'TargetKeyId'), ctx)),
      ];
    case 'DeleteAlias':
      // The reference also requires the key the alias points to, which cannot be resolved here.
      return [check(action, kmsArn(required(fields, 'AliasName'), ctx))];
    default:
      throw new RequestParseError(`${what}: no IAM mapping is known for this operation`);
  }
}

// ---------------------------------------------------------------------------------------------
// CloudWatch

const CLOUDWATCH_NO_RESOURCE_OPS = words(`
  PutMetricData GetMetricStatistics GetMetricData ListMetrics DescribeAlarmsForMetric DeleteAnomalyDetector
  DescribeAnomalyDetectors PutAnomalyDetector DescribeInsightRules GetMetricWidgetImage ListDashboards
  ListMetricStreams ListManagedInsightRules PutManagedInsightRules`);

function cloudwatchChecks(op: string, fields: Fields, ctx: ArnContext): AuthorizationCheck[] {
  const action = `cloudwatch:${op}`;
  const prefix = `arn:aws:cloudwatch:${ctx.region}:${ctx.accountId}`;
  const alarm = (name: string) => check(action, `${prefix}:alarm:${name}`);
  const each = (list: string, arn: (name: string) => string) =>
    requiredList(fields, list).map((name) => check(action, arn(name)));
  if (CLOUDWATCH_NO_RESOURCE_OPS.has(op)) return anyResource(action);
  switch (op) {
    case 'SetAlarmState':
    case 'PutMetricAlarm':
    case 'PutCompositeAlarm':
      return [alarm(required(fields, 'AlarmName'))];
    case 'DeleteAlarms':
    case 'EnableAlarmActions':
    case 'DisableAlarmActions':
      return requiredList(fields, 'AlarmNames').map(alarm);
    case 'DescribeAlarms': {
      const names = fields.list('AlarmNames');
      return names.length > 0 ? names.map(alarm) : [alarm('*')];
    }
    case 'DescribeAlarmHistory':
      return [alarm(fields.str('AlarmName') ?? '*')];
    case 'GetDashboard':
    case 'PutDashboard':
      return [
        check(action, `arn:aws:cloudwatch::${ctx.accountId}:dashboard/${required(fields, 'DashboardName')}`),
      ];
    case 'DeleteDashboards':
      return each('DashboardNames', (n) => `arn:aws:cloudwatch::${ctx.accountId}:dashboard/${n}`);
    case 'PutInsightRule':
    case 'GetInsightRuleReport':
      return [check(action, `${prefix}:insight-rule/${required(fields, 'RuleName')}`)];
    case 'DeleteInsightRules':
    case 'EnableInsightRules':
    case 'DisableInsightRules':
      return each('RuleNames', (n) => `${prefix}:insight-rule/${n}`);
    case 'PutMetricStream':
    case 'GetMetricStream':
    case 'DeleteMetricStream':
      return [check(action, `${prefix}:metric-stream/${required(fields, 'Name')}`)];
    case 'StartMetricStreams':
    case 'StopMetricStreams':
      return each('Names', (n) => `${prefix}:metric-stream/${n}`);
    case 'TagResource':
    case 'UntagResource':
    case 'ListTagsForResource':
      return [check(action, required(fields, 'ResourceARN'))];
    default:
      throw new RequestParseError(`${fields.what}: no IAM mapping is known for this operation`);
  }
}

// ---------------------------------------------------------------------------------------------
// Services mapped only where the reference gives an operation no resource type

const NO_RESOURCE_OPS: Readonly<Partial<Record<ApiService, ReadonlySet<string>>>> = {
  logs: words(`
    CancelExportTask CancelImportTask CreateImportTask DeleteAccountPolicy DeleteIndexPolicy DeleteIntegration
    DeleteQueryDefinition DeleteResourcePolicy DescribeAccountPolicies DescribeConfigurationTemplates
    DescribeDeliveries DescribeDeliveryDestinations DescribeDeliverySources DescribeDestinations
    DescribeExportTasks DescribeFieldIndexes DescribeImportTaskBatches DescribeImportTasks DescribeIndexPolicies
    DescribeLogGroups DescribeLookupTables DescribeQueries DescribeQueryDefinitions DescribeResourcePolicies
    GetIntegration GetLogFields ListIntegrations ListLogGroups ListLogGroupsForQuery ListScheduledQueries
    PutAccountPolicy PutIndexPolicy PutIntegration PutQueryDefinition PutResourcePolicy StopQuery
    TestMetricFilter TestTransformer`),
  xray: words(`
    BatchGetTraces CancelTraceRetrieval DeleteResourcePolicy GetEncryptionConfig GetGroups GetIndexingRules
    GetInsight GetInsightEvents GetInsightImpactGraph GetInsightSummaries GetRetrievedTracesGraph
    GetSamplingRules GetSamplingStatisticSummaries GetSamplingTargets GetServiceGraph
    GetTimeSeriesServiceStatistics GetTraceGraph GetTraceSegmentDestination GetTraceSummaries
    ListResourcePolicies ListRetrievedTraces PutEncryptionConfig PutResourcePolicy PutTelemetryRecords
    PutTraceSegments StartTraceRetrieval UpdateIndexingRule UpdateTraceSegmentDestination`),
  events: words(`
    ListApiDestinations ListArchives ListConnections ListEndpoints ListEventBuses ListEventSources
    ListPartnerEventSources ListReplays ListRuleNamesByTarget ListRules PutPartnerEvents PutPermission
    RemovePermission TestEventPattern`),
  sts: words('DecodeAuthorizationMessage GetAccessKeyInfo GetSessionToken'),
  cloudformation: words(`
    ActivateOrganizationsAccess ActivateType BatchDescribeTypeConfigurations CreateGeneratedTemplate
    CreateStackSet DeactivateOrganizationsAccess DeactivateType DeleteGeneratedTemplate DeregisterType
    DescribeAccountLimits DescribeGeneratedTemplate DescribeOrganizationsAccess DescribePublisher
    DescribeResourceScan DescribeStackDriftDetectionStatus DescribeType DescribeTypeRegistration
    EstimateTemplateCost GetGeneratedTemplate GetHookResult ListExports ListGeneratedTemplates ListImports
    ListResourceScanRelatedResources ListResourceScanResources ListResourceScans ListStackSets ListStacks
    ListTypeRegistrations ListTypeVersions ListTypes PublishType RegisterPublisher RegisterType
    SetTypeConfiguration SetTypeDefaultVersion StartResourceScan TestType UpdateGeneratedTemplate
    ValidateTemplate`),
  iam: words(`
    CreateAccountAlias DeleteAccountAlias DeleteAccountPasswordPolicy GenerateCredentialReport
    GetAccountAuthorizationDetails GetAccountPasswordPolicy GetAccountSummary GetContextKeysForCustomPolicy
    GetCredentialReport GetOrganizationsAccessReport GetServiceLastAccessedDetails
    GetServiceLastAccessedDetailsWithEntities ListAccountAliases ListGroups ListInstanceProfiles
    ListOpenIDConnectProviders ListPolicies ListRoles ListSAMLProviders ListServerCertificates ListUsers
    ListVirtualMFADevices SetSecurityTokenServicePreferences SimulateCustomPolicy UpdateAccountPasswordPolicy`),
};

/** X-Ray is REST: POST /<path> per operation (botocore's xray model). Only resource-less operations. */
const XRAY_PATHS: Readonly<Record<string, string>> = {
  '/Traces': 'BatchGetTraces',
  '/CancelTraceRetrieval': 'CancelTraceRetrieval',
  '/DeleteResourcePolicy': 'DeleteResourcePolicy',
  '/EncryptionConfig': 'GetEncryptionConfig',
  '/Groups': 'GetGroups',
  '/GetIndexingRules': 'GetIndexingRules',
  '/Insight': 'GetInsight',
  '/InsightEvents': 'GetInsightEvents',
  '/InsightImpactGraph': 'GetInsightImpactGraph',
  '/InsightSummaries': 'GetInsightSummaries',
  '/GetRetrievedTracesGraph': 'GetRetrievedTracesGraph',
  '/GetSamplingRules': 'GetSamplingRules',
  '/SamplingStatisticSummaries': 'GetSamplingStatisticSummaries',
  '/SamplingTargets': 'GetSamplingTargets',
  '/ServiceGraph': 'GetServiceGraph',
  '/TimeSeriesServiceStatistics': 'GetTimeSeriesServiceStatistics',
  '/TraceGraph': 'GetTraceGraph',
  '/GetTraceSegmentDestination': 'GetTraceSegmentDestination',
  '/TraceSummaries': 'GetTraceSummaries',
  '/ListResourcePolicies': 'ListResourcePolicies',
  '/ListRetrievedTraces': 'ListRetrievedTraces',
  '/PutEncryptionConfig': 'PutEncryptionConfig',
  '/PutResourcePolicy': 'PutResourcePolicy',
  '/TelemetryRecords': 'PutTelemetryRecords',
  '/TraceSegments': 'PutTraceSegments',
  '/StartTraceRetrieval': 'StartTraceRetrieval',
  '/UpdateIndexingRule': 'UpdateIndexingRule',
  '/UpdateTraceSegmentDestination': 'UpdateTraceSegmentDestination',
};

const SERVICE_LABEL: Readonly<Record<ApiService, string>> = {
  dynamodb: 'DynamoDB',
  'dynamodb-streams': 'DynamoDB Streams',
  sqs: 'SQS',
  ssm: 'SSM',
  lambda: 'Lambda',
  sns: 'SNS',
  kms: 'KMS',
  cloudwatch: 'CloudWatch',
  sts: 'STS',
  logs: 'CloudWatch Logs',
  xray: 'X-Ray',
  events: 'EventBridge',
  cloudformation: 'CloudFormation',
  s3: 'S3',
  iam: 'IAM',
  unknown: 'unknown service',
};

function resourceLessChecks(service: ApiService, op: string, fields: Fields): AuthorizationCheck[] {
  if (service === 'sts' && op === 'GetCallerIdentity') return [];
  if (service === 'sts' && op === 'AssumeRole') return [check('sts:AssumeRole', required(fields, 'RoleArn'))];
  if (NO_RESOURCE_OPS[service]?.has(op) === true) return anyResource(`${service}:${op}`);
  throw new RequestParseError(
    `${fields.what}: this operation has a resource type in the Service Authorization Reference, and no mapping to its ARN is known here`,
  );
}

// ---------------------------------------------------------------------------------------------
// Dispatch

const TARGET_SERVICES: Readonly<Record<string, ApiService>> = {
  DynamoDB_20120810: 'dynamodb',
  DynamoDBStreams_20120810: 'dynamodb-streams',
  AmazonSQS: 'sqs',
  AmazonSSM: 'ssm',
  TrentService: 'kms',
  GraniteServiceVersion20100801: 'cloudwatch',
  Logs_20140328: 'logs',
  AWSEvents: 'events',
};
const SCOPE_SERVICES: Readonly<Record<string, ApiService>> = {
  dynamodb: 'dynamodb',
  sqs: 'sqs',
  ssm: 'ssm',
  lambda: 'lambda',
  sns: 'sns',
  kms: 'kms',
  monitoring: 'cloudwatch',
  sts: 'sts',
  logs: 'logs',
  xray: 'xray',
  events: 'events',
  cloudformation: 'cloudformation',
  s3: 's3',
  iam: 'iam',
};
/** Query-protocol services by their API version, for an unsigned request. */
const QUERY_VERSIONS: Readonly<Record<string, ApiService>> = {
  '2012-11-05': 'sqs',
  '2010-03-31': 'sns',
  '2010-08-01': 'cloudwatch',
  '2011-06-15': 'sts',
  '2010-05-08': 'iam',
  '2010-05-15': 'cloudformation',
};

function jsonRequest(service: ApiService, op: string, req: WireRequest, ctx: ArnContext): ApiRequest {
  const what = `${SERVICE_LABEL[service]} ${op}`;
  const body = jsonBody(req, what);
  const done = (checks: AuthorizationCheck[]): ApiRequest => ({
    service,
    operation: op,
    checks,
    protocol: 'json',
  });
  switch (service) {
    case 'dynamodb':
      return done(dynamodbChecks(op, body, ctx));
    case 'dynamodb-streams':
      return done(streamsChecks(op, body));
    case 'sqs':
      return done(sqsChecks(op, jsonFields(body, what), ctx, req.path));
    case 'ssm':
      return done(ssmChecks(op, body, ctx));
    case 'kms':
      return done(kmsChecks(op, body, ctx));
    case 'cloudwatch':
      return done(cloudwatchChecks(op, jsonFields(body, what), ctx));
    default:
      return done(resourceLessChecks(service, op, jsonFields(body, what)));
  }
}

function queryRequest(
  service: ApiService,
  params: URLSearchParams,
  ctx: ArnContext,
  path: string,
): ApiRequest {
  const op = params.get('Action');
  const label = SERVICE_LABEL[service];
  if (op === null || op === '') throw new RequestParseError(`${label}: the query request has no Action`);
  const fields = queryFields(params, `${label} ${op}`);
  const done = (checks: AuthorizationCheck[]): ApiRequest => ({
    service,
    operation: op,
    checks,
    protocol: 'query',
  });
  switch (service) {
    case 'sqs':
      return done(sqsChecks(op, fields, ctx, path));
    case 'sns':
      return done(snsChecks(op, fields, ctx));
    case 'cloudwatch':
      return done(cloudwatchChecks(op, fields, ctx));
    default:
      return done(resourceLessChecks(service, op, fields));
  }
}

const JSON_ONLY: ReadonlySet<ApiService> = new Set([
  'dynamodb',
  'dynamodb-streams',
  'ssm',
  'kms',
  'logs',
  'events',
]);
const QUERY_SERVICES: ReadonlySet<ApiService> = new Set([
  'sqs',
  'sns',
  'cloudwatch',
  'sts',
  'iam',
  'cloudformation',
]);

/**
 * Throws RequestParseError (with a clear message) when a request of a known service cannot be
 * parsed, and when the service cannot be told (no known X-Amz-Target, credential scope, Lambda
 * path or query-protocol Version).
 */
export function apiRequestOf(req: WireRequest, ctx: ArnContext): ApiRequest {
  const target = header(req, 'x-amz-target');
  const scope = signerOf(req)?.service;
  if (target !== undefined) {
    const dot = target.lastIndexOf('.');
    const prefix = dot < 0 ? target : target.slice(0, dot);
    const op = dot < 0 ? '' : target.slice(dot + 1);
    const service =
      TARGET_SERVICES[prefix] ?? (scope === undefined ? undefined : SCOPE_SERVICES[scope]) ?? 'unknown';
    if (service !== 'unknown') {
      if (op === '')
        throw new RequestParseError(`${SERVICE_LABEL[service]}: X-Amz-Target ${target} names no operation`);
      if (service === 'lambda' || service === 'sns' || service === 's3' || service === 'xray')
        throw new RequestParseError(
          `${SERVICE_LABEL[service]}: requests with an X-Amz-Target (${target}) are not mapped`,
        );
      return jsonRequest(service, op, req, ctx);
    }
    throw new RequestParseError(
      `cannot tell which AWS service X-Amz-Target ${target} belongs to (credential scope ${scope ?? 'none'})`,
    );
  }

  const { pathname } = splitPath(req.path);
  if (/^\/\d{4}-\d{2}-\d{2}\//.test(pathname) && (scope === undefined || scope === 'lambda'))
    return lambdaRequest(req, ctx);
  if (scope === 'lambda') return lambdaRequest(req, ctx);

  const scoped = scope === undefined ? undefined : SCOPE_SERVICES[scope];
  if (scoped === 'xray') {
    const op = XRAY_PATHS[pathname];
    if (op === undefined)
      throw new RequestParseError(`X-Ray: no operation is known for ${req.method} ${pathname}`);
    return { service: 'xray', operation: op, checks: anyResource(`xray:${op}`), protocol: 'rest-json' };
  }
  if (scoped === 's3')
    throw new RequestParseError(
      `S3: ${req.method} ${pathname} is not mapped (S3 requests are not supported)`,
    );
  if (scoped !== undefined && JSON_ONLY.has(scoped))
    throw new RequestParseError(`${SERVICE_LABEL[scoped]}: the request has no X-Amz-Target header`);

  const params = queryParams(req, scoped === undefined ? 'request' : SERVICE_LABEL[scoped]);
  const service = scoped ?? QUERY_VERSIONS[params.get('Version') ?? ''];
  if (service !== undefined && QUERY_SERVICES.has(service))
    return queryRequest(service, params, ctx, req.path);
  if (service !== undefined)
    throw new RequestParseError(
      `${SERVICE_LABEL[service]}: ${req.method} ${pathname} is not a request form known here`,
    );
  throw new RequestParseError(
    `cannot tell which AWS service ${req.method} ${pathname} is for (no X-Amz-Target, credential scope ${scope ?? 'none'})`,
  );
}

// ---------------------------------------------------------------------------------------------
// Denials

function xmlEscape(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

function respond(
  status: number,
  contentType: string,
  body: string,
  extra: Record<string, string> = {},
): WireResponse {
  const requestId = randomUUID();
  return {
    status,
    headers: {
      'x-amzn-RequestId': requestId,
      'content-type': contentType,
      'content-length': String(Buffer.byteLength(body)),
      ...extra,
    },
    body,
  };
}

function queryError(
  status: number,
  xmlns: string,
  code: string,
  message: string,
  detail = false,
): WireResponse {
  const requestId = randomUUID();
  const body =
    `<ErrorResponse xmlns="${xmlns}"><Error><Type>Sender</Type><Code>${code}</Code>` +
    `<Message>${xmlEscape(message)}</Message>${detail ? '<Detail/>' : ''}</Error>` +
    `<RequestId>${requestId}</RequestId></ErrorResponse>`;
  return {
    status,
    headers: {
      'x-amzn-RequestId': requestId,
      'content-type': 'text/xml',
      'content-length': String(Buffer.byteLength(body)),
    },
    body,
  };
}

/**
 * SQS and CloudWatch speak AWS JSON 1.0 with awsQueryCompatible. AWS answers an IAM denial over
 * SQS JSON with `403`, `x-amzn-query-error: AccessDenied;Sender` and
 * `{"__type":"com.amazon.coral.service#AccessDeniedException","Message":"User: … is not authorized …"}`
 * (a raw capture from AWS, eu-west-1, published with the Floci emulator's IAM enforcement design;
 * the SQS developer guide, "Interpreting Amazon SQS JSON API responses", documents the header as
 * "the type of error, and whether the error was a producer or consumer error"). The SDK
 * (@aws-sdk/core AwsJsonRpcProtocol.handleError with awsQueryCompatible) copies the header's code
 * into the error data (`setQueryCompatError`), then `loadJsonRpcErrorCode` reads the code before
 * `__type` (order code, header, type), so the error is named **AccessDenied**, not
 * AccessDeniedException — the name SQS's query protocol always used (`<Code>AccessDenied</Code>`,
 * 403). CloudWatch's query protocol answered denials the same way (`AccessDenied`, 403, e.g.
 * aws-sdk-go's "AccessDenied: User: … is not authorized to perform: cloudwatch:PutMetricData …
 * status code: 403"), and its JSON form carries that code in the same header, so CloudWatch
 * raises **AccessDenied** with status 403 too.
 */
function queryCompatibleJsonDenial(message: string): WireResponse {
  return respond(
    403,
    'application/x-amz-json-1.0',
    JSON.stringify({ __type: 'com.amazon.coral.service#AccessDeniedException', Message: message }),
    { 'x-amzn-query-error': 'AccessDenied;Sender' },
  );
}

/** AWS's access-denied answer for `api`, for the first failing check. message e.g. `User: arn:aws:sts::123456789012:assumed-role/R/fn is not authorized to perform: sqs:SendMessage on resource: arn:aws:sqs:us-east-1:123456789012:q because no identity-based policy allows the sqs:SendMessage action` */
export function accessDeniedResponse(api: ApiRequest, message: string): WireResponse {
  const json11 = (): WireResponse =>
    respond(400, 'application/x-amz-json-1.1', JSON.stringify({ __type: 'AccessDeniedException', message }));
  switch (api.service) {
    case 'dynamodb':
    case 'dynamodb-streams':
      return respond(
        400,
        'application/x-amz-json-1.0',
        JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#AccessDeniedException', message }),
      );
    case 'sqs':
      return api.protocol === 'query'
        ? queryError(403, 'http://queue.amazonaws.com/doc/2012-11-05/', 'AccessDenied', message, true)
        : queryCompatibleJsonDenial(message);
    case 'cloudwatch':
      return api.protocol === 'query'
        ? queryError(403, 'http://monitoring.amazonaws.com/doc/2010-08-01/', 'AccessDenied', message)
        : queryCompatibleJsonDenial(message);
    case 'ssm':
    case 'kms':
    case 'logs':
    case 'events':
      return json11();
    case 'lambda':
    case 'xray':
      return respond(403, 'application/json', JSON.stringify({ Message: message }), {
        'x-amzn-ErrorType': 'AccessDeniedException',
      });
    case 'sns':
      return queryError(403, 'http://sns.amazonaws.com/doc/2010-03-31/', 'AuthorizationError', message);
    case 'sts':
      return queryError(403, 'https://sts.amazonaws.com/doc/2011-06-15/', 'AccessDenied', message);
    case 'iam':
      return queryError(403, 'https://iam.amazonaws.com/doc/2010-05-08/', 'AccessDenied', message);
    case 'cloudformation':
      return queryError(403, 'http://cloudformation.amazonaws.com/doc/2010-05-15/', 'AccessDenied', message);
    case 's3': {
      const requestId = randomUUID();
      const body =
        `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>` +
        `<Message>${xmlEscape(message)}</Message><RequestId>${requestId}</RequestId></Error>`;
      return {
        status: 403,
        headers: {
          'x-amzn-RequestId': requestId,
          'x-amz-request-id': requestId,
          'content-type': 'application/xml',
          'content-length': String(Buffer.byteLength(body)),
        },
        body,
      };
    }
    case 'unknown':
      return respond(403, 'application/json', JSON.stringify({ __type: 'AccessDeniedException', message }), {
        'x-amzn-ErrorType': 'AccessDeniedException',
      });
  }
}
