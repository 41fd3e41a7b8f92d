/**
 * Models what the SAM transform (`Transform: AWS::Serverless-2016-10-31`) creates for the
 * resources the audit's rules read, so the rules run over a SAM template as they run over its
 * deployed form, without python or the SAM translator:
 *
 * - `AWS::Serverless::Function` → `AWS::Lambda::Function` (same logical id), with `Globals.Function`
 *   merged as SAM merges it (maps deep-merged, the resource's primitives win, lists concatenated);
 *   no `Role` → an `AWS::IAM::Role` `<Function>Role` with `Policies` (managed names, ARNs, inline
 *   statements, the SQSSendMessagePolicy/SQSPollerPolicy templates) and the event types' managed
 *   policies; SAM adds no Timeout or MemorySize of its own (Lambda's defaults, 3 s and 128 MB, apply);
 * - each `SQS`, `DynamoDB` or `Kinesis` event → an `AWS::Lambda::EventSourceMapping`
 *   `<Function><Event>`, its properties passed through as SAM documents them (`Queue`/`Stream` →
 *   `EventSourceArn`; a destination's SAM-only `Type` dropped and granted on the role);
 *   The mapping keeps its event's type in its Metadata (EVENT_TYPE_METADATA_KEY): an `SQS` event
 *   reads a queue whichever queue its `Queue` names (a parameter without a default, an import);
 * - `AWS::Serverless::SimpleTable` → `AWS::DynamoDB::Table` (same logical id), key `id` (String)
 *   by default, on-demand unless `ProvisionedThroughput` is given;
 * - `AWS::Serverless::Application` → `AWS::CloudFormation::Stack` (same logical id): a nested
 *   stack, its `Location` the TemplateURL, its `Parameters` passed.
 *
 * Sources: "CloudFormation resources generated when AWS::Serverless::Function is specified",
 * "SQS", "DynamoDB", "Kinesis", "AWS::Serverless::SimpleTable" and "Globals section of the AWS SAM
 * template" in the AWS SAM developer guide. Other event types and serverless resources (Api,
 * StateMachine…) are left as they are: no rule reads them.
 */

/**
 * Metadata key of a modelled event source mapping: the SAM event type it came from (`SQS`,
 * `DynamoDB`, `Kinesis`), what its source is even when the template does not say which one.
 */
export const EVENT_TYPE_METADATA_KEY = 'tenang:sam-event-type';

/** The transform that makes a template a SAM template. */
export const SAM_TRANSFORM = 'AWS::Serverless-2016-10-31';

/** Where a resource of the modelled template came from, to name it as the user wrote it. */
export interface ResourceOrigin {
  /** How findings name it: the logical id, or e.g. `MyFunction (event MySQSEvent)`. */
  readonly display: string;
  /** The path of what the user wrote in the source template, for its line. */
  readonly path: readonly string[];
}

/** A template with its SAM resources modelled as CloudFormation, and where each resource came from. */
export interface ExpandedTemplate {
  readonly template: Record<string, unknown>;
  /** By logical id of the modelled template; every resource has one. */
  readonly origins: ReadonlyMap<string, ResourceOrigin>;
}

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether a template is SAM: it asks for the transform (`Transform` is a name or a list of them),
 * or it holds `AWS::Serverless::*` resources, which only the transform deploys (SAM's own
 * integration templates leave the line to the harness that adds it).
 */
export function isSamTemplate(template: Json): boolean {
  const transform = template.Transform;
  if ((Array.isArray(transform) ? transform : [transform]).includes(SAM_TRANSFORM)) return true;
  const resources = isRecord(template.Resources) ? Object.values(template.Resources) : [];
  return resources.some(
    (r) => isRecord(r) && typeof r.Type === 'string' && r.Type.startsWith('AWS::Serverless::'),
  );
}

/** SAM's Globals merge: maps deep-merged, lists concatenated (globals first), the resource's primitives win. */
export function mergeGlobals(globals: unknown, local: unknown): unknown {
  if (local === undefined) return globals;
  if (isRecord(globals) && isRecord(local)) {
    const merged: Json = { ...globals };
    for (const [key, value] of Object.entries(local)) merged[key] = mergeGlobals(globals[key], value);
    return merged;
  }
  if (Array.isArray(globals) && Array.isArray(local))
    return [...(globals as unknown[]), ...(local as unknown[])];
  return local;
}

