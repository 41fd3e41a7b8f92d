/**
 * AWS IAM policy evaluation, played locally: decides whether a request a deployed function makes
 * is allowed by the stack's policies, because moto stores policies but never evaluates them.
 *
 * Why not a package (evaluated on the npm registry): pbac 0.3.2 (MIT, the latest version,
 * published 2024-12-13) evaluates one flat list of statements, so it has no identity-vs-resource
 * split, no same-account identity-OR-resource rule and no KMS key-policy rule, and it matches
 * Principal by exact string only (`"*"` and `{"AWS":"*"}` throw a TypeError; a role never matches
 * its assumed-role session). Its schema rejects the string forms of Action and Resource, and
 * action matching is case-sensitive. Run against it: a key absent from the request context is
 * replaced by the key's own name, so `Null`, `...IfExists` and `ForAllValues` on a missing key
 * answer wrongly; `Numeric*` compares JavaScript numbers only, so the JSON value `"10"` never
 * matches; only the first key under an operator is read; and negated operators with several values
 * are ORed where AWS NORs them. The only other evaluator there, @cloud-copilot/iam-simulate, is
 * AGPL-3.0-or-later, so this one is ours.
 *
 * Scope: requests within one account (the stack's), principals that are role sessions or AWS
 * service principals, identity-based policies plus the resource's own policy. Not modelled:
 * permissions boundaries, session policies, SCPs/RCPs, VPC endpoint policies, grants, ACLs and
 * cross-account access. The rules, and the pages they come from
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/…):
 * - reference_policies_evaluation-logic.html, …_policy-eval-basics.html: an explicit Deny in any
 *   policy wins; otherwise, within one account, an Allow in an identity-based policy OR in the
 *   resource-based policy suffices. IAM role trust policies and KMS key policies are the exceptions.
 * - reference_policies_elements_principal.html: an account principal (`arn:aws:iam::ACCOUNT:root`
 *   or the bare id) "delegates authority to the account" — it grants no principal anything by
 *   itself, while a Deny naming the account applies to every principal in it
 *   (id_roles_create_policy-examples.html, "Cannot delegate access when the account is denied").
 *   `"*"` and `{"AWS":"*"}` are equivalent and match every principal.
 * - kms/latest/developerguide/key-policy-default.html: "Unlike other AWS resource policies, an AWS
 *   KMS key policy does not automatically give permission to the account or any of its users";
 *   an account-principal statement lets IAM policies grant what that statement covers, and without
 *   it IAM Allows are ineffective while IAM Denies still apply. key-policy-overview.html: a key
 *   policy statement without Resource has no effect.
 * - troubleshoot_access-denied.html: the reason strings of {@link Decision}.
 */
import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

export type Effect = 'Allow' | 'Deny';

export interface PolicyStatement {
  Sid?: string;
  Effect: Effect;
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Principal?: '*' | Record<string, string | string[]>;
  NotPrincipal?: '*' | Record<string, string | string[]>;
  Condition?: Record<string, Record<string, unknown>>;
}

export interface PolicyDocument {
  Version?: string;
  Statement: PolicyStatement | PolicyStatement[];
}

/** A policy with where it came from, e.g. the template logical id 'PaymentConsumerRoleDefaultPolicyAB12'. */
export interface NamedPolicy {
  readonly id: string;
  readonly document: PolicyDocument;
}

/** Who makes the request. */
export type RequestPrincipal =
  | {
      readonly type: 'role';
      /** arn:aws:iam::123456789012:role/name (a path is allowed). */
      readonly roleArn: string;
      readonly sessionName: string;
      readonly accountId: string;
      /** The role's unique id (AROA…), for aws:userid; a stable stand-in derived from the ARN when absent. */
      readonly roleId?: string;
    }
  | { readonly type: 'service'; readonly service: string /* cloudwatch.amazonaws.com */ };

export type ContextValue = string | number | boolean | readonly string[];

export interface AuthorizationRequest {
  readonly principal: RequestPrincipal;
  readonly action: string; // 'sqs:SendMessage'
  readonly resource: string; // an ARN, or '*'
  /**
   * Request context keys (case-insensitive names), e.g. aws:SecureTransport, aws:SourceArn,
   * aws:SourceAccount, aws:PrincipalArn. The evaluator adds aws:PrincipalArn, aws:PrincipalAccount,
   * aws:PrincipalType, aws:userid for role sessions and aws:PrincipalServiceName for services when
   * absent, and aws:PrincipalIsAWSService for both. `undefined` means absent.
   */
  readonly context?: Readonly<Record<string, ContextValue | undefined>>;
}

export interface StatementRef {
  readonly policyId: string;
  readonly kind: 'identity' | 'resource';
  readonly index: number;
  readonly sid?: string;
}

export interface Decision {
  readonly decision: 'allow' | 'explicit-deny' | 'implicit-deny';
  /** Statements that allowed it (every matching Allow that counts); empty unless allowed. */
  readonly allowedBy: readonly StatementRef[];
  /** Statements that denied it. */
  readonly deniedBy: readonly StatementRef[];
  /**
   * The tail AWS puts in its AccessDenied message ('because no identity-based policy allows the
   * sqs:SendMessage action', 'with an explicit deny in a resource-based policy'), or for an allow a
   * short note of which policy type allowed it.
   */
  readonly reason: string;
}

export interface PoliciesInForce {
  readonly identity: readonly NamedPolicy[]; // empty for a service principal
  readonly resource?: NamedPolicy; // the queue/topic/key policy of the resource, when it has one
  /** The resource's account (same-account evaluation only is needed). */
  readonly resourceAccountId: string;
  /** 'kms': the key policy must allow, directly or by delegating to IAM (see AWS KMS docs). @default 'standard' */
  readonly resourceKind?: 'standard' | 'kms';
}

