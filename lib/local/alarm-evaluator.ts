/**
 * CloudWatch's part, played locally. moto stores metric alarms but never evaluates them, and it
 * has no composite alarms at all. The evaluator collects the datapoints the alarms read (SQS
 * queue attributes it samples, the EMF documents functions print, the platform's invocation
 * results), evaluates every metric alarm with CloudWatch's M-of-N rules and sets its state in moto
 * with SetAlarmState, and keeps the composite alarms (rule and actions suppressor) itself.
 *
 * Differences from CloudWatch, all deliberate:
 * - Periods are aligned to the epoch and only completed periods are evaluated, so a state
 *   changes at most one period (plus one sampling interval) after the data does.
 * - SQS gauges are sampled every `intervalMs`, several times per period; alarms on them use
 *   Maximum (or Minimum/Average), for which that is what CloudWatch's one-per-minute value means.
 * - ApproximateAgeOfOldestMessage is estimated without receiving anything: see
 *   {@link OldestMessageTracker}.
 * - Custom and Lambda metrics are timestamped when the platform sees them, not by the EMF
 *   document's Timestamp, so an injected clock governs everything.
 * - With TreatMissingData `missing`/`ignore` CloudWatch looks back beyond the evaluation range
 *   for datapoints; here only the N periods count (tenang's alarms all use `notBreaching`).
 */
import {
  DescribeAlarmsCommand,
  PutMetricDataCommand,
  SetAlarmStateCommand,
  type CloudWatchClient,
  type MetricAlarm,
  type MetricDatum,
  type PutCompositeAlarmCommandInput,
} from '@aws-sdk/client-cloudwatch';
import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { InvokeResult } from './function-host';

/** An alarm's state, as CloudWatch names it. */
export type AlarmState = 'OK' | 'ALARM' | 'INSUFFICIENT_DATA';

/** Whether an alarm lives in moto (metric) or only here (composite). */
export type AlarmKind = 'metric' | 'composite';

/** One alarm's current state. */
export interface AlarmStatus {
  readonly name: string;
  readonly state: AlarmState;
  readonly kind: AlarmKind;
  /** Composite alarms with an actions suppressor: its actions are held by the suppressor now. */
  readonly suppressed?: boolean;
}

/** One state change, in the order they happened. */
export interface Transition {
  readonly alarm: string;
  readonly kind: AlarmKind;
  readonly from: AlarmState;
  readonly to: AlarmState;
  readonly at: Date;
  readonly reason: string;
}

/** What became of the actions (SNS notifications) an alarm's transition owes. */
export interface AlarmAction {
  readonly alarm: string;
  readonly kind: AlarmKind;
  /** The state whose actions these are. */
  readonly state: AlarmState;
  /** When the transition that owed them happened. */
  readonly transitionAt: Date;
  /** `sent` when they would have run; `suppressed` when the alarm left the state while they were held. */
  readonly outcome: 'sent' | 'suppressed';
  readonly at: Date;
}

/** One notification an alarm action sends (CloudWatch publishing to the action's SNS topic). */
export interface AlarmNotification {
  readonly alarm: string;
  /** arn:aws:cloudwatch:<region>:<account>:alarm:<name>, CloudWatch's aws:SourceArn for the publish. */
  readonly alarmArn?: string;
  readonly kind: AlarmKind;
  readonly state: AlarmState;
  /** The action's ARN (an SNS topic). */
  readonly target: string;
  readonly reason: string;
  readonly at: Date;
}

/** What became of one notification. */
export interface AlarmDelivery extends AlarmNotification {
  readonly outcome: 'delivered' | 'failed';
  /** Why it failed (e.g. AuthorizationError: CloudWatch may not publish to the topic). */
  readonly error?: string;
}

/** What the evaluator reads and writes. */
export interface AlarmEvaluatorDeps {
  /**
   * Delivers an alarm action as CloudWatch does (the local platform publishes to the SNS topic as
   * cloudwatch.amazonaws.com, checked against the topic policy); a rejection is recorded as a
   * failed delivery, as CloudWatch records it in the alarm history. @default actions are recorded, not delivered
   */
  readonly notify?: (notification: AlarmNotification) => Promise<void>;
  /** Where the metric alarms are (DescribeAlarms, SetAlarmState, PutMetricData). */
  readonly cloudwatch: CloudWatchClient;
  /** Where the alarmed queues are (GetQueueUrl, GetQueueAttributes). */
  readonly sqs: SQSClient;
  /** Composite alarm definitions, resolved (provisionAlarms returns them). @default [] */
  readonly compositeAlarms?: readonly PutCompositeAlarmCommandInput[];
  /** Only metric alarms whose name starts with this are evaluated. @default every alarm in the emulator */
  readonly alarmNamePrefix?: string;
  /** The evaluation clock, epoch milliseconds. @default Date.now */
  readonly now?: () => number;
  /** Every alarm period becomes this many seconds (short scenarios, tests). @default each alarm's own period */
  readonly periodSeconds?: number;
  /** Multiplies every period and suppressor wait/extension (1/30 turns 60 s into 2 s); ignored with periodSeconds. @default 1 */
  readonly periodScale?: number;
  /** How often start() samples the queues and evaluates, ms. @default 1000 */
  readonly intervalMs?: number;
  /** Also PutMetricData each completed period's datapoints, so GetMetricStatistics shows them. @default true */
  readonly publishMetrics?: boolean;
  /** Messages known consumers have deleted from a queue so far (cumulative); sharpens the oldest-age estimate. @default unknown */
  readonly deletedMessages?: (queueName: string) => number | undefined;
  /** The stream mapping's IteratorAge of a function when it is invoked, ms. @default no IteratorAge */
  readonly iteratorAgeMs?: (functionName: string) => number | undefined;
  /** Problems that do not stop evaluation (invalid EMF, the background loop's errors). @default discarded */
  readonly log?: (line: string) => void;
}

/** An alarm definition the local evaluator cannot evaluate (unsupported expression, operator, rule…). */
export class AlarmDefinitionError extends Error {
  override readonly name: string = 'AlarmDefinitionError';

  /** Creates the error; pass the underlying failure as `cause`. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** One evaluation met problems; every other alarm was still evaluated. */
export class AlarmEvaluationError extends Error {
  override readonly name: string = 'AlarmEvaluationError';

  /** Creates the error from every problem of the evaluation. */
  constructor(public readonly problems: readonly string[]) {
    super(`alarm evaluation: ${problems.length} problem(s):\n- ${problems.join('\n- ')}`);
  }
}

/** A line carried an `_aws` EMF directive CloudWatch would reject. */
export class EmfFormatError extends Error {
  override readonly name: string = 'EmfFormatError';

  /** Creates the error; pass the underlying failure as `cause`. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

// ---------------------------------------------------------------------------------------------
// Metrics and datapoints

/** A metric's identity: CloudWatch matches namespace, name and the exact set of dimensions. */
export interface MetricId {
  readonly namespace: string;
  readonly name: string;
  readonly dimensions: Readonly<Record<string, string>>;
}

/** One observed value of a metric. */
export interface MetricSample extends MetricId {
  readonly value: number;
}

/** The key under which a metric's samples are kept. */
export function metricKey(id: MetricId): string {
  const dims = Object.keys(id.dimensions)
    .sort()
    .map((k) => `${k}=${id.dimensions[k] ?? ''}`)
    .join(',');
  return `${id.namespace}|${id.name}|${dims}`;
}

/** A statistic over one period's values; undefined when there are none (missing data). */
export function aggregate(values: readonly number[], statistic: string): number | undefined {
  if (values.length === 0) return undefined;
  switch (statistic) {
    case 'SampleCount':
      return values.length;
    case 'Sum':
      return values.reduce((a, b) => a + b, 0);
    case 'Average':
      return values.reduce((a, b) => a + b, 0) / values.length;
    case 'Minimum':
      return Math.min(...values);
    case 'Maximum':
      return Math.max(...values);
  }
  const percentile = /^p(\d{1,2}(?:\.\d+)?|100)$/.exec(statistic);
  if (percentile === null) throw new AlarmDefinitionError(`statistic ${statistic} is not supported locally`);
  const sorted = [...values].sort((a, b) => a - b);
  // Nearest rank.
  const rank = Math.max(1, Math.ceil((Number(percentile[1]) / 100) * sorted.length));
  return sorted[rank - 1];
}

interface Series {
  readonly id: MetricId;
  /** In recording order, which is time order. */
  readonly samples: { at: number; value: number }[];
}

/** Samples per metric, kept for as long as some alarm can still look at them. */
class MetricStore {
  private readonly series = new Map<string, Series>();