/** Function properties SAM passes to AWS::Lambda::Function unchanged. */
const FUNCTION_PASS_THROUGH = [
  'Architectures',
  'CodeSigningConfigArn',
  'Description',
  'Environment',
  'EphemeralStorage',
  'FileSystemConfigs',
  'FunctionName',
  'Handler',
  'ImageConfig',
  'KmsKeyArn',
  'Layers',
  'LoggingConfig',
  'MemorySize',
  'PackageType',
  'ReservedConcurrentExecutions',
  'Runtime',
  'RuntimeManagementConfig',
  'SnapStart',
  'Timeout',
  'VpcConfig',
] as const;

/** Event source mapping properties each modelled event type passes through (SAM docs, per type). */
const EVENT_PASS_THROUGH: Readonly<Record<string, readonly string[]>> = {
  SQS: [
    'BatchSize',
    'Enabled',
    'FilterCriteria',
    'FunctionResponseTypes',
    'KmsKeyArn',
    'MaximumBatchingWindowInSeconds',
    'MetricsConfig',
    'ProvisionedPollerConfig',
    'ScalingConfig',
  ],
  DynamoDB: [
    'BatchSize',
    'BisectBatchOnFunctionError',
    'Enabled',
    'FilterCriteria',
    'FunctionResponseTypes',
    'KmsKeyArn',
    'MaximumBatchingWindowInSeconds',
    'MaximumRecordAgeInSeconds',
    'MaximumRetryAttempts',
    'MetricsConfig',
    'ParallelizationFactor',
    'StartingPosition',
    'StartingPositionTimestamp',
    'TumblingWindowInSeconds',
  ],
};

/** The source property and the managed policy SAM attaches, per modelled event type. */
const EVENT_SOURCES: Readonly<Record<string, { readonly source: string; readonly policy: string }>> = {
  SQS: { source: 'Queue', policy: 'AWSLambdaSQSQueueExecutionRole' },
  DynamoDB: { source: 'Stream', policy: 'AWSLambdaDynamoDBExecutionRole' },
  Kinesis: { source: 'Stream', policy: 'AWSLambdaKinesisExecutionRole' },
};

function managedPolicyArn(name: string, servicePath = false): Json {
  return { 'Fn::Sub': `arn:\${AWS::Partition}:iam::aws:policy/${servicePath ? 'service-role/' : ''}${name}` };
}

/** `arn:…:sqs:region:account:<name>` for a queue name value, as SAM's SQS policy templates build it. */
function queueArnFromName(queueName: unknown): unknown {
  const prefix = 'arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:';
  if (typeof queueName === 'string') return { 'Fn::Sub': `${prefix}${queueName}` };
  const getAtt = isRecord(queueName) ? queueName['Fn::GetAtt'] : undefined;
  if (Array.isArray(getAtt) && getAtt.length === 2)
    return { 'Fn::Sub': `${prefix}\${${String(getAtt[0])}.${String(getAtt[1])}}` };
  return { 'Fn::Sub': [`${prefix}\${queueName}`, { queueName }] };
}

/** SAM policy templates that grant on SQS, as statements; the others grant no sqs:SendMessage. */
const SQS_POLICY_TEMPLATES: Readonly<Record<string, readonly string[]>> = {
  SQSSendMessagePolicy: ['sqs:SendMessage*'],
  SQSPollerPolicy: [
    'sqs:ChangeMessageVisibility',
    'sqs:ChangeMessageVisibilityBatch',
    'sqs:DeleteMessage',
    'sqs:DeleteMessageBatch',
    'sqs:GetQueueAttributes',
    'sqs:ReceiveMessage',
  ],
};