/** A policy document that is malformed, or uses something this evaluator does not know. */
export class PolicyError extends Error {
  override readonly name = 'PolicyError';
}

// ---------------------------------------------------------------------------------------------
// Parsing and validation
// ---------------------------------------------------------------------------------------------

type PolicyKind = 'identity' | 'resource';

const DOCUMENT_KEYS = new Set(['Version', 'Id', 'Statement']);
const STATEMENT_KEYS = new Set([
  'Sid',
  'Effect',
  'Action',
  'NotAction',
  'Resource',
  'NotResource',
  'Principal',
  'NotPrincipal',
  'Condition',
]);
/** reference_policies_elements_version.html: the two versions of the policy language. */
const VERSIONS = new Set(['2012-10-17', '2008-10-17']);
/** Principal element keys AWS defines; only AWS and Service can match the principals modelled here. */
const PRINCIPAL_KEYS = new Set(['AWS', 'Service', 'Federated', 'CanonicalUser']);

/** Parses/validates a policy document (string or object) and throws PolicyError naming what is wrong. */
export function parsePolicy(document: unknown, id: string): NamedPolicy {
  let value = document;
  if (typeof document === 'string') {
    try {
      value = JSON.parse(document) as unknown;
    } catch (error) {
      throw new PolicyError(`policy ${id}: not valid JSON (${(error as Error).message})`);
    }
  }
  compileDocument(value, id, undefined);
  return { id, document: value as PolicyDocument };
}

interface CompiledPrincipal {
  readonly any: boolean; // '*', or "*" among the AWS values
  readonly aws: readonly string[];
  readonly service: readonly string[];
}

interface CompiledStatement {
  readonly ref: StatementRef;
  readonly effect: Effect;
  readonly action: { readonly not: boolean; readonly patterns: readonly RegExp[] };
  /** Raw patterns: policy variables are resolved per request. Absent: no Resource nor NotResource. */
  readonly resource?: { readonly not: boolean; readonly patterns: readonly string[] };
  readonly principal?: { readonly not: boolean; readonly spec: CompiledPrincipal };
  readonly conditions: readonly CompiledCondition[];
  /** Policy variables are substituted only under Version 2012-10-17 (reference_policies_variables.html). */
  readonly variables: boolean;
}

function compileDocument(value: unknown, id: string, kind: PolicyKind | undefined): CompiledStatement[] {
  const where = `policy ${id}`;
  if (!isRecord(value)) throw new PolicyError(`${where}: a policy document is a JSON object`);
  for (const key of Object.keys(value)) {
    if (!DOCUMENT_KEYS.has(key)) throw new PolicyError(`${where}: unknown top-level element "${key}"`);
  }
  const version = value['Version'];
  if (version !== undefined && (typeof version !== 'string' || !VERSIONS.has(version))) {
    throw new PolicyError(
      `${where}: Version must be "2012-10-17" or "2008-10-17", not ${JSON.stringify(version)}`,
    );
  }
  const raw = value['Statement'];
  if (raw === undefined) throw new PolicyError(`${where}: no Statement`);
  const statements: unknown[] = Array.isArray(raw) ? raw : [raw];
  return statements.map((statement, index) =>
    compileStatement(statement, id, index, kind ?? 'identity', kind !== undefined, version === '2012-10-17'),
  );
}

function compileStatement(
  value: unknown,
  policyId: string,
  index: number,
  kind: PolicyKind,
  kindKnown: boolean,
  variables: boolean,
): CompiledStatement {
  let where = `policy ${policyId}, statement ${index}`;
  if (!isRecord(value)) throw new PolicyError(`${where}: a statement is a JSON object`);
  const sid = value['Sid'];
  if (sid !== undefined && typeof sid !== 'string') throw new PolicyError(`${where}: Sid must be a string`);
  if (sid !== undefined) where += ` (${sid})`;
  const fail = (problem: string): never => {
    throw new PolicyError(`${where}: ${problem}`);
  };
  for (const key of Object.keys(value)) {
    if (!STATEMENT_KEYS.has(key)) fail(`unknown element "${key}"`);
  }
  const rawEffect = value['Effect'];
  // reference_policies_elements_effect.html: "The Effect value is case sensitive."
  const effect: Effect =
    rawEffect === 'Allow' || rawEffect === 'Deny'
      ? rawEffect
      : fail(`Effect must be "Allow" or "Deny", not ${JSON.stringify(rawEffect)}`);

  const action = pickStrings(value, 'Action', 'NotAction', fail);
  if (action === undefined) return fail('a statement needs Action or NotAction');
  const actionPatterns = action.values.map((pattern) => {
    if (pattern !== '*' && !/^[A-Za-z0-9-]+:.+$/.test(pattern)) {
      fail(`"${pattern}" is not an action ("service:Action", wildcards allowed, or "*")`);
    }
    return patternRegExp(literalPieces(pattern, true), 'glob-ci');
  });

  const resource = pickStrings(value, 'Resource', 'NotResource', fail);
  const picked = pickElement(value, 'Principal', 'NotPrincipal', fail);
  const principal = picked && { not: picked.not, spec: compilePrincipal(picked.raw, picked.name, fail) };

  // reference_policies_elements_notprincipal.html: "NotPrincipal must be used with "Effect":"Deny".
  // Using it with "Effect":"Allow" is not supported."
  if (principal?.not && effect === 'Allow') fail('NotPrincipal must be used with "Effect": "Deny"');
  if (kindKnown && kind === 'identity') {
    // reference_policies_elements_principal.html: "You cannot use the Principal element in an
    // identity-based policy"; reference_policies_elements_resource.html: "Statements must include
    // either a Resource or a NotResource element."
    if (principal !== undefined)
      fail(`${principal.not ? 'NotPrincipal' : 'Principal'} in an identity-based policy`);
    if (resource === undefined) fail('a statement in an identity-based policy needs Resource or NotResource');
  }
  if (kindKnown && kind === 'resource' && principal === undefined) {
    fail('a statement in a resource-based policy needs Principal or NotPrincipal');
  }

  return {
    ref: { policyId, kind, index, ...(sid === undefined ? {} : { sid }) },
    effect,
    action: { not: action.not, patterns: actionPatterns },
    ...(resource === undefined ? {} : { resource: { not: resource.not, patterns: resource.values } }),
    ...(principal === undefined ? {} : { principal: { not: principal.not, spec: principal.spec } }),
    conditions: compileConditions(value['Condition'], fail),
    variables,
  };
}