  public record(sample: MetricSample, at: number): void {
    const key = metricKey(sample);
    let s = this.series.get(key);
    if (s === undefined) {
      s = {
        id: { namespace: sample.namespace, name: sample.name, dimensions: { ...sample.dimensions } },
        samples: [],
      };
      this.series.set(key, s);
    }
    s.samples.push({ at, value: sample.value });
  }

  /** Values of `id` recorded in [fromMs, toMs). */
  public values(id: MetricId, fromMs: number, toMs: number): number[] {
    const s = this.series.get(metricKey(id));
    if (s === undefined) return [];
    return s.samples.filter((x) => x.at >= fromMs && x.at < toMs).map((x) => x.value);
  }

  public all(): Iterable<[string, Series]> {
    return this.series.entries();
  }

  public prune(beforeMs: number): void {
    for (const s of this.series.values()) {
      const keep = s.samples.findIndex((x) => x.at >= beforeMs);
      s.samples.splice(0, keep < 0 ? s.samples.length : keep);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// EMF

/**
 * The metric values of one output line: every `_aws.CloudWatchMetrics` directive, each of its
 * dimension sets, each value (Powertools writes an array when a metric was added repeatedly).
 * Lines that are not EMF documents give none; an EMF document CloudWatch would reject throws.
 */
export function parseEmf(line: string): MetricSample[] {
  if (!line.includes('"_aws"')) return [];
  const start = line.indexOf('{');
  if (start < 0) return [];
  let doc: unknown;
  try {
    doc = JSON.parse(line.slice(start));
  } catch {
    // A log line that mentions "_aws" without being a document.
    return [];
  }
  if (typeof doc !== 'object' || doc === null || !('_aws' in doc)) return [];
  const root = doc as Record<string, unknown>;
  const directives = (root._aws as { CloudWatchMetrics?: unknown } | null)?.CloudWatchMetrics;
  if (!Array.isArray(directives)) throw new EmfFormatError('_aws.CloudWatchMetrics is not an array');
  const samples: MetricSample[] = [];
  for (const directive of directives as unknown[]) {
    const d = directive as { Namespace?: unknown; Dimensions?: unknown; Metrics?: unknown };
    if (typeof d.Namespace !== 'string') throw new EmfFormatError('a directive has no Namespace');
    if (!Array.isArray(d.Dimensions) || !Array.isArray(d.Metrics))
      throw new EmfFormatError(`directive ${d.Namespace}: Dimensions and Metrics must be arrays`);
    const sets = (d.Dimensions as unknown[]).length === 0 ? [[]] : (d.Dimensions as unknown[]);
    for (const metric of d.Metrics as unknown[]) {
      const name = (metric as { Name?: unknown }).Name;
      if (typeof name !== 'string')
        throw new EmfFormatError(`directive ${d.Namespace}: a metric has no Name`);
      const raw = root[name];
      const values = Array.isArray(raw) ? (raw as unknown[]) : [raw];
      if (values.some((v) => typeof v !== 'number' || !Number.isFinite(v)))
        throw new EmfFormatError(
          `metric ${name}: value ${JSON.stringify(raw)} is not a number or an array of numbers`,
        );
      for (const set of sets) {
        if (!Array.isArray(set))
          throw new EmfFormatError(`directive ${d.Namespace}: a dimension set is not an array`);
        const dimensions: Record<string, string> = {};
        for (const key of set as unknown[]) {
          const value = typeof key === 'string' ? root[key] : undefined;
          if (typeof value !== 'string')
            throw new EmfFormatError(`metric ${name}: dimension ${String(key)} has no string value`);
          dimensions[key as string] = value;
        }
        for (const value of values as number[])
          samples.push({ namespace: d.Namespace, name, dimensions, value });
      }
    }
  }
  return samples;
}

// ---------------------------------------------------------------------------------------------
// ApproximateAgeOfOldestMessage without receiving

/**
 * Estimates a queue's ApproximateAgeOfOldestMessage from depth observations alone: SQS cannot
 * peek, and receiving (even with VisibilityTimeout 0) would raise receive counts and move
 * messages towards the DLQ. Each observation compares the depth (visible + in flight + delayed,
 * i.e. every undeleted message) with the messages the tracker holds as cohorts of
 * (first seen, count):
 * - arrivals = depth increase + messages known consumers deleted since the last observation,
 *   pushed as one cohort first seen now (a message is dated when first seen, never earlier);
 * - removals = the rest of the difference, drained from the oldest cohort first;
 * - an empty queue forgets everything.
 * The age is now − the oldest cohort's first-seen time. It never overstates a message's age by
 * more than the drain-order assumption allows, and it understates it by up to one sampling
 * interval, and entirely for messages already in the queue when tracking started. Without the
 * deletion count, arrivals and deletions between two observations cancel out, so a queue that
 * holds a steady non-zero depth under traffic looks as old as the time since it was last empty;
 * with it (the platform counts its mappings' deletes), only removals nobody counted (redrive,
 * an operator's delete) are inferred. Oldest-first draining is an approximation too: a message
 * that keeps failing stays while younger ones go, and is then reported younger than it is.
 */
export class OldestMessageTracker {
  private readonly cohorts: { firstSeen: number; count: number }[] = [];
  private lastDeleted: number | undefined;

  /** Records the queue's depth at `at` (ms); returns the estimated age of its oldest message, seconds. */
  public observe(at: number, depth: number, deletedSoFar?: number): number {
    const known =
      deletedSoFar === undefined || this.lastDeleted === undefined
        ? 0
        : Math.max(0, deletedSoFar - this.lastDeleted);
    if (deletedSoFar !== undefined) this.lastDeleted = deletedSoFar;
    const held = this.cohorts.reduce((n, c) => n + c.count, 0);
    const net = depth - held;
    const arrivals = Math.max(0, net + known);
    let removals = arrivals - net;
    while (removals > 0 && this.cohorts.length > 0) {
      const oldest = this.cohorts[0] as { firstSeen: number; count: number };
      const taken = Math.min(oldest.count, removals);
      oldest.count -= taken;
      removals -= taken;
      if (oldest.count === 0) this.cohorts.shift();
    }
    // Removals beyond what was held took messages that arrived since the last observation.
    const stayed = arrivals - removals;
    if (stayed > 0) this.cohorts.push({ firstSeen: at, count: stayed });
    if (depth <= 0) this.cohorts.length = 0;
    const oldest = this.cohorts[0];
    return oldest === undefined ? 0 : Math.max(0, at - oldest.firstSeen) / 1000;
  }
}

// ---------------------------------------------------------------------------------------------
// Metric math: + - * / FILL MAX IF and comparisons, the subset tenang's alarms use. Only forms
// CloudWatch's metric math documentation states are accepted: MAX takes an array of time
// series (a bare number inside it is not documented, so it is refused here rather than
// forgiven), IF(condition, trueValue, falseValue) takes a comparison of series and scalars.

/** A parsed metric math expression. */
export type MathNode =
  | { readonly kind: 'number'; readonly value: number }
  | { readonly kind: 'id'; readonly name: string }
  | { readonly kind: 'negate'; readonly operand: MathNode }
  | {
      readonly kind: 'binary';
      readonly op: '+' | '-' | '*' | '/';
      readonly left: MathNode;
      readonly right: MathNode;
    }
  | {
      readonly kind: 'compare';
      readonly op: ComparisonOperator;
      readonly left: MathNode;
      readonly right: MathNode;
    }
  | { readonly kind: 'call'; readonly fn: 'FILL' | 'MAX' | 'IF'; readonly args: readonly MathNode[] }
  | { readonly kind: 'list'; readonly items: readonly MathNode[] };

/** Metric math's comparison operators (1 where true, 0 where false). */
type ComparisonOperator = '>' | '<' | '>=' | '<=' | '==' | '!=';
const MATH_COMPARISONS: ReadonlySet<string> = new Set(['>', '<', '>=', '<=', '==', '!=']);

const MATH_FUNCTIONS = new Set(['FILL', 'MAX', 'IF']);

function tokenizeMath(expression: string): string[] {
  const tokens: string[] = [];
  const pattern = /\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[A-Za-z_][A-Za-z0-9_]*|[<>=!]=|[<>]|[-+*/()[\],])/y;
  let index = 0;
  while (index < expression.length) {
    if (/^\s*$/.test(expression.slice(index))) break;
    pattern.lastIndex = index;
    const m = pattern.exec(expression);
    if (m === null)
      throw new AlarmDefinitionError(
        `expression "${expression}": unexpected text at "${expression.slice(index).trimStart()}"`,
      );
    tokens.push(m[1] as string);
    index = pattern.lastIndex;
  }
  return tokens;
}

/** Parses a metric math expression; anything beyond + - * / FILL(x, n) MAX([...]) IF(c, a, b) fails loudly. */
export function parseMathExpression(expression: string): MathNode {
  const tokens = tokenizeMath(expression);
  let pos = 0;
  const fail = (what: string): never => {
    throw new AlarmDefinitionError(`expression "${expression}": ${what}`);
  };
  const peek = (): string | undefined => tokens[pos];
  const expect = (token: string): void => {
    if (tokens[pos] !== token)
      fail(`expected "${token}" at token ${pos + 1}, found "${tokens[pos] ?? 'end'}"`);
    pos += 1;
  };
  /** A comparison (only as IF's condition) or a sum. */
  const comparison = (): MathNode => {
    const left = sum();
    const op = peek();
    if (op === undefined || !MATH_COMPARISONS.has(op)) return left;
    pos += 1;
    return { kind: 'compare', op: op as ComparisonOperator, left, right: sum() };
  };
  const sum = (): MathNode => {
    let node = product();
    while (peek() === '+' || peek() === '-') {
      const op = tokens[pos++] as '+' | '-';
      node = { kind: 'binary', op, left: node, right: product() };
    }
    return node;
  };
  const product = (): MathNode => {
    let node = unary();
    while (peek() === '*' || peek() === '/') {
      const op = tokens[pos++] as '*' | '/';
      node = { kind: 'binary', op, left: node, right: unary() };
    }
    return node;
  };
  const unary = (): MathNode => {
    if (peek() === '-') {
      pos += 1;
      return { kind: 'negate', operand: unary() };
    }
    return primary();
  };
  const list = (close: string): MathNode[] => {
    const items: MathNode[] = [];
    if (peek() !== close) {
      items.push(comparison());
      while (peek() === ',') {
        pos += 1;
        items.push(comparison());
      }
    }
    expect(close);
    return items;
  };
  const primary = (): MathNode => {
    const token = tokens[pos++];
    if (token === undefined) return fail('unexpected end');
    if (token === '(') {
      const inner = sum();
      expect(')');
      return inner;
    }
    if (token === '[') return { kind: 'list', items: list(']') };
    if (/^\d/.test(token)) return { kind: 'number', value: Number(token) };
    if (/^[A-Za-z_]/.test(token)) {
      if (peek() !== '(') return { kind: 'id', name: token };
      if (!MATH_FUNCTIONS.has(token))
        return fail(`function ${token} is not supported locally (only FILL, MAX, IF)`);
      pos += 1;
      return { kind: 'call', fn: token as 'FILL' | 'MAX' | 'IF', args: list(')') };
    }
    return fail(`unexpected "${token}"`);
  };
  const root = sum();
  if (pos !== tokens.length) fail(`unexpected "${tokens[pos] ?? ''}" after the expression`);
  validateMath(root, expression);
  return root;
}

function validateMath(node: MathNode, expression: string): void {
  const fail = (what: string): never => {
    throw new AlarmDefinitionError(`expression "${expression}": ${what}`);
  };
  switch (node.kind) {
    case 'negate':
      return validateMath(node.operand, expression);
    case 'binary':
      if (node.left.kind === 'list' || node.right.kind === 'list')
        fail('a [list] can only be the argument of MAX');
      validateMath(node.left, expression);
      return validateMath(node.right, expression);
    case 'list':
      return fail('a [list] can only be the argument of MAX');
    case 'compare':
      return fail('a comparison can only be the condition of IF');
    case 'call': {
      if (node.fn === 'IF') {
        const [condition, whenTrue, whenFalse] = node.args;
        if (node.args.length !== 3 || condition?.kind !== 'compare')
          return fail('IF takes a comparison, a value if true and a value if false here');
        for (const side of [condition.left, condition.right, whenTrue, whenFalse])
          validateMath(side as MathNode, expression);
        return;
      }
      if (node.fn === 'FILL') {
        const [series, fill] = node.args;
        const isConstant =
          fill?.kind === 'number' || (fill?.kind === 'negate' && fill.operand.kind === 'number');
        if (node.args.length !== 2 || series === undefined || !isConstant)
          fail('FILL takes a series and a number here (REPEAT and LINEAR are not supported locally)');
        return validateMath(series as MathNode, expression);
      }
      const [items] = node.args;
      if (node.args.length !== 1 || items?.kind !== 'list')
        return fail(
          'MAX takes one [list] here (MAX of a single series is a scalar over the range: not supported locally)',
        );
      for (const item of items.items) {
        const isScalar = item.kind === 'number' || (item.kind === 'negate' && item.operand.kind === 'number');
        if (isScalar)
          fail(
            'a number inside MAX([...]) is not documented by CloudWatch (MAX takes an array of time series); write IF(condition, trueValue, falseValue) instead',
          );
        validateMath(item, expression);
      }
      return;
    }
    default:
      return;
  }
}

/** Identifiers (metric ids) an expression reads. */
export function mathReferences(node: MathNode): string[] {
  switch (node.kind) {
    case 'id':
      return [node.name];
    case 'negate':
      return mathReferences(node.operand);
    case 'binary':
    case 'compare':
      return [...mathReferences(node.left), ...mathReferences(node.right)];
    case 'call':
      return node.args.flatMap(mathReferences);
    case 'list':
      return node.items.flatMap(mathReferences);
    default:
      return [];
  }
}

/** One period's value of an expression; `lookup` gives each id's value (undefined = missing). */
export function evaluateMath(node: MathNode, lookup: (id: string) => number | undefined): number | undefined {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'id':
      return lookup(node.name);
    case 'negate': {
      const v = evaluateMath(node.operand, lookup);
      return v === undefined ? undefined : -v;
    }
    case 'binary': {
      const l = evaluateMath(node.left, lookup);
      const r = evaluateMath(node.right, lookup);
      if (l === undefined || r === undefined) return undefined;
      if (node.op === '+') return l + r;
      if (node.op === '-') return l - r;
      if (node.op === '*') return l * r;
      // Division by zero gives no datapoint.
      return r === 0 ? undefined : l / r;
    }
    case 'compare': {
      const l = evaluateMath(node.left, lookup);
      const r = evaluateMath(node.right, lookup);
      if (l === undefined || r === undefined) return undefined;
      const holds = {
        '>': l > r,
        '<': l < r,
        '>=': l >= r,
        '<=': l <= r,
        '==': l === r,
        '!=': l !== r,
      }[node.op];
      return holds ? 1 : 0;
    }
    case 'call': {
      if (node.fn === 'IF') {
        const [condition, whenTrue, whenFalse] = node.args as [MathNode, MathNode, MathNode];
        const c = evaluateMath(condition, lookup);
        if (c === undefined) return undefined;
        return evaluateMath(c !== 0 ? whenTrue : whenFalse, lookup);
      }
      if (node.fn === 'FILL') {
        const [series, fill] = node.args as [MathNode, MathNode];
        return evaluateMath(series, lookup) ?? evaluateMath(fill, lookup);
      }
      const items = (node.args[0] as Extract<MathNode, { kind: 'list' }>).items;
      const present = items.map((i) => evaluateMath(i, lookup)).filter((v): v is number => v !== undefined);
      return present.length === 0 ? undefined : Math.max(...present);
    }
    case 'list':
      throw new AlarmDefinitionError('a [list] can only be the argument of MAX');
  }
}

// ---------------------------------------------------------------------------------------------
// M of N

/** What decides a metric alarm's state from its datapoints. */
export interface ThresholdRule {
  readonly threshold: number;
  readonly comparisonOperator: string;
  readonly evaluationPeriods: number;
  /** M of M-of-N. @default evaluationPeriods */
  readonly datapointsToAlarm?: number;
  /** @default 'missing' */
  readonly treatMissingData?: string;
}

const COMPARISONS: Record<string, { test: (v: number, t: number) => boolean; text: string }> = {
  GreaterThanOrEqualToThreshold: { test: (v, t) => v >= t, text: 'greater than or equal to' },
  GreaterThanThreshold: { test: (v, t) => v > t, text: 'greater than' },
  LessThanThreshold: { test: (v, t) => v < t, text: 'less than' },
  LessThanOrEqualToThreshold: { test: (v, t) => v <= t, text: 'less than or equal to' },
};

function comparison(operator: string): { test: (v: number, t: number) => boolean; text: string } {
  const c = COMPARISONS[operator];
  if (c === undefined)
    throw new AlarmDefinitionError(`comparison operator ${operator} is not supported locally`);
  return c;
}

function formatValue(v: number | undefined): string {
  return v === undefined ? '-' : String(Math.round(v * 1000) / 1000);
}

/**
 * A metric alarm's state from its last N datapoints (oldest first; undefined = missing), with
 * CloudWatch's rules: ALARM when at least M are breaching, missing ones counted as
 * `treatMissingData` says; `missing` goes to INSUFFICIENT_DATA and `ignore` keeps `current`
 * when every datapoint is missing.
 */
export function decideAlarmState(
  points: readonly (number | undefined)[],
  rule: ThresholdRule,
  current: AlarmState,
): { state: AlarmState; reason: string } {
  const { test, text } = comparison(rule.comparisonOperator);
  const m = rule.datapointsToAlarm ?? rule.evaluationPeriods;
  const treat = rule.treatMissingData ?? 'missing';
  if (!['missing', 'ignore', 'breaching', 'notBreaching'].includes(treat))
    throw new AlarmDefinitionError(`TreatMissingData ${treat} is not a CloudWatch value`);
  const shown = `[${points.map(formatValue).join(', ')}]`;
  const present = points.filter((p): p is number => p !== undefined);
  if (present.length === 0 && treat === 'missing') {
    return {
      state: 'INSUFFICIENT_DATA',
      reason: `Insufficient Data: no datapoints in the last ${points.length} period(s).`,
    };
  }
  if (present.length === 0 && treat === 'ignore') {
    return {
      state: current,
      reason: `No datapoints in the last ${points.length} period(s): state kept (ignore).`,
    };
  }
  const missingBreach = treat === 'breaching' ? points.length - present.length : 0;
  const breaching = present.filter((v) => test(v, rule.threshold)).length + missingBreach;
  const state: AlarmState = breaching >= m ? 'ALARM' : 'OK';
  const missingNote = present.length < points.length ? `; missing datapoints treated as ${treat}` : '';
  return {
    state,
    reason:
      `Threshold Crossed: ${breaching} out of the last ${points.length} datapoints ${shown} ` +
      `${breaching === 1 ? 'was' : 'were'} ${text} the threshold (${rule.threshold}) ` +
      `(minimum ${m} datapoint${m === 1 ? '' : 's'} for ALARM${missingNote}).`,
  };
}

// ---------------------------------------------------------------------------------------------
// Composite alarm rules

/** A parsed composite alarm rule. */
export type RuleNode =
  | { readonly kind: 'state'; readonly state: AlarmState; readonly alarm: string }
  | { readonly kind: 'not'; readonly operand: RuleNode }
  | { readonly kind: 'and' | 'or'; readonly operands: readonly RuleNode[] }
  | { readonly kind: 'constant'; readonly value: boolean };

/** An alarm's name from its ARN (`arn:aws:cloudwatch:region:account:alarm:NAME`), or the name itself. */
export function alarmNameOf(reference: string): string {
  const m = /^arn:[^:]+:cloudwatch:[^:]*:[^:]*:alarm:(.+)$/.exec(reference);
  return m === null ? reference : (m[1] as string);
}

/**
 * Parses an AlarmRule: ALARM(x), OK(x), INSUFFICIENT_DATA(x) with x an alarm name or ARN (quoted
 * or not), TRUE, FALSE, NOT, AND, OR (AND binds tighter) and parentheses.
 */
export function parseAlarmRule(rule: string): RuleNode {
  const tokens: string[] = [];
  const pattern = /\s*("(?:[^"\\]|\\.)*"|[()]|[^\s()"]+)/y;
  let index = 0;
  while (index < rule.length) {
    if (/^\s*$/.test(rule.slice(index))) break;
    pattern.lastIndex = index;
    const m = pattern.exec(rule);
    if (m === null)
      throw new AlarmDefinitionError(
        `alarm rule "${rule}": unexpected text at "${rule.slice(index).trimStart()}"`,
      );
    tokens.push(m[1] as string);
    index = pattern.lastIndex;
  }
  let pos = 0;
  const fail = (what: string): never => {
    throw new AlarmDefinitionError(`alarm rule "${rule}": ${what}`);
  };
  const expect = (token: string): void => {
    if (tokens[pos] !== token) fail(`expected "${token}", found "${tokens[pos] ?? 'end'}"`);
    pos += 1;
  };
  const or = (): RuleNode => {
    const operands = [and()];
    while (tokens[pos] === 'OR') {
      pos += 1;
      operands.push(and());
    }
    return operands.length === 1 ? (operands[0] as RuleNode) : { kind: 'or', operands };
  };
  const and = (): RuleNode => {
    const operands = [not()];
    while (tokens[pos] === 'AND') {
      pos += 1;
      operands.push(not());
    }
    return operands.length === 1 ? (operands[0] as RuleNode) : { kind: 'and', operands };
  };
  const not = (): RuleNode => {
    if (tokens[pos] === 'NOT') {
      pos += 1;
      return { kind: 'not', operand: not() };
    }
    return primary();
  };
  const primary = (): RuleNode => {
    const token = tokens[pos++];
    if (token === '(') {
      const inner = or();
      expect(')');
      return inner;
    }
    if (token === 'TRUE' || token === 'FALSE') return { kind: 'constant', value: token === 'TRUE' };
    if (token === 'ALARM' || token === 'OK' || token === 'INSUFFICIENT_DATA') {
      expect('(');
      const arg = tokens[pos++];
      if (arg === undefined || arg === ')') return fail(`${token}() needs an alarm name or ARN`);
      expect(')');
      const name = arg.startsWith('"') ? (JSON.parse(arg) as string) : arg;
      return { kind: 'state', state: token, alarm: alarmNameOf(name) };
    }
    return fail(`unexpected "${token ?? 'end'}"`);
  };
  const root = or();
  if (pos !== tokens.length) fail(`unexpected "${tokens[pos] ?? ''}"`);
  return root;
}