/** A function's `Policies` as the generated role's managed policy ARNs and inline documents. */
function rolePolicies(policies: unknown): { managed: unknown[]; documents: Json[] } {
  const managed: unknown[] = [];
  const documents: Json[] = [];
  for (const policy of Array.isArray(policies) ? policies : policies === undefined ? [] : [policies]) {
    if (typeof policy === 'string') {
      managed.push(policy.startsWith('arn:') ? policy : managedPolicyArn(policy));
    } else if (isRecord(policy) && 'Statement' in policy) {
      documents.push(policy);
    } else if (isRecord(policy) && Object.keys(policy).length === 1) {
      const [[name, parameters]] = Object.entries(policy) as [[string, unknown]];
      const actions = SQS_POLICY_TEMPLATES[name];
      if (actions !== undefined && isRecord(parameters)) {
        documents.push({
          Statement: [{ Effect: 'Allow', Action: actions, Resource: queueArnFromName(parameters.QueueName) }],
        });
      } else if (!name.endsWith('Policy')) {
        managed.push(policy); // an intrinsic naming a managed policy ARN
      }
    }
  }
  return { managed, documents };
}

/** What one SAM function becomes: the function, its role, a mapping per modelled event. */
function expandFunction(id: string, properties: Json, out: Json, origins: Map<string, ResourceOrigin>): void {
  const at = ['Resources', id];
  const fn: Json = {};
  for (const key of FUNCTION_PASS_THROUGH) if (properties[key] !== undefined) fn[key] = properties[key];
  if (isRecord(properties.Tracing) || typeof properties.Tracing === 'string')
    fn.TracingConfig = { Mode: properties.Tracing };
  if (isRecord(properties.DeadLetterQueue))
    fn.DeadLetterConfig = { TargetArn: properties.DeadLetterQueue.TargetArn };
  fn.Code =
    properties.InlineCode !== undefined ? { ZipFile: properties.InlineCode } : { S3Key: properties.CodeUri };

  const events = isRecord(properties.Events) ? properties.Events : {};
  const managed: unknown[] = [managedPolicyArn('AWSLambdaBasicExecutionRole', true)];
  const documents: Json[] = [];
  for (const [eventId, event] of Object.entries(events)) {
    if (!isRecord(event) || typeof event.Type !== 'string') continue;
    const kind = EVENT_SOURCES[event.Type];
    if (kind === undefined) continue;
    const p = isRecord(event.Properties) ? event.Properties : {};
    const mapping: Json = { FunctionName: { Ref: id }, EventSourceArn: p[kind.source] };
    for (const key of EVENT_PASS_THROUGH[event.Type === 'SQS' ? 'SQS' : 'DynamoDB'] ?? [])
      if (p[key] !== undefined) mapping[key] = p[key];
    const onFailure = isRecord(p.DestinationConfig) ? p.DestinationConfig.OnFailure : undefined;
    if (event.Type !== 'SQS' && isRecord(onFailure)) {
      // `Type` is SAM's own: it picks the permission SAM grants, and is not passed on.
      mapping.DestinationConfig = { OnFailure: { Destination: onFailure.Destination } };
      const action =
        onFailure.Type === 'SQS' ? 'sqs:SendMessage' : onFailure.Type === 'SNS' ? 'sns:publish' : undefined;
      if (action !== undefined)
        documents.push({ Statement: [{ Effect: 'Allow', Action: action, Resource: onFailure.Destination }] });
    }
    managed.push(managedPolicyArn(kind.policy, true));
    out[`${id}${eventId}`] = {
      Type: 'AWS::Lambda::EventSourceMapping',
      Metadata: { [EVENT_TYPE_METADATA_KEY]: event.Type },
      Properties: mapping,
    };
    origins.set(`${id}${eventId}`, {
      display: `${id} (event ${eventId})`,
      path: [...at, 'Properties', 'Events', eventId],
    });
  }

  if (properties.Role !== undefined) {
    fn.Role = properties.Role;
  } else {
    const roleId = `${id}Role`;
    const declared = rolePolicies(properties.Policies);
    out[roleId] = {
      Type: 'AWS::IAM::Role',
      Properties: {
        AssumeRolePolicyDocument: {
          Version: '2012-10-17',
          Statement: [
            { Effect: 'Allow', Action: ['sts:AssumeRole'], Principal: { Service: ['lambda.amazonaws.com'] } },
          ],
        },
        ManagedPolicyArns: [...new Set([...managed, ...declared.managed].map((m) => JSON.stringify(m)))].map(
          (m) => JSON.parse(m) as unknown,
        ),
        Policies: [...declared.documents, ...documents].map((PolicyDocument, i) => ({
          PolicyName: `${id}RolePolicy${i}`,
          PolicyDocument,
        })),
      },
    };
    origins.set(roleId, { display: `${id} (its generated role)`, path: at });
    fn.Role = { 'Fn::GetAtt': [roleId, 'Arn'] };
  }
  out[id] = { Type: 'AWS::Lambda::Function', Properties: fn };
}