/** The one of `positive`/`negative` a statement has, if any ("not both"). */
function pickElement(
  statement: Record<string, unknown>,
  positive: string,
  negative: string,
  fail: (problem: string) => never,
): { not: boolean; name: string; raw: unknown } | undefined {
  const has = statement[positive] !== undefined;
  const hasNot = statement[negative] !== undefined;
  if (has && hasNot) fail(`a statement has ${positive} or ${negative}, not both`);
  if (!has && !hasNot) return undefined;
  const name = has ? positive : negative;
  return { not: hasNot, name, raw: statement[name] };
}

function pickStrings(
  statement: Record<string, unknown>,
  positive: string,
  negative: string,
  fail: (problem: string) => never,
): { not: boolean; values: string[] } | undefined {
  const element = pickElement(statement, positive, negative, fail);
  return element && { not: element.not, values: stringList(element.raw, element.name, fail) };
}

function compilePrincipal(raw: unknown, name: string, fail: (problem: string) => never): CompiledPrincipal {
  if (raw === '*') return { any: true, aws: [], service: [] };
  if (!isRecord(raw))
    return fail(`${name} must be "*" or an object such as {"AWS": "…"} or {"Service": "…"}`);
  const aws: string[] = [];
  const service: string[] = [];
  for (const [key, values] of Object.entries(raw)) {
    if (!PRINCIPAL_KEYS.has(key)) fail(`${name} has an unknown principal type "${key}"`);
    const list = stringList(values, `${name}.${key}`, fail);
    if (key === 'AWS') aws.push(...list);
    if (key === 'Service') service.push(...list);
  }
  return { any: aws.includes('*'), aws, service };
}

function stringList(raw: unknown, name: string, fail: (problem: string) => never): string[] {
  const list = Array.isArray(raw) ? (raw as unknown[]) : [raw];
  if (list.length === 0) fail(`${name} is an empty list`);
  return list.map((item) => (typeof item === 'string' ? item : fail(`${name} values must be strings`)));
}

// ---------------------------------------------------------------------------------------------
// Conditions (reference_policies_elements_condition_operators.html)
// ---------------------------------------------------------------------------------------------

type Family =
  | 'string'
  | 'stringIgnoreCase'
  | 'stringLike'
  | 'numeric'
  | 'date'
  | 'bool'
  | 'binary'
  | 'ip'
  | 'arn'
  | 'null';
type Comparison = 'eq' | 'lt' | 'le' | 'gt' | 'ge';

interface BaseOperator {
  readonly family: Family;
  /** Negated matching: several policy values are NORed, and a missing key makes the condition true. */
  readonly negated: boolean;
  readonly comparison?: Comparison;
}

const BASE_OPERATORS: Readonly<Record<string, BaseOperator>> = {
  StringEquals: { family: 'string', negated: false },
  StringNotEquals: { family: 'string', negated: true },
  StringEqualsIgnoreCase: { family: 'stringIgnoreCase', negated: false },
  StringNotEqualsIgnoreCase: { family: 'stringIgnoreCase', negated: true },
  StringLike: { family: 'stringLike', negated: false },
  StringNotLike: { family: 'stringLike', negated: true },
  NumericEquals: { family: 'numeric', negated: false, comparison: 'eq' },
  NumericNotEquals: { family: 'numeric', negated: true, comparison: 'eq' },
  NumericLessThan: { family: 'numeric', negated: false, comparison: 'lt' },
  NumericLessThanEquals: { family: 'numeric', negated: false, comparison: 'le' },
  NumericGreaterThan: { family: 'numeric', negated: false, comparison: 'gt' },
  NumericGreaterThanEquals: { family: 'numeric', negated: false, comparison: 'ge' },
  DateEquals: { family: 'date', negated: false, comparison: 'eq' },
  DateNotEquals: { family: 'date', negated: true, comparison: 'eq' },
  DateLessThan: { family: 'date', negated: false, comparison: 'lt' },
  DateLessThanEquals: { family: 'date', negated: false, comparison: 'le' },
  DateGreaterThan: { family: 'date', negated: false, comparison: 'gt' },
  DateGreaterThanEquals: { family: 'date', negated: false, comparison: 'ge' },
  Bool: { family: 'bool', negated: false },
  BinaryEquals: { family: 'binary', negated: false },
  IpAddress: { family: 'ip', negated: false },
  NotIpAddress: { family: 'ip', negated: true },
  // "The ArnEquals and ArnLike condition operators behave identically."
  ArnEquals: { family: 'arn', negated: false },
  ArnLike: { family: 'arn', negated: false },
  ArnNotEquals: { family: 'arn', negated: true },
  ArnNotLike: { family: 'arn', negated: true },
  Null: { family: 'null', negated: false },
};