/** Names of the alarms a rule reads. */
export function ruleReferences(node: RuleNode): string[] {
  switch (node.kind) {
    case 'state':
      return [node.alarm];
    case 'not':
      return ruleReferences(node.operand);
    case 'and':
    case 'or':
      return node.operands.flatMap(ruleReferences);
    default:
      return [];
  }
}

/** Whether a rule holds, given every referenced alarm's state. */
export function evaluateRule(node: RuleNode, stateOf: (alarm: string) => AlarmState): boolean {
  switch (node.kind) {
    case 'state':
      return stateOf(node.alarm) === node.state;
    case 'not':
      return !evaluateRule(node.operand, stateOf);
    case 'and':
      return node.operands.every((o) => evaluateRule(o, stateOf));
    case 'or':
      return node.operands.some((o) => evaluateRule(o, stateOf));
    case 'constant':
      return node.value;
  }
}

/** What decides whether a composite alarm's actions are held by its actions suppressor. */
export interface SuppressionInput {
  readonly now: number;
  /** The suppressor alarm's state now. */
  readonly suppressorState: AlarmState;
  /** When the suppressor last left ALARM (ms), if it did. */
  readonly suppressorLeftAlarmAt: number | undefined;
  /** When the composite last changed state (ms). */
  readonly compositeChangedAt: number;
  readonly waitMs: number;
  readonly extensionMs: number;
}

