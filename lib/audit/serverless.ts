/**
 * Reads a Serverless Framework service (`serverless.yml`, v3 and v4) into the CloudFormation
 * template the framework would generate, as far as the audit's rules read it, without the
 * framework installed:
 *
 * - each function → an `AWS::Lambda::Function` `<Name>LambdaFunction` (the framework's
 *   normalisation: first letter upper-cased, `-` → `Dash`, `_` → `Underscore`), its role the one
 *   `IamRoleLambdaExecution` built from `provider.iam.role.statements` (or the older
 *   `provider.iamRoleStatements`), unless `role` names another;
 * - its `sqs` events → `<Name>EventSourceMappingSQS<Queue>`, its `stream` events (DynamoDB,
 *   Kinesis; an ARN string or the object form) → `<Name>EventSourceMapping<Dynamodb|Kinesis><Stream>`,
 *   each event's options mapped to the mapping's properties as the framework maps them;
 * - `resources.Resources`, `Conditions`, `Outputs` and `Parameters` merged in (an object or a
 *   list of them, as the framework accepts).
 *
 * `timeout` and `memorySize` are taken from the function, then from `provider`; when neither
 * states them the framework writes its defaults (6 s, 1024 MB) into the template. The model leaves
 * them unset then, so that D4 still sees that nobody chose them, and the vocabulary's defaults
 * (SERVERLESS_VOCABULARY) tell the other rules the framework's values.
 *
 * Variables are resolved as the framework resolves them where the file alone can tell:
 * `${self:path}`, `${sls:stage}` and `${opt:stage}` (the stage: `provider.stage` or `dev`),
 * `${opt:…}` / `${env:…}` by their fallback (`${env:X, 'default'}`: the CLI's options and the
 * environment are not the input's), `${file(./x.yml)}` and `${file(./x.yml):key}` relative to the
 * file. What cannot be resolved stays in the value as written, and is listed with its reason, so
 * the rules reading that property report `not-checkable` naming the variable.
 *
 * Sources: the framework's docs "Serverless.yml Reference", "AWS Lambda Events: SQS Queues",
 * "AWS Lambda Events: DynamoDB / Kinesis Streams", "Variables" and "AWS Infrastructure Resources"
 * (the logical id naming table).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { TemplateVocabulary } from './rules';
import type { ResourceOrigin } from './sam';
import { TemplateFormatError, parseTemplateText } from './template-text';

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The framework's defaults, and the words findings use for a serverless.yml. */
export const SERVERLESS_VOCABULARY: TemplateVocabulary = {
  format: 'serverless.yml',
  defaultTimeoutSeconds: 6,
  defaultMemoryMb: 1024,
  defaultsOwner: "the framework's",
  timeout: 'timeout',
  memorySize: 'memorySize',
  setLimits: 'set timeout and memorySize on the function (or provider.timeout / provider.memorySize)',
  lowerTimeout: "lower the function's timeout",
  visibilityTimeout: 'VisibilityTimeout (in resources.Resources)',
  batchingWindow: 'maximumBatchingWindow',
  partialBatchFix: 'add functionResponseType: ReportBatchItemFailures on the event',
  functionResponseTypes: 'functionResponseType',
  bisect: 'bisectBatchOnFunctionError: true',
  maximumRetryAttempts: 'maximumRetryAttempts',
  maximumRecordAge: 'maximumRecordAgeInSeconds',
  onFailureFix: 'add destinations.onFailure (an SQS queue or SNS topic ARN) on the stream event',
};

/** Whether a parsed document is a Serverless Framework service rather than a CloudFormation template. */
export function isServerlessConfig(document: unknown): document is Json {
  if (!isRecord(document) || document.Resources !== undefined) return false;
  return document.service !== undefined && (isRecord(document.provider) || isRecord(document.functions));
}

/** A service read into a template, with where each resource came from and what stayed unresolved. */
export interface ServerlessTemplate {
  readonly template: Json;
  /** By logical id: how findings name it and the path of what the user wrote. */
  readonly origins: ReadonlyMap<string, ResourceOrigin>;
  /** By logical id, by property: the variables left unresolved there, each with its reason. */
  readonly unresolved: ReadonlyMap<string, ReadonlyMap<string, ReadonlySet<string>>>;
}