/**
 * Families whose policy values may hold policy variables: the operators page allows them with the
 * String, Boolean and ARN operators and not with Numeric, Date, Binary, IP address or Null.
 * (reference_policies_variables.html omits Boolean; the operators page is followed here.)
 */
const VARIABLE_FAMILIES = new Set<Family>(['string', 'stringIgnoreCase', 'stringLike', 'arn', 'bool']);

interface CompiledCondition {
  readonly operator: string;
  readonly base: BaseOperator;
  readonly set?: 'all' | 'any';
  readonly ifExists: boolean;
  /** The context key, lower-cased: key names are case-insensitive. */
  readonly key: string;
  readonly values: readonly string[];
}

function compileConditions(raw: unknown, fail: (problem: string) => never): CompiledCondition[] {
  if (raw === undefined) return [];
  if (!isRecord(raw)) return fail('Condition must be an object of operators');
  const compiled: CompiledCondition[] = [];
  for (const [operator, block] of Object.entries(raw)) {
    const parsed = parseOperator(operator, fail);
    if (!isRecord(block) || Object.keys(block).length === 0) {
      fail(`condition ${operator} must map one or more context keys to values`);
    }
    for (const [key, rawValues] of Object.entries(block as Record<string, unknown>)) {
      const list = Array.isArray(rawValues) ? (rawValues as unknown[]) : [rawValues];
      if (list.length === 0) fail(`condition ${operator} ${key} has no values`);
      const values = list.map((item) =>
        typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean'
          ? String(item)
          : fail(`condition ${operator} ${key}: values must be strings, numbers or booleans`),
      );
      for (const value of values)
        validateConditionValue(parsed.base, value, `condition ${operator} ${key}`, fail);
      compiled.push({ operator, ...parsed, key: key.toLowerCase(), values });
    }
  }
  return compiled;
}

function parseOperator(
  operator: string,
  fail: (problem: string) => never,
): { base: BaseOperator; set?: 'all' | 'any'; ifExists: boolean } {
  let name = operator;
  let set: 'all' | 'any' | undefined;
  const qualified = /^(ForAllValues|ForAnyValue):(.+)$/.exec(operator);
  if (qualified) {
    set = qualified[1] === 'ForAllValues' ? 'all' : 'any';
    name = qualified[2] ?? '';
  }
  const ifExists = name.endsWith('IfExists') && name !== 'IfExists';
  if (ifExists) name = name.slice(0, -'IfExists'.length);
  const base = BASE_OPERATORS[name];
  if (base === undefined) return fail(`unknown condition operator "${operator}"`);
  // "You can add IfExists to the end of any condition operator name except the Null condition."
  if (base.family === 'null' && (ifExists || set !== undefined)) {
    fail(`"${operator}": Null takes neither IfExists nor a set operator`);
  }
  return { base, ...(set === undefined ? {} : { set }), ifExists };
}