/**
 * ActionsSuppressor semantics: actions are suppressed while the suppressor is in ALARM and for
 * the extension period after it leaves ALARM; after a composite transition they are also held
 * for the wait period, to give the suppressor time to go into ALARM. `suppressed` is the first
 * part (the suppressor's doing), `held` includes the wait.
 */
export function actionsSuppression(input: SuppressionInput): { suppressed: boolean; held: boolean } {
  const suppressed =
    input.suppressorState === 'ALARM' ||
    (input.suppressorLeftAlarmAt !== undefined &&
      input.now < input.suppressorLeftAlarmAt + input.extensionMs);
  return { suppressed, held: suppressed || input.now < input.compositeChangedAt + input.waitMs };
}

// ---------------------------------------------------------------------------------------------
// The evaluator

/** Declared seconds → evaluation milliseconds, under the periodSeconds / periodScale override. */
interface PeriodScaler {
  periodMs(declaredPeriodSeconds: number): number;
  durationMs(declaredSeconds: number, declaredPeriodSeconds: number): number;
}

interface MathEntry {
  readonly metric?: MetricId;
  readonly stat?: string;
  readonly expression?: MathNode;
}

interface MetricAlarmSpec {
  readonly name: string;
  readonly rule: ThresholdRule;
  readonly periodMs: number;
  readonly declaredPeriodSeconds: number;
  readonly source:
    | { readonly kind: 'metric'; readonly metric: MetricId; readonly statistic: string }
    | { readonly kind: 'math'; readonly entries: ReadonlyMap<string, MathEntry>; readonly returnId: string };
  readonly queues: readonly string[];
  readonly actions: ReadonlySet<AlarmState>;
  /** Each state's action ARNs. */
  readonly targets: ReadonlyMap<AlarmState, readonly string[]>;
  readonly alarmArn?: string;
  readonly motoState: AlarmState;
}