/** Serverless variable sources; `${AWS::Region}` and `${Resource}` (Fn::Sub's) are not among them. */
const SOURCE =
  /^(?:file\(|strToBool\(|(?:self|opt|env|sls|cf|ssm|s3|aws|param|construct|git|sm)(?:\([^)]*\))?:)/;
/** A variable with no other variable inside it. */
const INNERMOST = /\$\{([^${}]*)\}/g;

/** Resolves a service's variables; what it cannot resolve it keeps, with the reason. */
class VariableResolver {
  /** The reason each unresolved variable (as written) stayed so. */
  public readonly reasons = new Map<string, string>();
  private readonly stage: string;

  public constructor(
    private readonly document: Json,
    /** The file's directory, for `${file(…)}`; undefined for stdin. */
    private readonly directory: string | undefined,
  ) {
    const provider = isRecord(document.provider) ? document.provider : {};
    const stage = this.resolve(provider.stage ?? 'dev', 0, true);
    this.stage = typeof stage === 'string' && !this.hasVariable(stage) ? stage : 'dev';
  }

  /** Whether a string still holds a variable of the framework's (one left unresolved). */
  public hasVariable(text: string): boolean {
    return this.variablesIn(text).length > 0;
  }

  /** The framework variables a text holds, as written. */
  public variablesIn(text: string): string[] {
    return [...text.matchAll(/\$\{([^{}]*)\}/g)]
      .filter((m) => SOURCE.test((m[1] ?? '').trim()))
      .map((m) => m[0]);
  }

  /** A value with every variable it holds resolved where possible. */
  public resolve(value: unknown, depth = 0, early = false): unknown {
    if (depth > 16) return value;
    if (Array.isArray(value)) return value.map((v) => this.resolve(v, depth + 1, early));
    if (isRecord(value))
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, this.resolve(v, depth + 1, early)]),
      );
    if (typeof value !== 'string' || !value.includes('${')) return value;
    let text = value;
    // Innermost first, until nothing changes: `${self:custom.${sls:stage}.queue}` works.
    for (let round = 0; round < 8; round++) {
      let whole: unknown = undefined;
      let changed = false;
      const next = text.replace(INNERMOST, (match, body: string, offset: number) => {
        if (!SOURCE.test(body.trim())) return match;
        const resolved = this.variable(body, depth, early);
        if (resolved === undefined) return match;
        changed = true;
        if (offset === 0 && match.length === text.length && typeof resolved !== 'string') whole = resolved;
        return typeof resolved === 'string' ? resolved : JSON.stringify(resolved);
      });
      if (whole !== undefined) return this.resolve(whole, depth + 1, early);
      // No progress (a variable that resolves to itself) ends it, so a cycle costs one pass per level.
      if (!changed || next === text) break;
      text = next;
    }
    return text;
  }

  /** One variable's value (`self:a.b, 'x'`), or undefined (its reason recorded). */
  private variable(body: string, depth: number, early: boolean): unknown {
    const reasons: string[] = [];
    for (const part of splitFallbacks(body)) {
      const literal = literalOf(part);
      if (literal !== undefined) return literal;
      const value = this.source(part, depth, reasons, early);
      if (value !== undefined) return value;
    }
    this.reasons.set(`\${${body}}`, reasons.join('; ') || 'no value');
    return undefined;
  }

  private source(part: string, depth: number, reasons: string[], early: boolean): unknown {
    const colon = part.indexOf(':');
    const file = /^file\(([^)]+)\)(?::(.*))?$/.exec(part);
    if (file !== null) return this.file(file[1] ?? '', file[2], depth, reasons);
    const [kind, rest] = colon < 0 ? [part, ''] : [part.slice(0, colon), part.slice(colon + 1).trim()];
    if (kind === 'self') {
      const found = lookup(this.document, rest);
      if (found === undefined) reasons.push(`self:${rest} is not in the file`);
      return found === undefined ? undefined : this.resolve(found, depth + 1, early);
    }
    if ((kind === 'sls' || kind === 'opt') && rest === 'stage') return early ? undefined : this.stage;
    if (kind === 'opt') reasons.push(`opt:${rest} is a command-line option of the deploy`);
    else if (kind === 'env') reasons.push(`env:${rest} is the deploying shell's environment`);
    else reasons.push(`${part} is known only when the framework deploys`);
    return undefined;
  }

  private file(name: string, key: string | undefined, depth: number, reasons: string[]): unknown {
    const shown = `file(${name})`;
    if (this.directory === undefined) {
      reasons.push(`${shown} is relative to a file, and the service was read from stdin`);
      return undefined;
    }
    const target = path.resolve(this.directory, name.trim().replace(/^['"]|['"]$/g, ''));
    if (!fs.existsSync(target) || fs.statSync(target).isDirectory()) {
      reasons.push(`${shown} was not found next to the service file`);
      return undefined;
    }
    if (!/\.(ya?ml|json)$/i.test(target)) {
      reasons.push(`${shown} is not YAML or JSON (the audit runs no included code)`);
      return undefined;
    }
    let content: unknown;
    try {
      content = parseTemplateText(fs.readFileSync(target, 'utf8'), target).template;
    } catch (error) {
      reasons.push(`${shown}: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
    const found = key === undefined || key.trim() === '' ? content : lookup(content, key.trim());
    if (found === undefined) reasons.push(`${shown} has no ${key ?? ''}`);
    return found === undefined ? undefined : this.resolve(found, depth + 1);
  }
}

/** `a, 'x', self:b` → its parts, commas inside quotes or brackets kept. */
function splitFallbacks(body: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quote: string | undefined;
  let nesting = 0;
  for (const char of body) {
    if (quote !== undefined) {
      if (char === quote) quote = undefined;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === '(' || char === '[') nesting++;
    else if (char === ')' || char === ']') nesting--;
    else if (char === ',' && nesting === 0) {
      parts.push(current.trim());
      current = '';
      continue;
    }
    current += char;
  }
  parts.push(current.trim());
  return parts.filter((p) => p !== '');
}

/** A fallback written as a literal: a quoted string, a number, true/false. */
function literalOf(part: string): unknown {
  const quoted = /^(['"])(.*)\1$/.exec(part);
  if (quoted !== null) return quoted[2];
  if (/^-?\d+(\.\d+)?$/.test(part)) return Number(part);
  if (part === 'true' || part === 'false') return part === 'true';
  return undefined;
}

/** The value at a dotted path (`custom.queue.name`) of a document. */
function lookup(document: unknown, dotted: string): unknown {
  let node = document;
  for (const key of dotted.split('.').filter((k) => k !== '')) {
    if (Array.isArray(node) && /^\d+$/.test(key)) node = node[Number(key)];
    else if (isRecord(node)) node = node[key];
    else return undefined;
  }
  return node;
}

/** The framework's `normalizeName`: the first letter upper-cased. */
function normalizeName(name: string): string {
  return `${name.charAt(0).toUpperCase()}${name.slice(1)}`;
}

/** The framework's `getNormalizedFunctionName`: `-` → `Dash`, `_` → `Underscore`, then normalizeName. */
export function normalizedFunctionName(name: string): string {
  return normalizeName(name.replace(/-/g, 'Dash').replace(/_/g, 'Underscore'));
}

/** The framework's `normalizeNameToAlphaNumericOnly`: every other character dropped (no `Dash` here). */
function alphaNumeric(name: string): string {
  return normalizeName(name.replace(/[^0-9A-Za-z]/g, ''));
}

/** The framework's name for a function's resource. */
export function lambdaLogicalId(functionName: string): string {
  return `${normalizedFunctionName(functionName)}LambdaFunction`;
}

/** The framework's execution role. */
export const EXECUTION_ROLE = 'IamRoleLambdaExecution';

/** The queue or stream name the framework puts in a mapping's logical id. */
function sourceName(arn: unknown, split: (text: string) => string): string {
  if (isRecord(arn)) {
    const getAtt = arn['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
    if (typeof getAtt === 'string') return getAtt.split('.')[0] ?? getAtt;
    const imported = arn['Fn::ImportValue'];
    if (typeof imported === 'string') return imported;
    const join = arn['Fn::Join'];
    if (Array.isArray(join) && Array.isArray(join[1])) {
      const last = (join[1] as unknown[]).at(-1);
      if (typeof last === 'string') return split(last);
    }
    if (typeof arn.Ref === 'string') return arn.Ref;
    return 'Source';
  }
  return typeof arn === 'string' ? split(arn) : 'Source';
}

/** An SQS event's mapping properties (the framework's `compileSqsEvents`). */
function sqsMapping(event: unknown, functionArn: Json): { name: string; properties: Json } {
  const options = isRecord(event) ? event : { arn: event };
  const arn = options.arn;
  const properties: Json = {
    BatchSize: options.batchSize ?? 10,
    EventSourceArn: arn,
    FunctionName: functionArn,
    Enabled: options.enabled ?? true,
  };
  if (options.maximumBatchingWindow !== undefined)
    properties.MaximumBatchingWindowInSeconds = options.maximumBatchingWindow;
  if (options.functionResponseType !== undefined)
    properties.FunctionResponseTypes = [options.functionResponseType];
  if (options.maximumConcurrency !== undefined)
    properties.ScalingConfig = { MaximumConcurrency: options.maximumConcurrency };
  if (Array.isArray(options.filterPatterns))
    properties.FilterCriteria = filterCriteria(options.filterPatterns);
  return { name: sourceName(arn, (text) => text.split(':').pop() ?? text), properties };
}

function filterCriteria(patterns: readonly unknown[]): Json {
  return { Filters: patterns.map((p) => ({ Pattern: JSON.stringify(p) })) };
}

/** A stream event's mapping properties and type (the framework's `compileStreamEvents`). */
function streamMapping(
  event: unknown,
  functionArn: Json,
):
  { type: string; name: string; properties: Json; destination?: { arn: unknown; sns: boolean } } | undefined {
  const options = isRecord(event) ? event : { arn: event };
  const arn = options.arn;
  const type =
    typeof options.type === 'string'
      ? options.type
      : typeof arn === 'string'
        ? (arn.split(':')[2] ?? '')
        : '';
  if (type !== 'dynamodb' && type !== 'kinesis') return undefined;
  const properties: Json = {
    BatchSize: options.batchSize ?? 10,
    EventSourceArn: arn,
    FunctionName: functionArn,
    StartingPosition: options.startingPosition ?? 'TRIM_HORIZON',
    Enabled: options.enabled ?? true,
  };
  const passed: Record<string, string> = {
    parallelizationFactor: 'ParallelizationFactor',
    batchWindow: 'MaximumBatchingWindowInSeconds',
    maximumBatchingWindow: 'MaximumBatchingWindowInSeconds',
    maximumRetryAttempts: 'MaximumRetryAttempts',
    bisectBatchOnFunctionError: 'BisectBatchOnFunctionError',
    maximumRecordAgeInSeconds: 'MaximumRecordAgeInSeconds',
    tumblingWindowInSeconds: 'TumblingWindowInSeconds',
  };
  for (const [option, property] of Object.entries(passed))
    if (options[option] !== undefined) properties[property] = options[option];
  if (options.functionResponseType !== undefined)
    properties.FunctionResponseTypes = [options.functionResponseType];
  if (Array.isArray(options.filterPatterns))
    properties.FilterCriteria = filterCriteria(options.filterPatterns);
  const destinations = isRecord(options.destinations) ? options.destinations : {};
  const onFailure = destinations.onFailure;
  const destination = isRecord(onFailure) && onFailure.arn !== undefined ? onFailure.arn : onFailure;
  const name = sourceName(arn, (text) => text.split('/')[1] ?? text);
  if (destination === undefined) return { type, name, properties };
  properties.DestinationConfig = { OnFailure: { Destination: destination } };
  const sns =
    (isRecord(onFailure) && onFailure.type === 'sns') || JSON.stringify(destination).includes(':sns:');
  return { type, name, properties, destination: { arn: destination, sns } };
}

/** The resources sections (`resources` is an object or a list of them), merged. */
function resourceSections(resources: unknown): Json[] {
  if (Array.isArray(resources)) return resources.filter(isRecord);
  return isRecord(resources) ? [resources] : [];
}

/**
 * The template the framework would generate for a service (its variables resolved first).
 * `file` is the service file (its directory roots `${file(…)}`), undefined for stdin.
 */
export function readServerlessConfig(document: Json, file: string | undefined): ServerlessTemplate {
  const resolver = new VariableResolver(document, file === undefined ? undefined : path.dirname(file));
  const resolved = resolver.resolve(document);
  if (!isRecord(resolved)) throw new TemplateFormatError('not a Serverless Framework service');
  const service = isRecord(resolved.service) ? resolved.service.name : resolved.service;
  const provider = isRecord(resolved.provider) ? resolved.provider : {};
  const stage = resolver.resolve('${sls:stage}');
  const functions = isRecord(resolved.functions) ? resolved.functions : {};
  const resources: Json = {};
  const origins = new Map<string, ResourceOrigin>();
  const template: Json = { AWSTemplateFormatVersion: '2010-09-09', Resources: resources };

  const iam = isRecord(provider.iam) ? provider.iam : {};
  const iamRole = iam.role;
  const statements = [
    ...(isRecord(iamRole) && Array.isArray(iamRole.statements) ? iamRole.statements : []),
    ...(Array.isArray(provider.iamRoleStatements) ? provider.iamRoleStatements : []),
  ] as unknown[];
  // `provider.iam.role` is the role to use when it is a name or ARN, the execution role's settings otherwise.
  const providerRole = typeof iamRole === 'string' ? iamRole : provider.role;
  const managed = [
    ...(isRecord(iamRole) && Array.isArray(iamRole.managedPolicies) ? iamRole.managedPolicies : []),
    ...(Array.isArray(provider.iamManagedPolicies) ? provider.iamManagedPolicies : []),
  ] as unknown[];
  let needsRole = false;
  const eventStatements: Json[] = [];

  for (const [name, fn] of Object.entries(functions)) {
    if (!isRecord(fn)) continue;
    const id = lambdaLogicalId(name);
    const role = fn.role ?? providerRole;
    if (role === undefined) needsRole = true;
    const environment = {
      ...(isRecord(provider.environment) ? provider.environment : {}),
      ...(isRecord(fn.environment) ? fn.environment : {}),
    };
    const properties: Json = {
      FunctionName: fn.name ?? `${String(service)}-${String(stage)}-${name}`,
      Handler: fn.handler,
      Runtime: fn.runtime ?? provider.runtime ?? 'nodejs20.x',
      Role:
        role === undefined
          ? { 'Fn::GetAtt': [EXECUTION_ROLE, 'Arn'] }
          : typeof role === 'string' && !role.startsWith('arn:')
            ? { 'Fn::GetAtt': [role, 'Arn'] }
            : role,
    };
    const timeout = fn.timeout ?? provider.timeout;
    const memory = fn.memorySize ?? provider.memorySize;
    // Unset when nobody chose them: the framework's defaults come from the vocabulary (see above).
    if (timeout !== undefined) properties.Timeout = timeout;
    if (memory !== undefined) properties.MemorySize = memory;
    if (Object.keys(environment).length > 0) properties.Environment = { Variables: environment };
    resources[id] = { Type: 'AWS::Lambda::Function', Properties: properties };
    origins.set(id, { display: id, path: ['functions', name] });
    const functionArn = { 'Fn::GetAtt': [id, 'Arn'] };
    const events = (Array.isArray(fn.events) ? fn.events : []) as unknown[];
    events.forEach((event, index) => {
      if (!isRecord(event)) return;
      const where = { display: '', path: ['functions', name, 'events', String(index)] };
      if (event.sqs !== undefined) {
        const mapping = sqsMapping(event.sqs, functionArn);
        const mappingId = `${normalizedFunctionName(name)}EventSourceMappingSQS${alphaNumeric(mapping.name)}`;
        resources[mappingId] = {
          Type: 'AWS::Lambda::EventSourceMapping',
          DependsOn: [EXECUTION_ROLE],
          Properties: mapping.properties,
        };
        origins.set(mappingId, { ...where, display: mappingId });
        eventStatements.push({
          Effect: 'Allow',
          Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'],
          Resource: [mapping.properties.EventSourceArn],
        });
      } else if (event.stream !== undefined) {
        const mapping = streamMapping(event.stream, functionArn);
        if (mapping === undefined) return;
        const mappingId = `${normalizedFunctionName(name)}EventSourceMapping${normalizeName(mapping.type)}${alphaNumeric(mapping.name)}`;
        resources[mappingId] = {
          Type: 'AWS::Lambda::EventSourceMapping',
          DependsOn: [EXECUTION_ROLE],
          Properties: mapping.properties,
        };
        origins.set(mappingId, { ...where, display: mappingId });
        eventStatements.push({
          Effect: 'Allow',
          Action:
            mapping.type === 'dynamodb'
              ? [
                  'dynamodb:GetRecords',
                  'dynamodb:GetShardIterator',
                  'dynamodb:DescribeStream',
                  'dynamodb:ListStreams',
                ]
              : [
                  'kinesis:GetRecords',
                  'kinesis:GetShardIterator',
                  'kinesis:DescribeStream',
                  'kinesis:ListStreams',
                ],
          Resource: [mapping.properties.EventSourceArn],
        });
        // The framework grants sending to an on-failure destination (sqs:SendMessage or sns:Publish).
        if (mapping.destination !== undefined)
          eventStatements.push({
            Effect: 'Allow',
            Action: mapping.destination.sns ? ['sns:Publish'] : ['sqs:SendMessage'],
            Resource: [mapping.destination.arn],
          });
      }
    });
  }

  if (needsRole) {
    resources[EXECUTION_ROLE] = {
      Type: 'AWS::IAM::Role',
      Properties: {
        AssumeRolePolicyDocument: {
          Version: '2012-10-17',
          Statement: [
            { Effect: 'Allow', Principal: { Service: ['lambda.amazonaws.com'] }, Action: ['sts:AssumeRole'] },
          ],
        },
        Policies: [
          {
            PolicyName: { 'Fn::Join': ['-', [String(service), String(stage), 'lambda']] },
            PolicyDocument: { Version: '2012-10-17', Statement: [...statements, ...eventStatements] },
          },
        ],
        ...(managed.length > 0 ? { ManagedPolicyArns: managed } : {}),
      },
    };
    origins.set(EXECUTION_ROLE, {
      display: EXECUTION_ROLE,
      path:
        statements.length > 0
          ? ['provider', iamRole !== undefined ? 'iam' : 'iamRoleStatements']
          : ['provider'],
    });
  }

  for (const [index, section] of resourceSections(resolved.resources).entries()) {
    const base = Array.isArray(resolved.resources) ? ['resources', String(index)] : ['resources'];
    for (const part of ['Conditions', 'Outputs', 'Parameters', 'Mappings'] as const) {
      if (isRecord(section[part]))
        template[part] = { ...(template[part] as Json | undefined), ...section[part] };
    }
    if (!isRecord(section.Resources)) continue;
    for (const [id, resource] of Object.entries(section.Resources)) {
      const existing = resources[id];
      // The framework merges a resource of the same logical id into the one it generated.
      resources[id] = isRecord(existing) && isRecord(resource) ? mergeResource(existing, resource) : resource;
      if (!origins.has(id)) origins.set(id, { display: id, path: [...base, 'Resources', id] });
    }
  }

  return { template, origins, unresolved: unresolvedByProperty(resources, resolver) };
}

/** `resources.Resources` overriding a generated resource: Properties merged, the rest replaced. */
function mergeResource(generated: Json, override: Json): Json {
  const properties = {
    ...(isRecord(generated.Properties) ? generated.Properties : {}),
    ...(isRecord(override.Properties) ? override.Properties : {}),
  };
  return { ...generated, ...override, Properties: properties };
}

/** The unresolved variables under each resource's properties, with their reasons. */
function unresolvedByProperty(
  resources: Json,
  resolver: VariableResolver,
): Map<string, Map<string, Set<string>>> {
  const result = new Map<string, Map<string, Set<string>>>();
  const strings = (value: unknown): string[] =>
    typeof value === 'string'
      ? [value]
      : Array.isArray(value)
        ? value.flatMap(strings)
        : isRecord(value)
          ? Object.values(value).flatMap(strings)
          : [];
  for (const [id, resource] of Object.entries(resources)) {
    const properties = isRecord(resource) && isRecord(resource.Properties) ? resource.Properties : {};
    for (const [property, value] of Object.entries(properties)) {
      const variables = new Set(strings(value).flatMap((s) => resolver.variablesIn(s)));
      if (variables.size === 0) continue;
      const byProperty = result.get(id) ?? new Map<string, Set<string>>();
      byProperty.set(
        property,
        new Set(
          [...variables].map(
            (v) => `${property} holds ${v}, unresolved: ${resolver.reasons.get(v) ?? 'no value'}`,
          ),
        ),
      );
      result.set(id, byProperty);
    }
  }
  return result;
}