/** Values that can be checked without the request: a malformed one is an error, not a non-match. */
function validateConditionValue(
  base: BaseOperator,
  value: string,
  where: string,
  fail: (problem: string) => never,
): void {
  const variable = value.includes('${');
  switch (base.family) {
    case 'numeric':
      if (parseNumber(value) === undefined) fail(`${where}: "${value}" is not a number`);
      return;
    case 'date':
      if (parseDate(value) === undefined) fail(`${where}: "${value}" is not an ISO 8601 date or epoch time`);
      return;
    case 'ip':
      if (parseCidr(value) === undefined) fail(`${where}: "${value}" is not an IP address or CIDR range`);
      return;
    case 'bool':
      if (!variable && parseBool(value) === undefined) fail(`${where}: "${value}" is not true or false`);
      return;
    case 'null':
      if (parseBool(value) === undefined) fail(`${where}: "${value}" is not true or false`);
      return;
    case 'binary':
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) fail(`${where}: "${value}" is not base-64`);
      return;
    default:
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// The request context
// ---------------------------------------------------------------------------------------------

interface Caller {
  readonly type: 'role' | 'service';
  /** For messages: the assumed-role session ARN, or the service principal. */
  readonly display: string;
  readonly partition: string;
  readonly accountId?: string;
  readonly roleArn?: string;
  readonly sessionArn?: string;
  readonly service?: string;
}

const ROLE_ARN = /^arn:([a-z-]+):iam::(\d{12}):role\/(?:[^/]+\/)*([\w+=,.@-]+)$/;

function identify(principal: RequestPrincipal, resourceAccountId: string): Caller {
  if (principal.type === 'service') {
    return { type: 'service', display: principal.service, partition: 'aws', service: principal.service };
  }
  const match = ROLE_ARN.exec(principal.roleArn);
  if (!match) throw new Error(`not a role ARN: ${principal.roleArn}`);
  const [, partition = 'aws', account, name = ''] = match;
  if (account !== principal.accountId) {
    throw new Error(`role ${principal.roleArn} is not in account ${principal.accountId}`);
  }
  if (principal.accountId !== resourceAccountId) {
    throw new Error(
      `cross-account request (principal in ${principal.accountId}, resource in ${resourceAccountId}): only same-account evaluation is modelled`,
    );
  }
  const sessionArn = assumedRoleArn(partition, principal.accountId, name, principal.sessionName);
  return {
    type: 'role',
    display: sessionArn,
    partition,
    accountId: principal.accountId,
    roleArn: principal.roleArn,
    sessionArn,
  };
}

/** reference_policies_elements_principal.html, "Assumed-role session principals". */
function assumedRoleArn(partition: string, accountId: string, roleName: string, sessionName: string): string {
  return `arn:${partition}:sts::${accountId}:assumed-role/${roleName}/${sessionName}`;
}

type Context = ReadonlyMap<string, ContextValue>;

function buildContext(request: AuthorizationRequest): Context {
  const context = new Map<string, ContextValue>();
  for (const [key, value] of Object.entries(request.context ?? {})) {
    if (value === undefined) continue;
    const valid =
      typeof value === 'string' ||
      typeof value === 'number' ||
      typeof value === 'boolean' ||
      (Array.isArray(value) && value.every((item) => typeof item === 'string'));
    if (!valid) throw new Error(`context key ${key}: values are strings, numbers, booleans or string lists`);
    const name = key.toLowerCase();
    if (context.has(name)) throw new Error(`context key ${key} is given twice (names are case-insensitive)`);
    context.set(name, value);
  }
  const add = (key: string, value: ContextValue): void => {
    if (!context.has(key)) context.set(key, value);
  };
  const principal = request.principal;
  if (principal.type === 'role') {
    // reference_policies_condition-keys.html: "For IAM roles, the request context returns the ARN of
    // the role, not the ARN of the user that assumed the role." aws:userid of a role session is
    // role-id:caller-specified-role-name (reference_policies_variables.html, principal key values).
    add('aws:principalarn', principal.roleArn);
    add('aws:principalaccount', principal.accountId);
    add('aws:principaltype', 'AssumedRole');
    add('aws:userid', `${principal.roleId ?? standInRoleId(principal.roleArn)}:${principal.sessionName}`);
    add('aws:principalisawsservice', false);
  } else {
    add('aws:principalservicename', principal.service);
    add('aws:principalisawsservice', true);
  }
  return context;
}

/** A role id of AWS's shape (AROA + 17 characters), stable for a role ARN. */
function standInRoleId(roleArn: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const digest = createHash('sha256').update(roleArn).digest();
  let id = 'AROA';
  for (let i = 0; i < 17; i += 1) id += alphabet[(digest[i] ?? 0) % 32];
  return id;
}

/** A single-valued key as a policy variable's value; multivalued keys cannot be variables. */
function variableValue(context: Context, key: string): string | undefined {
  const value = context.get(key.toLowerCase());
  if (value === undefined || Array.isArray(value)) return undefined;
  return String(value);
}

// ---------------------------------------------------------------------------------------------
// Patterns and policy variables
// ---------------------------------------------------------------------------------------------

type Piece = { readonly literal: string } | { readonly wildcard: '*' | '?' };

function literalPieces(raw: string, wildcards: boolean): Piece[] {
  const pieces: Piece[] = [];
  let literal = '';
  for (const char of raw) {
    if (wildcards && (char === '*' || char === '?')) {
      if (literal) pieces.push({ literal });
      literal = '';
      pieces.push({ wildcard: char });
    } else {
      literal += char;
    }
  }
  if (literal) pieces.push({ literal });
  return pieces;
}

/**
 * Where the resource portion of a Resource/NotResource pattern begins: just after its fifth colon,
 * not counting colons inside `${…}` (a variable's name has one). reference_policies_variables.html:
 * "You can use a policy variable in the Resource element, but only in the resource portion of the
 * ARN. This portion of the ARN appears after the fifth colon (:). You can't use a variable to replace
 * parts of the ARN before the fifth colon, such as the service or account." A pattern with fewer
 * than five colons has no resource portion, so no variable in it is substituted.
 */
function resourcePortionStart(raw: string): number {
  let colons = 0;
  for (let i = 0; i < raw.length; i += 1) {
    if (raw.startsWith('${', i)) {
      const close = raw.indexOf('}', i);
      if (close === -1) break;
      i = close;
    } else if (raw[i] === ':' && ++colons === 5) {
      return i + 1;
    }
  }
  return raw.length + 1;
}

/**
 * Splits a policy string into literals and wildcards, substituting policy variables
 * (reference_policies_variables.html): `${key}`, `${key, 'default'}`, and `${*}`, `${?}`, `${$}` for
 * a literal `*`, `?`, `$`. Returns undefined when a variable has no value and no default: "the value
 * is effectively null. There is no equal or like value." Substituted values are literal text.
 * Variables that start before `from` (a Resource's partition, service, region and account, see
 * {@link resourcePortionStart}) are not substituted: the page says a variable can't be used there,
 * so its text is compared as written, and `arn:aws:sqs:*:${aws:PrincipalAccount}:*` matches no real
 * queue (an account id is 12 digits, never `${…}`).
 */
function resolvePieces(
  raw: string,
  context: Context | undefined,
  wildcards: boolean,
  from = 0,
): Piece[] | undefined {
  if (context === undefined || !raw.includes('${')) return literalPieces(raw, wildcards);
  const pieces: Piece[] = [];
  const variable = /\$\{([^}]*)\}/g;
  let last = 0;
  for (let match = variable.exec(raw); match !== null; match = variable.exec(raw)) {
    pieces.push(...literalPieces(raw.slice(last, match.index), wildcards));
    last = match.index + match[0].length;
    if (match.index < from) {
      pieces.push({ literal: match[0] });
      continue;
    }
    const body = (match[1] ?? '').trim();
    if (body === '*' || body === '?' || body === '$') {
      pieces.push({ literal: body });
      continue;
    }
    const parts = /^([^,]+?)\s*(?:,\s*'([^']*)')?$/.exec(body);
    const value = parts?.[1] === undefined ? undefined : (variableValue(context, parts[1]) ?? parts[2]);
    if (value === undefined) return undefined;
    if (value) pieces.push({ literal: value });
  }
  pieces.push(...literalPieces(raw.slice(last), wildcards));
  return pieces;
}