interface CompositeSpec {
  readonly name: string;
  readonly rule: RuleNode;
  readonly suppressor: string | undefined;
  readonly waitSeconds: number;
  readonly extensionSeconds: number;
  readonly actions: ReadonlySet<AlarmState>;
  /** Each state's action ARNs. */
  readonly targets: ReadonlyMap<AlarmState, readonly string[]>;
}

interface CompositeRuntime {
  state: AlarmState;
  changedAt: number;
  owed: { state: AlarmState; since: number } | undefined;
  suppressed: boolean | undefined;
}

const DEFAULT_PERIOD_SECONDS = 60;
const PUT_METRIC_DATA_BATCH = 100;
const STATE_REASON_MAX = 1023;

function toDimensions(
  list: readonly { Name?: string; Value?: string }[] | undefined,
): Record<string, string> {
  const dims: Record<string, string> = {};
  for (const d of list ?? []) dims[d.Name ?? ''] = d.Value ?? '';
  return dims;
}

function actionTargets(a: {
  ActionsEnabled?: boolean;
  AlarmActions?: readonly string[];
  OKActions?: readonly string[];
  InsufficientDataActions?: readonly string[];
}): Map<AlarmState, readonly string[]> {
  const targets = new Map<AlarmState, readonly string[]>();
  if (a.ActionsEnabled === false) return targets;
  targets.set('ALARM', a.AlarmActions ?? []);
  targets.set('OK', a.OKActions ?? []);
  targets.set('INSUFFICIENT_DATA', a.InsufficientDataActions ?? []);
  return targets;
}

/** The states whose transitions owe actions: those with at least one target. */
function stateActions(targets: ReadonlyMap<AlarmState, readonly string[]>): Set<AlarmState> {
  return new Set([...targets].filter(([, t]) => t.length > 0).map(([state]) => state));
}

function asState(value: string | undefined): AlarmState {
  return value === 'ALARM' || value === 'OK' ? value : 'INSUFFICIENT_DATA';
}

function isMissingQueue(error: unknown): boolean {
  const name = (error as { name?: string } | null)?.name ?? '';
  return name === 'QueueDoesNotExist' || name === 'AWS.SimpleQueueService.NonExistentQueue';
}

