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
 *   By default the interval follows the shortest alarm period: a twelfth of it, between 1 s and
 *   5 s (every 5 s for the deployed 60 s periods, every second once periods are scaled to 12 s
 *   or less), since each evaluation is a DescribeAlarms and a GetQueueAttributes per queue.
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
import type { InvokeResult } from '../function-host';
import { evaluateRule, ruleReferences } from './composite-rules';
import {
  DEFAULT_PERIOD_SECONDS,
  periodScaler,
  toCompositeSpec,
  toMetricAlarmSpec,
  type CompositeSpec,
  type MetricAlarmSpec,
  type PeriodScaler,
} from './definitions';
import { parseEmf } from './emf';
import { AlarmDefinitionError, AlarmEvaluationError } from './errors';
import { evaluateMath } from './metric-math';
import { MetricStore, aggregate, type MetricId } from './metric-store';
import { OldestMessageTracker } from './oldest-message';
import type {
  AlarmAction,
  AlarmDelivery,
  AlarmKind,
  AlarmNotification,
  AlarmState,
  AlarmStatus,
  NotificationFanOut,
  Transition,
} from './state';
import { actionsSuppression } from './suppression';
import { decideAlarmState } from './thresholds';

/** What the evaluator reads and writes. */
export interface AlarmEvaluatorDeps {
  /**
   * Delivers an alarm action as CloudWatch does (the local platform publishes to the SNS topic as
   * cloudwatch.amazonaws.com, checked against the topic policy); a rejection is recorded as a
   * failed delivery, as CloudWatch records it in the alarm history. @default actions are recorded, not delivered
   */
  readonly notify?: (notification: AlarmNotification) => Promise<NotificationFanOut | void>;
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
  /**
   * How often start() samples the queues and evaluates, ms.
   * @default a twelfth of the shortest alarm period, between 1000 and 5000 ({@link defaultIntervalMs})
   */
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

interface CompositeRuntime {
  state: AlarmState;
  changedAt: number;
  owed: { state: AlarmState; since: number } | undefined;
  suppressed: boolean | undefined;
}

const PUT_METRIC_DATA_BATCH = 100;
/** Evaluations per shortest period when no interval is given, and the interval's bounds, ms. */
const SAMPLES_PER_PERIOD = 12;
const MIN_INTERVAL_MS = 1_000;
const MAX_INTERVAL_MS = 5_000;

/**
 * The evaluation interval for alarms whose shortest period is `shortestPeriodMs`: a twelfth of
 * it, between 1 s and 5 s; 1 s while no alarm is known. A state then changes at most one period
 * plus a twelfth of it after the data does, and an idle platform evaluates its 60 s alarms every
 * 5 s instead of every second (each evaluation: a DescribeAlarms, a GetQueueAttributes per queue).
 */
export function defaultIntervalMs(shortestPeriodMs: number | undefined): number {
  if (shortestPeriodMs === undefined || !Number.isFinite(shortestPeriodMs)) return MIN_INTERVAL_MS;
  return Math.min(
    MAX_INTERVAL_MS,
    Math.max(MIN_INTERVAL_MS, Math.floor(shortestPeriodMs / SAMPLES_PER_PERIOD)),
  );
}
const STATE_REASON_MAX = 1023;

function isMissingQueue(error: unknown): boolean {
  const name = (error as { name?: string } | null)?.name ?? '';
  return name === 'QueueDoesNotExist' || name === 'AWS.SimpleQueueService.NonExistentQueue';
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
    this.scaler = periodScaler(deps.periodSeconds, deps.periodScale ?? 1);
    const problems: string[] = [];
    const composites: CompositeSpec[] = [];
    for (const c of deps.compositeAlarms ?? []) {
      try {
        composites.push(toCompositeSpec(c));
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
      const intervalMs = this.deps.intervalMs ?? this.intervalForKnownAlarms();
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

  /** defaultIntervalMs of the shortest period among the metric alarms last read. */
  private intervalForKnownAlarms(): number {
    const periods = this.specs.map((s) => s.periodMs);
    return defaultIntervalMs(periods.length === 0 ? undefined : Math.min(...periods));
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
          (fanOut) => {
            this.deliveryLog.push({
              ...n,
              outcome: 'delivered',
              ...(fanOut === undefined ? {} : { fanOut }),
            });
            if (fanOut !== undefined && !fanOut.subscribers.some((s) => s.outcome !== 'failed'))
              this.deps.log?.(
                `${alarm}: published to ${target}, but no confirmed subscriber received it${fanOut.pending.length > 0 ? ` (pending confirmation: ${fanOut.pending.join(', ')})` : ''}`,
              );
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