type PatternMode = 'glob' | 'glob-ci' | 'resource' | 'arn';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * - glob / glob-ci: `*` any run of characters, `?` any one (StringLike; Action, case-insensitive).
 * - resource: wildcards stay "within the individual segments of an ARN (the parts separated by
 *   colons)", except that a `*` that is the last character of a segment "can expand to match beyond
 *   the colon boundaries" (reference_policies_elements_resource.html).
 * - arn: "Each of the six colon-delimited components of the ARN is checked separately": wildcards in
 *   the first five components never cross a colon; the sixth (resource) component is the rest.
 */
function patternRegExp(pieces: readonly Piece[], mode: PatternMode): RegExp {
  let source = '';
  let colons = 0;
  pieces.forEach((piece, i) => {
    if ('literal' in piece) {
      source += escapeRegExp(piece.literal);
      colons += piece.literal.split(':').length - 1;
      return;
    }
    const next = pieces[i + 1];
    const segmentEnd = next === undefined || ('literal' in next && next.literal.startsWith(':'));
    let free: boolean; // may the wildcard match a colon?
    if (mode === 'resource') free = piece.wildcard === '*' && segmentEnd;
    else if (mode === 'arn') free = colons >= 5;
    else free = true;
    if (piece.wildcard === '*') source += free ? '.*' : '[^:]*';
    else source += free ? '.' : '[^:]';
  });
  return new RegExp(`^${source}$`, mode === 'glob-ci' ? 'is' : 's');
}

/** Whether an Action element's pattern matches `action`, as evaluate() matches it (case-insensitive wildcards). */
export function actionPatternMatches(pattern: string, action: string): boolean {
  return patternRegExp(literalPieces(pattern, true), 'glob-ci').test(action);
}

/** Whether a Resource element's pattern (no policy variables) matches `resource`, as evaluate() matches it. */
export function resourcePatternMatches(pattern: string, resource: string): boolean {
  return patternRegExp(literalPieces(pattern, true), 'resource').test(resource);
}

function piecesText(pieces: readonly Piece[]): string {
  return pieces.map((piece) => ('literal' in piece ? piece.literal : piece.wildcard)).join('');
}

// ---------------------------------------------------------------------------------------------
// Value parsing
// ---------------------------------------------------------------------------------------------

function parseNumber(value: string): number | undefined {
  return /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(value.trim()) ? Number(value) : undefined;
}

/**
 * W3C ISO 8601 profile (a time without a zone is taken as UTC) or epoch seconds; four digits alone
 * are a year ("YYYY"), not an epoch time.
 */
function parseDate(value: string): number | undefined {
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text) && text.length !== 4) return Number(text) * 1000;
  const iso = /^(\d{4})(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/.exec(text);
  if (!iso) return undefined;
  const zoned = iso[4] !== undefined && iso[7] === undefined ? `${text}Z` : text;
  const ms = Date.parse(zoned);
  return Number.isNaN(ms) ? undefined : ms;
}

function parseBool(value: string): boolean | undefined {
  const lower = value.trim().toLowerCase();
  return lower === 'true' ? true : lower === 'false' ? false : undefined;
}

interface Cidr {
  readonly v6: boolean;
  readonly network: bigint;
  readonly bits: number;
}