/** Builds what evaluation needs from a DescribeAlarms entry; throws for what it cannot evaluate. */
function toMetricAlarmSpec(a: MetricAlarm, scaler: PeriodScaler): MetricAlarmSpec {
  const name = a.AlarmName ?? '';
  if (a.Threshold === undefined)
    throw new AlarmDefinitionError(
      `${name}: no static Threshold (anomaly detection is not supported locally)`,
    );
  comparison(a.ComparisonOperator ?? '');
  const rule: ThresholdRule = {
    threshold: a.Threshold,
    comparisonOperator: a.ComparisonOperator ?? '',
    evaluationPeriods: a.EvaluationPeriods ?? 1,
    datapointsToAlarm: a.DatapointsToAlarm,
    treatMissingData: a.TreatMissingData,
  };
  const queues: string[] = [];
  const noteQueue = (m: MetricId): void => {
    if (m.namespace === 'AWS/SQS' && m.dimensions.QueueName !== undefined)
      queues.push(m.dimensions.QueueName);
  };
  const common = {
    name,
    rule,
    actions: stateActions(actionTargets(a)),
    targets: actionTargets(a),
    alarmArn: a.AlarmArn,
    motoState: asState(a.StateValue),
    queues,
  };
  if ((a.Metrics ?? []).length === 0) {
    const statistic = a.ExtendedStatistic ?? a.Statistic;
    if (statistic === undefined || a.MetricName === undefined || a.Namespace === undefined)
      throw new AlarmDefinitionError(`${name}: neither a metric with a statistic nor Metrics`);
    aggregate([0], statistic);
    const metric = { namespace: a.Namespace, name: a.MetricName, dimensions: toDimensions(a.Dimensions) };
    noteQueue(metric);
    const declared = a.Period ?? DEFAULT_PERIOD_SECONDS;
    return {
      ...common,
      periodMs: scaler.periodMs(declared),
      declaredPeriodSeconds: declared,
      source: { kind: 'metric', metric, statistic },
    };
  }
  const entries = new Map<string, MathEntry>();
  let returnId: string | undefined;
  let declared = a.Period ?? 0;
  for (const q of a.Metrics ?? []) {
    const id = q.Id ?? '';
    if (q.ReturnData !== false) {
      if (returnId !== undefined) throw new AlarmDefinitionError(`${name}: more than one query returns data`);
      returnId = id;
    }
    if (q.Expression !== undefined) {
      entries.set(id, { expression: parseMathExpression(q.Expression) });
    } else if (q.MetricStat?.Metric !== undefined) {
      const m = q.MetricStat.Metric;
      const metric = {
        namespace: m.Namespace ?? '',
        name: m.MetricName ?? '',
        dimensions: toDimensions(m.Dimensions),
      };
      const stat = q.MetricStat.Stat ?? '';
      aggregate([0], stat);
      noteQueue(metric);
      declared = Math.max(declared, q.MetricStat.Period ?? 0);
      entries.set(id, { metric, stat });
    } else {
      throw new AlarmDefinitionError(`${name}: query ${id} has neither an Expression nor a MetricStat`);
    }
  }
  if (returnId === undefined) throw new AlarmDefinitionError(`${name}: no query returns data`);
  for (const [id, entry] of entries) {
    for (const ref of entry.expression === undefined ? [] : mathReferences(entry.expression))
      if (!entries.has(ref)) throw new AlarmDefinitionError(`${name}: query ${id} reads unknown id ${ref}`);
  }
  const period = declared > 0 ? declared : DEFAULT_PERIOD_SECONDS;
  return {
    ...common,
    periodMs: scaler.periodMs(period),
    declaredPeriodSeconds: period,
    source: { kind: 'math', entries, returnId },
  };
}

/** CloudWatch alarm evaluation for the local platform; see the module comment. */
export class AlarmEvaluator {
  private readonly store = new MetricStore();
  private readonly trackers = new Map<string, OldestMessageTracker>();
  private readonly queueUrls = new Map<string, string>();
  private readonly missingQueuesLogged = new Set<string>();
  private readonly composites: readonly CompositeSpec[];
  private readonly compositeRuntime = new Map<string, CompositeRuntime>();
  private readonly metricStates = new Map<string, AlarmState>();
  private readonly leftAlarmAt = new Map<string, number>();
  private readonly published = new Map<string, number>();
  private readonly transitions: Transition[] = [];
  private readonly actionLog: AlarmAction[] = [];
  private readonly deliveryLog: AlarmDelivery[] = [];
  private readonly pendingDeliveries = new Set<Promise<void>>();
  private readonly scaler: PeriodScaler;
  private readonly now: () => number;
  private readonly log: (line: string) => void;
  private specs: readonly MetricAlarmSpec[] = [];
  private chain: Promise<void> = Promise.resolve();
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private lastLoopError: string | undefined;

  public constructor(private readonly deps: AlarmEvaluatorDeps) {
    this.now = deps.now ?? Date.now;
    this.log = deps.log ?? ((): void => undefined);
    const override = deps.periodSeconds;
    const scale = deps.periodScale ?? 1;
    if (override !== undefined && !(override > 0))
      throw new AlarmDefinitionError('periodSeconds must be > 0');
    if (!(scale > 0)) throw new AlarmDefinitionError('periodScale must be > 0');
    this.scaler = {
      periodMs: (declared) => (override ?? declared * scale) * 1000,
      durationMs: (seconds, declaredPeriod) =>
        (override === undefined ? seconds * scale : (seconds * override) / declaredPeriod) * 1000,
    };
    const problems: string[] = [];
    const composites: CompositeSpec[] = [];
    for (const c of deps.compositeAlarms ?? []) {
      try {
        composites.push({
          name: c.AlarmName ?? '',
          rule: parseAlarmRule(c.AlarmRule ?? ''),
          suppressor: c.ActionsSuppressor === undefined ? undefined : alarmNameOf(c.ActionsSuppressor),
          waitSeconds: c.ActionsSuppressorWaitPeriod ?? 0,
          extensionSeconds: c.ActionsSuppressorExtensionPeriod ?? 0,
          actions: stateActions(actionTargets(c)),
          targets: actionTargets(c),
        });
      } catch (error) {
        problems.push(`${c.AlarmName ?? '(unnamed composite)'}: ${(error as Error).message}`);
      }
    }
    // A rule the evaluator cannot read is a bug in the definitions: refuse to start.
    if (problems.length > 0) throw new AlarmEvaluationError(problems);
    this.composites = composites;
    for (const c of composites)
      this.compositeRuntime.set(c.name, {
        state: 'INSUFFICIENT_DATA',
        changedAt: this.now(),
        owed: undefined,
        suppressed: undefined,
      });
  }