/** What one SimpleTable becomes. */
function expandSimpleTable(properties: Json): Json {
  const key = isRecord(properties.PrimaryKey) ? properties.PrimaryKey : {};
  const name = typeof key.Name === 'string' ? key.Name : 'id';
  const type = { String: 'S', Number: 'N', Binary: 'B' }[String(key.Type ?? 'String')] ?? 'S';
  const table: Json = {
    AttributeDefinitions: [{ AttributeName: name, AttributeType: type }],
    KeySchema: [{ AttributeName: name, KeyType: 'HASH' }],
  };
  if (properties.ProvisionedThroughput !== undefined)
    table.ProvisionedThroughput = properties.ProvisionedThroughput;
  else table.BillingMode = 'PAY_PER_REQUEST';
  for (const k of ['TableName', 'SSESpecification', 'PointInTimeRecoverySpecification'])
    if (properties[k] !== undefined) table[k] = properties[k];
  if (isRecord(properties.Tags))
    table.Tags = Object.entries(properties.Tags).map(([Key, Value]) => ({ Key, Value }));
  return { Type: 'AWS::DynamoDB::Table', Properties: table };
}

/** What a SAM application becomes: the nested stack SAM deploys it as (SAM guide, AWS::Serverless::Application). */
function expandApplication(properties: Json): Json {
  const stack: Json = { TemplateURL: properties.Location };
  for (const key of ['Parameters', 'NotificationARNs', 'Tags', 'TimeoutInMinutes'])
    if (properties[key] !== undefined) stack[key] = properties[key];
  return { Type: 'AWS::CloudFormation::Stack', Properties: stack };
}

/**
 * The template with its SAM resources modelled (a template without the SAM transform is returned
 * as it is), and the origin of every resource.
 */
export function expandServerless(template: Json): ExpandedTemplate {
  const resources = isRecord(template.Resources) ? template.Resources : {};
  const origins = new Map<string, ResourceOrigin>(
    Object.keys(resources).map((id) => [id, { display: id, path: ['Resources', id] }]),
  );
  if (!isSamTemplate(template)) return { template, origins };
  const globals = isRecord(template.Globals) ? template.Globals : {};
  const out: Json = {};
  for (const [id, resource] of Object.entries(resources)) {
    if (!isRecord(resource)) {
      out[id] = resource;
      continue;
    }
    const properties = isRecord(resource.Properties) ? resource.Properties : {};
    if (resource.Type === 'AWS::Serverless::Function') {
      const merged = mergeGlobals(globals.Function, properties);
      expandFunction(id, isRecord(merged) ? merged : properties, out, origins);
      // Attributes (DeletionPolicy, Metadata, Condition…) stay on the function.
      out[id] = { ...resource, ...(out[id] as Json) };
    } else if (resource.Type === 'AWS::Serverless::Application') {
      out[id] = { ...resource, ...expandApplication(properties) };
    } else if (resource.Type === 'AWS::Serverless::SimpleTable') {
      const merged = mergeGlobals(globals.SimpleTable, properties);
      out[id] = { ...resource, ...expandSimpleTable(isRecord(merged) ? merged : properties) };
    } else {
      out[id] = resource;
    }
  }
  const { Transform: _transform, Globals: _globals, ...rest } = template;
  return { template: { ...rest, Resources: out }, origins };
}