function parseIp(text: string): { v6: boolean; value: bigint } | undefined {
  if (isIPv4(text)) {
    return {
      v6: false,
      value: text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n),
    };
  }
  if (!isIPv6(text)) return undefined;
  let address = text;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (dotted?.[1] !== undefined) {
    const v4 = parseIp(dotted[1]);
    if (v4 === undefined) return undefined;
    address = `${address.slice(0, -dotted[1].length)}${(v4.value >> 16n).toString(16)}:${(v4.value & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0');
  const groups = tail === undefined ? left : [...left, ...zeros, ...right];
  if (groups.length !== 8) return undefined;
  return { v6: true, value: groups.reduce((acc, group) => (acc << 16n) | BigInt(parseInt(group, 16)), 0n) };
}

/** "If you specify an IP address without the associated routing prefix, IAM uses the default prefix value of /32." */
function parseCidr(text: string): Cidr | undefined {
  const [address = '', prefix, extra] = text.trim().split('/');
  if (extra !== undefined) return undefined;
  const ip = parseIp(address);
  if (ip === undefined) return undefined;
  const width = ip.v6 ? 128 : 32;
  const bits = prefix === undefined ? width : /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
  if (!(bits >= 0 && bits <= width)) return undefined;
  return { v6: ip.v6, network: ip.value >> BigInt(width - bits), bits };
}

function inCidr(text: string, cidr: Cidr): boolean {
  const ip = parseIp(text.trim());
  if (ip === undefined || ip.v6 !== cidr.v6) return false;
  return ip.value >> BigInt((cidr.v6 ? 128 : 32) - cidr.bits) === cidr.network;
}

function compare(left: number, right: number, comparison: Comparison): boolean {
  switch (comparison) {
    case 'eq':
      return left === right;
    case 'lt':
      return left < right;
    case 'le':
      return left <= right;
    case 'gt':
      return left > right;
    case 'ge':
      return left >= right;
  }
}

// ---------------------------------------------------------------------------------------------
// Condition evaluation
// ---------------------------------------------------------------------------------------------

/** The positive form of the operator for one request value and one policy value. */
function positiveMatch(
  condition: CompiledCondition,
  requestValue: string,
  policyValue: string,
  context: Context | undefined,
): boolean {
  const family = condition.base.family;
  const variables = VARIABLE_FAMILIES.has(family) ? context : undefined;
  switch (family) {
    case 'string':
    case 'stringIgnoreCase': {
      const pieces = resolvePieces(policyValue, variables, false);
      if (pieces === undefined) return false;
      const text = piecesText(pieces);
      return family === 'string' ? requestValue === text : requestValue.toLowerCase() === text.toLowerCase();
    }
    case 'stringLike':
    case 'arn': {
      const pieces = resolvePieces(policyValue, variables, true);
      return (
        pieces !== undefined && patternRegExp(pieces, family === 'arn' ? 'arn' : 'glob').test(requestValue)
      );
    }
    case 'bool': {
      const pieces = resolvePieces(policyValue, variables, false);
      const want = pieces === undefined ? undefined : parseBool(piecesText(pieces));
      return want !== undefined && parseBool(requestValue) === want;
    }
    case 'numeric': {
      const left = parseNumber(requestValue);
      const right = parseNumber(policyValue);
      return (
        left !== undefined && right !== undefined && compare(left, right, condition.base.comparison ?? 'eq')
      );
    }
    case 'date': {
      const left = parseDate(requestValue);
      const right = parseDate(policyValue);
      return (
        left !== undefined && right !== undefined && compare(left, right, condition.base.comparison ?? 'eq')
      );
    }
    case 'ip': {
      const cidr = parseCidr(policyValue);
      return cidr !== undefined && inCidr(requestValue, cidr);
    }
    case 'binary':
      return Buffer.from(requestValue, 'base64').equals(Buffer.from(policyValue, 'base64'));
    case 'null':
      return false; // handled by the caller
  }
}

/**
 * One condition key under one operator. Key absent from the context
 * (reference_policies_elements_condition_operators.html): "the values do not match and the condition
 * is false. If the policy condition requires that the key is not matched, such as StringNotLike or
 * ArnNotLike, and the right key is not present, the condition is true", except for ...IfExists (true
 * when absent) and Null. Several policy values are ORed, or NORed for negated operators
 * (reference_policies_multi-value-conditions.html). ForAllValues is true when the key is absent or
 * empty, ForAnyValue false (same page), with or without IfExists. A list value without a set
 * operator counts as matching if any of its members does.
 */
function conditionHolds(condition: CompiledCondition, context: Context, variables: boolean): boolean {
  const raw = context.get(condition.key);
  const requestValues = raw === undefined ? [] : Array.isArray(raw) ? raw.map(String) : [String(raw)];
  const absent = requestValues.length === 0;
  if (condition.base.family === 'null') {
    // "true (the key doesn't exist — it is null) or false (the key exists and its value is not null)".
    return condition.values.some((value) => parseBool(value) === absent);
  }
  const vars = variables ? context : undefined;
  const matchesAny = (requestValue: string): boolean =>
    condition.values.some((policyValue) => positiveMatch(condition, requestValue, policyValue, vars));
  const holdsFor = (requestValue: string): boolean =>
    condition.base.negated ? !matchesAny(requestValue) : matchesAny(requestValue);
  // A set operator decides an absent key itself, IfExists or not: ForAnyValue "For no matching
  // context key or a null dataset, the condition returns false"; ForAllValues "also returns true if
  // there are no context keys in the request" (reference_policies_condition-single-vs-multi-valued-
  // context-keys.html). AWS answers so: an Allow with ForAnyValue:StringEqualsIfExists on aws:TagKeys
  // does not allow sqs:ListQueues, a request without tags (re:Post, "ForAnyValue:StringEqualsIfExists
  // behaving unexpectedly").
  if (condition.set === 'all') return absent || requestValues.every(holdsFor);
  if (condition.set === 'any') return !absent && requestValues.some(holdsFor);
  if (absent) return condition.ifExists || condition.base.negated;
  const matched = requestValues.some(matchesAny);
  return condition.base.negated ? !matched : matched;
}

// ---------------------------------------------------------------------------------------------
// Statement matching
// ---------------------------------------------------------------------------------------------

type PrincipalMatch = 'direct' | 'account' | 'none';

function isAccountPrincipal(value: string, caller: Caller): boolean {
  return (
    caller.accountId !== undefined &&
    (value === caller.accountId || value === `arn:${caller.partition}:iam::${caller.accountId}:root`)
  );
}

/** reference_policies_elements_principal.html: no partial wildcards; "*" and {"AWS":"*"} are everyone. */
function matchPrincipal(spec: CompiledPrincipal, caller: Caller): PrincipalMatch {
  if (spec.any) return 'direct';
  if (caller.type === 'service') {
    const service = caller.service?.toLowerCase();
    return spec.service.some((name) => name.toLowerCase() === service) ? 'direct' : 'none';
  }
  if (spec.aws.some((value) => value === caller.roleArn || value === caller.sessionArn)) return 'direct';
  return spec.aws.some((value) => isAccountPrincipal(value, caller)) ? 'account' : 'none';
}

/**
 * Whether a NotPrincipal spares the caller. reference_policies_elements_notprincipal.html: AWS "might
 * validate the account first, then the role, and then the assumed-role user", so the account, the
 * role and the session must all be named; modelled strictly: any one missing and the Deny applies.
 */
function sparedByNotPrincipal(spec: CompiledPrincipal, caller: Caller): boolean {
  if (spec.any) return true;
  if (caller.type === 'service') return matchPrincipal(spec, caller) === 'direct';
  return (
    spec.aws.some((value) => isAccountPrincipal(value, caller)) &&
    spec.aws.includes(caller.roleArn ?? '') &&
    spec.aws.includes(caller.sessionArn ?? '')
  );
}

function actionMatches(statement: CompiledStatement, action: string): boolean {
  const matched = statement.action.patterns.some((pattern) => pattern.test(action));
  return statement.action.not ? !matched : matched;
}

/**
 * "If a variable that has no value in the authorization context is used as part of the Resource or
 * NotResource element of a policy, the resource that includes a policy variable with no value will
 * not match any resource." (reference_policies_variables.html)
 */
function resourceMatches(statement: CompiledStatement, resource: string, context: Context): boolean {
  const spec = statement.resource;
  if (spec === undefined) return true; // a resource policy statement without Resource: this resource
  const vars = statement.variables ? context : undefined;
  const matched = spec.patterns.some((raw) => {
    const pieces = resolvePieces(raw, vars, true, resourcePortionStart(raw));
    return pieces !== undefined && patternRegExp(pieces, 'resource').test(resource);
  });
  return spec.not ? !matched : matched;
}

function conditionsHold(statement: CompiledStatement, context: Context): boolean {
  return statement.conditions.every((condition) => conditionHolds(condition, context, statement.variables));
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

export function evaluate(request: AuthorizationRequest, policies: PoliciesInForce): Decision {
  const caller = identify(request.principal, policies.resourceAccountId);
  const kms = (policies.resourceKind ?? 'standard') === 'kms';
  if (caller.type === 'service' && policies.identity.length > 0) {
    throw new Error('a service principal has no identity-based policies');
  }
  const context = buildContext(request);
  const applies = (statement: CompiledStatement): boolean =>
    actionMatches(statement, request.action) &&
    resourceMatches(statement, request.resource, context) &&
    conditionsHold(statement, context);

  const identityAllows: StatementRef[] = [];
  const identityDenies: StatementRef[] = [];
  for (const policy of policies.identity) {
    for (const statement of compileDocument(policy.document, policy.id, 'identity')) {
      if (!applies(statement)) continue;
      (statement.effect === 'Allow' ? identityAllows : identityDenies).push(statement.ref);
    }
  }

  const directAllows: StatementRef[] = [];
  const delegatingAllows: StatementRef[] = [];
  const resourceDenies: StatementRef[] = [];
  if (policies.resource !== undefined) {
    for (const statement of compileDocument(policies.resource.document, policies.resource.id, 'resource')) {
      if (kms && statement.resource === undefined) continue; // "the policy statement has no effect"
      const principal = statement.principal;
      if (principal === undefined) continue; // compileStatement requires one in a resource policy
      let match: PrincipalMatch;
      if (principal.not) match = sparedByNotPrincipal(principal.spec, caller) ? 'none' : 'direct';
      else match = matchPrincipal(principal.spec, caller);
      if (match === 'none' || !applies(statement)) continue;
      if (statement.effect === 'Deny') resourceDenies.push(statement.ref);
      else (match === 'direct' ? directAllows : delegatingAllows).push(statement.ref);
    }
  }

  if (identityDenies.length > 0 || resourceDenies.length > 0) {
    // "If multiple policy types deny an authorization request, AWS includes only one of those policy
    // types in the error message." (troubleshoot_access-denied.html)
    return {
      decision: 'explicit-deny',
      allowedBy: [],
      deniedBy: [...identityDenies, ...resourceDenies],
      reason: `with an explicit deny in ${identityDenies.length > 0 ? 'an identity-based' : 'a resource-based'} policy`,
    };
  }

  const noIdentity = `because no identity-based policy allows the ${request.action} action`;
  const noResource = `because no resource-based policy allows the ${request.action} action`;
  let allowedBy: StatementRef[];
  let implicitReason: string;
  if (kms) {
    // The key policy must allow: directly, or through an account-principal statement that lets IAM
    // policies grant what it covers (key-policy-default.html).
    const delegated = delegatingAllows.length > 0 && identityAllows.length > 0;
    allowedBy = [...directAllows, ...(delegated ? [...delegatingAllows, ...identityAllows] : [])];
    implicitReason = delegatingAllows.length > 0 ? noIdentity : noResource;
  } else {
    // Same account: identity-based OR resource-based. An account principal in the resource policy
    // grants nothing by itself; it leaves the decision to the identity-based policies.
    allowedBy = [...identityAllows, ...directAllows];
    implicitReason = caller.type === 'service' ? noResource : noIdentity;
  }
  if (allowedBy.length === 0) {
    return { decision: 'implicit-deny', allowedBy: [], deniedBy: [], reason: implicitReason };
  }
  const byIdentity = allowedBy.some((ref) => ref.kind === 'identity');
  const byResource = allowedBy.some((ref) => ref.kind === 'resource');
  const types = [byIdentity ? 'an identity-based policy' : '', byResource ? 'a resource-based policy' : ''];
  return {
    decision: 'allow',
    allowedBy,
    deniedBy: [],
    reason: `allowed by ${types.filter(Boolean).join(' and ')}`,
  };
}

/**
 * The AccessDenied message AWS would give for a denied decision
 * (troubleshoot_access-denied.html: "User: user is not authorized to perform: action on resource:
 * resource because context").
 */
export function accessDeniedMessage(request: AuthorizationRequest, decision: Decision): string {
  if (decision.decision === 'allow') throw new Error('the request was allowed');
  const principal = request.principal;
  let who: string;
  if (principal.type === 'service') {
    who = principal.service;
  } else {
    const [, partition = 'aws', , name = ''] = ROLE_ARN.exec(principal.roleArn) ?? [];
    who = assumedRoleArn(partition, principal.accountId, name, principal.sessionName);
  }
  const on = request.resource === '*' ? '' : ` on resource: ${request.resource}`;
  return `User: ${who} is not authorized to perform: ${request.action}${on} ${decision.reason}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