  /** Samples and evaluates every `intervalMs` until stop(); problems go to `log`. */
  public start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops the background loop and waits for an evaluation in progress. */
  public async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
    await Promise.all([...this.pendingDeliveries]);
  }

  /**
   * One evaluation: reads the alarms, samples their queues, publishes completed periods, sets
   * changed metric alarm states in moto and updates the composites. Every alarm is evaluated
   * even when some fail; then the problems are thrown together as an AlarmEvaluationError.
   */
  public evaluateNow(): Promise<void> {
    const run = this.chain.then(() => this.tick());
    // Evaluations never overlap; the caller still gets this one's error.
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Every alarm's current state: the metric alarms last read from moto, then the composites. */
  public states(): AlarmStatus[] {
    const metric = this.specs.map((s): AlarmStatus => ({
      name: s.name,
      state: this.metricStates.get(s.name) ?? s.motoState,
      kind: 'metric',
    }));
    const composite = this.composites.map((c): AlarmStatus => {
      const rt = this.compositeRuntime.get(c.name);
      return {
        name: c.name,
        state: rt?.state ?? 'INSUFFICIENT_DATA',
        kind: 'composite',
        ...(c.suppressor === undefined ? {} : { suppressed: rt?.suppressed ?? false }),
      };
    });
    return [...metric, ...composite];
  }

  /** Every state change so far, oldest first. */
  public timeline(): Transition[] {
    return [...this.transitions];
  }

  /** Every transition's actions that were sent or dropped while suppressed, oldest first. */
  public actions(): AlarmAction[] {
    return [...this.actionLog];
  }

  /** What became of each notification `notify` was asked to deliver (delivered or failed), oldest first. */
  public deliveries(): AlarmDelivery[] {
    return [...this.deliveryLog];
  }

  /** Records one invocation's AWS/Lambda metrics: Invocations, Errors, Throttles (0), Duration, IteratorAge. */
  public recordInvocation(functionName: string, result: InvokeResult): void {
    const at = this.now();
    const dimensions = { FunctionName: functionName };
    const lambda = (name: string, value: number): void =>
      this.store.record({ namespace: 'AWS/Lambda', name, dimensions, value }, at);
    lambda('Invocations', 1);
    lambda('Errors', result.status === 'ok' ? 0 : 1);
    lambda('Throttles', 0);
    lambda('Duration', result.durationMs);
    const iteratorAge = this.deps.iteratorAgeMs?.(functionName);
    if (iteratorAge !== undefined) lambda('IteratorAge', iteratorAge);
  }

  /** Records a simulated throttle (the local platform never throttles by itself). */
  public recordThrottle(functionName: string): void {
    this.store.record(
      { namespace: 'AWS/Lambda', name: 'Throttles', dimensions: { FunctionName: functionName }, value: 1 },
      this.now(),
    );
  }

  /** Records the EMF metrics of one line a function printed; other lines are ignored. */
  public recordOutput(line: string, functionName: string): void {
    try {
      const at = this.now();
      for (const sample of parseEmf(line)) this.store.record(sample, at);
    } catch (error) {
      // CloudWatch drops a malformed document too; say so rather than lose it silently.
      this.log(`${functionName}: ${(error as Error).message}: ${line.slice(0, 200)}`);
    }
  }

  private async run(): Promise<void> {
    const intervalMs = this.deps.intervalMs ?? 1000;
    while (this.running) {
      try {
        await this.evaluateNow();
        this.lastLoopError = undefined;
      } catch (error) {
        const message = (error as Error).message;
        if (message !== this.lastLoopError) this.log(message);
        this.lastLoopError = message;
      }
      if (!this.running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        this.wake = (): void => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  private async tick(): Promise<void> {
    const now = this.now();
    const problems: string[] = [];
    const alarms = await this.describeAlarms();
    const specs: MetricAlarmSpec[] = [];
    for (const a of alarms) {
      try {
        specs.push(toMetricAlarmSpec(a, this.scaler));
      } catch (error) {
        problems.push((error as Error).message);
      }
    }
    this.specs = specs;
    for (const s of specs) if (!this.metricStates.has(s.name)) this.metricStates.set(s.name, s.motoState);

    await this.sampleQueues([...new Set(specs.flatMap((s) => s.queues))], now, problems);
    if (this.deps.publishMetrics ?? true) await this.publish(now, problems);
    this.prune(now, specs);

    for (const spec of specs) {
      try {
        await this.evaluateMetricAlarm(spec, now);
      } catch (error) {
        problems.push(`${spec.name}: ${(error as Error).message}`);
      }
    }
    this.evaluateComposites(now, problems);
    if (problems.length > 0) throw new AlarmEvaluationError(problems);
  }

  private async describeAlarms(): Promise<MetricAlarm[]> {
    const prefix = this.deps.alarmNamePrefix;
    const alarms: MetricAlarm[] = [];
    let token: string | undefined;
    do {
      const page = await this.deps.cloudwatch.send(
        new DescribeAlarmsCommand({
          AlarmTypes: ['MetricAlarm'],
          NextToken: token,
          ...(prefix === undefined ? {} : { AlarmNamePrefix: prefix }),
        }),
      );
      alarms.push(...(page.MetricAlarms ?? []));
      token = page.NextToken;
    } while (token !== undefined);
    return alarms.filter((a) => prefix === undefined || (a.AlarmName ?? '').startsWith(prefix));
  }

  private async sampleQueues(names: readonly string[], now: number, problems: string[]): Promise<void> {
    await Promise.all(
      names.map(async (queueName) => {
        try {
          // Read before the depth: a delete racing the read then shows as a younger arrival, not an older one.
          const deleted = this.deps.deletedMessages?.(queueName);
          const url = await this.queueUrl(queueName);
          if (url === undefined) return;
          const { Attributes: a = {} } = await this.deps.sqs.send(
            new GetQueueAttributesCommand({
              QueueUrl: url,
              AttributeNames: [
                'ApproximateNumberOfMessages',
                'ApproximateNumberOfMessagesNotVisible',
                'ApproximateNumberOfMessagesDelayed',
              ],
            }),
          );
          const visible = Number(a.ApproximateNumberOfMessages ?? 0);
          const inFlight = Number(a.ApproximateNumberOfMessagesNotVisible ?? 0);
          const delayed = Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
          let tracker = this.trackers.get(queueName);
          if (tracker === undefined) {
            tracker = new OldestMessageTracker();
            this.trackers.set(queueName, tracker);
          }
          const age = tracker.observe(now, visible + inFlight + delayed, deleted);
          const dimensions = { QueueName: queueName };
          const sqs = (name: string, value: number): void =>
            this.store.record({ namespace: 'AWS/SQS', name, dimensions, value }, now);
          sqs('ApproximateNumberOfMessagesVisible', visible);
          sqs('ApproximateNumberOfMessagesNotVisible', inFlight);
          sqs('ApproximateNumberOfMessagesDelayed', delayed);
          sqs('ApproximateAgeOfOldestMessage', age);
        } catch (error) {
          if (isMissingQueue(error)) {
            this.queueUrls.delete(queueName);
            return;
          }
          problems.push(`queue ${queueName}: ${(error as Error).message}`);
        }
      }),
    );
  }

  private async queueUrl(queueName: string): Promise<string | undefined> {
    const cached = this.queueUrls.get(queueName);
    if (cached !== undefined) return cached;
    try {
      const { QueueUrl } = await this.deps.sqs.send(new GetQueueUrlCommand({ QueueName: queueName }));
      if (QueueUrl !== undefined) this.queueUrls.set(queueName, QueueUrl);
      return QueueUrl;
    } catch (error) {
      if (!isMissingQueue(error)) throw error;
      // No data, as in CloudWatch for a queue that does not exist; said once.
      if (!this.missingQueuesLogged.has(queueName))
        this.log(`alarmed queue ${queueName} does not exist: no data`);
      this.missingQueuesLogged.add(queueName);
      return undefined;
    }
  }

  /** The datapoints of every completed period not yet published, as statistic sets. */
  private async publish(now: number, problems: string[]): Promise<void> {
    const periodMs = this.scaler.periodMs(DEFAULT_PERIOD_SECONDS);
    const lastComplete = Math.floor(now / periodMs) - 1;
    const byNamespace = new Map<string, MetricDatum[]>();
    for (const [key, series] of this.store.all()) {
      const first = series.samples[0];
      if (first === undefined) continue;
      const from = Math.max(this.published.get(key) ?? -Infinity, Math.floor(first.at / periodMs) - 1) + 1;
      for (let p = from; p <= lastComplete; p += 1) {
        const values = this.store.values(series.id, p * periodMs, (p + 1) * periodMs);
        if (values.length === 0) continue;
        const datum: MetricDatum = {
          MetricName: series.id.name,
          Dimensions: Object.entries(series.id.dimensions).map(([Name, Value]) => ({ Name, Value })),
          Timestamp: new Date(p * periodMs),
          StatisticValues: {
            SampleCount: values.length,
            Sum: values.reduce((a, b) => a + b, 0),
            Minimum: Math.min(...values),
            Maximum: Math.max(...values),
          },
        };
        const list = byNamespace.get(series.id.namespace) ?? [];
        list.push(datum);
        byNamespace.set(series.id.namespace, list);
      }
      if (lastComplete >= from) this.published.set(key, lastComplete);
    }
    for (const [namespace, data] of byNamespace) {
      for (let i = 0; i < data.length; i += PUT_METRIC_DATA_BATCH) {
        try {
          await this.deps.cloudwatch.send(
            new PutMetricDataCommand({
              Namespace: namespace,
              MetricData: data.slice(i, i + PUT_METRIC_DATA_BATCH),
            }),
          );
        } catch (error) {
          problems.push(`PutMetricData ${namespace}: ${(error as Error).message}`);
        }
      }
    }
  }

  private prune(now: number, specs: readonly MetricAlarmSpec[]): void {
    const basePeriod = this.scaler.periodMs(DEFAULT_PERIOD_SECONDS);
    const window = Math.max(basePeriod * 3, ...specs.map((s) => s.periodMs * (s.rule.evaluationPeriods + 2)));
    this.store.prune(now - window);
  }

  /** The alarm's last N completed periods' values, oldest first. */
  private datapoints(spec: MetricAlarmSpec, now: number): (number | undefined)[] {
    const current = Math.floor(now / spec.periodMs);
    const points: (number | undefined)[] = [];
    for (let p = current - spec.rule.evaluationPeriods; p < current; p += 1) {
      const from = p * spec.periodMs;
      const to = from + spec.periodMs;
      const source = spec.source;
      if (source.kind === 'metric') {
        points.push(aggregate(this.store.values(source.metric, from, to), source.statistic));
        continue;
      }
      const memo = new Map<string, number | undefined>();
      const visiting = new Set<string>();
      const lookup = (id: string): number | undefined => {
        if (memo.has(id)) return memo.get(id);
        const entry = source.entries.get(id);
        if (entry === undefined) throw new AlarmDefinitionError(`unknown id ${id}`);
        if (visiting.has(id)) throw new AlarmDefinitionError(`expression ${id} refers to itself`);
        visiting.add(id);
        const value =
          entry.expression !== undefined
            ? evaluateMath(entry.expression, lookup)
            : aggregate(this.store.values(entry.metric as MetricId, from, to), entry.stat ?? '');
        visiting.delete(id);
        memo.set(id, value);
        return value;
      };
      points.push(lookup(source.returnId));
    }
    return points;
  }

  private async evaluateMetricAlarm(spec: MetricAlarmSpec, now: number): Promise<void> {
    // moto's state is the truth: a drill's SetAlarmState lasts until this evaluation, as on AWS.
    const from = spec.motoState;
    const { state, reason } = decideAlarmState(this.datapoints(spec, now), spec.rule, from);
    if (state !== from) {
      await this.deps.cloudwatch.send(
        new SetAlarmStateCommand({
          AlarmName: spec.name,
          StateValue: state,
          StateReason: reason.slice(0, STATE_REASON_MAX),
        }),
      );
      this.recordTransition(spec.name, 'metric', from, state, now, reason);
      if (spec.actions.has(state)) {
        this.actionLog.push({
          alarm: spec.name,
          kind: 'metric',
          state,
          transitionAt: new Date(now),
          outcome: 'sent',
          at: new Date(now),
        });
        this.deliver(spec.name, spec.alarmArn, 'metric', state, spec.targets.get(state) ?? [], reason, now);
      }
    }
    this.metricStates.set(spec.name, state);
  }

  private recordTransition(
    alarm: string,
    kind: AlarmKind,
    from: AlarmState,
    to: AlarmState,
    at: number,
    reason: string,
  ): void {
    if (from === 'ALARM') this.leftAlarmAt.set(alarm, at);
    this.transitions.push({ alarm, kind, from, to, at: new Date(at), reason });
  }

  private evaluateComposites(now: number, problems: string[]): void {
    const specsByName = new Map(this.composites.map((c) => [c.name, c]));
    const metricSpecs = new Map(this.specs.map((s) => [s.name, s]));
    const done = new Set<string>();
    const visiting = new Set<string>();

    const stateOf = (name: string): AlarmState => {
      const metric = this.metricStates.get(name);
      if (metric !== undefined && metricSpecs.has(name)) return metric;
      const composite = specsByName.get(name);
      if (composite === undefined) throw new AlarmDefinitionError(`no alarm named ${name}`);
      evaluate(composite);
      return this.compositeRuntime.get(name)?.state ?? 'INSUFFICIENT_DATA';
    };

    const evaluate = (c: CompositeSpec): void => {
      if (done.has(c.name)) return;
      if (visiting.has(c.name)) throw new AlarmDefinitionError(`composite ${c.name} depends on itself`);
      visiting.add(c.name);
      const rt = this.compositeRuntime.get(c.name) as CompositeRuntime;
      const refs = [...new Set(ruleReferences(c.rule))];
      const refStates = refs.map((r) => [r, stateOf(r)] as const);
      let state: AlarmState;
      let reason: string;
      if (refStates.length > 0 && refStates.every(([, s]) => s === 'INSUFFICIENT_DATA')) {
        state = 'INSUFFICIENT_DATA';
        reason = 'Every alarm of the rule is INSUFFICIENT_DATA.';
      } else {
        const holds = evaluateRule(c.rule, stateOf);
        state = holds ? 'ALARM' : 'OK';
        const inAlarm = refStates.filter(([, s]) => s === 'ALARM').map(([r]) => r);
        reason = `Rule ${holds ? 'holds' : 'does not hold'}; in ALARM: ${inAlarm.length === 0 ? 'none' : inAlarm.join(', ')}.`;
      }
      if (state !== rt.state) {
        if (rt.owed !== undefined) this.settleAction(c.name, rt.owed, 'suppressed', now);
        this.recordTransition(c.name, 'composite', rt.state, state, now, reason);
        rt.state = state;
        rt.changedAt = now;
        rt.owed = c.actions.has(state) ? { state, since: now } : undefined;
      }
      let held = false;
      if (c.suppressor !== undefined) {
        const suppressorPeriod =
          metricSpecs.get(c.suppressor)?.declaredPeriodSeconds ?? DEFAULT_PERIOD_SECONDS;
        const s = actionsSuppression({
          now,
          suppressorState: stateOf(c.suppressor),
          suppressorLeftAlarmAt: this.leftAlarmAt.get(c.suppressor),
          compositeChangedAt: rt.changedAt,
          waitMs: this.scaler.durationMs(c.waitSeconds, suppressorPeriod),
          extensionMs: this.scaler.durationMs(c.extensionSeconds, suppressorPeriod),
        });
        rt.suppressed = s.suppressed;
        held = s.held;
      }
      if (rt.owed !== undefined && !held) {
        this.settleAction(c.name, rt.owed, 'sent', now);
        this.deliver(
          c.name,
          undefined,
          'composite',
          rt.owed.state,
          c.targets.get(rt.owed.state) ?? [],
          reason,
          now,
        );
        rt.owed = undefined;
      }
      visiting.delete(c.name);
      done.add(c.name);
    };

    for (const c of this.composites) {
      try {
        evaluate(c);
      } catch (error) {
        visiting.clear();
        problems.push(`${c.name}: ${(error as Error).message}`);
      }
    }
  }

  /** Sends a transition's notifications through `notify`, in the background; stop() waits for them. */
  private deliver(
    alarm: string,
    alarmArn: string | undefined,
    kind: AlarmKind,
    state: AlarmState,
    targets: readonly string[],
    reason: string,
    now: number,
  ): void {
    const notify = this.deps.notify;
    if (notify === undefined) return;
    for (const target of targets) {
      const n: AlarmNotification = { alarm, alarmArn, kind, state, target, reason, at: new Date(now) };
      const pending: Promise<void> = notify(n)
        .then(
          () => {
            this.deliveryLog.push({ ...n, outcome: 'delivered' });
          },
          (error: unknown) => {
            const e = error as { name?: string; message?: string };
            const why = `${e.name ?? 'Error'}: ${e.message ?? String(error)}`;
            this.deliveryLog.push({ ...n, outcome: 'failed', error: why });
            this.deps.log?.(`${alarm}: action ${target} failed: ${why}`);
          },
        )
        .finally(() => this.pendingDeliveries.delete(pending));
      this.pendingDeliveries.add(pending);
    }
  }

  private settleAction(
    alarm: string,
    owed: { state: AlarmState; since: number },
    outcome: 'sent' | 'suppressed',
    now: number,
  ): void {
    this.actionLog.push({
      alarm,
      kind: 'composite',
      state: owed.state,
      transitionAt: new Date(owed.since),
      outcome,
      at: new Date(now),
    });
  }
}
