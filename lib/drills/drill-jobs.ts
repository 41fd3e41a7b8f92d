/**
 * The jobs a drill that takes any job type (`tenang drill <name> --job-type <type>`, a catalog
 * `jobType`) sends and judges. On its own job type it keeps the reference's traffic (paid orders,
 * whose notifications follow); on a job type the app declares beyond the reference it sends jobs
 * built from the declared `samplePayload` straight to the job type's queue and judges each done
 * once by what holds for any job type: its idempotency record COMPLETED and one call per
 * idempotency key in each of its providers' fakes (lib/local/scenario-declared-jobs.ts, as the
 * scenario and the chaos suite judge them).
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { providerVariable, type ResolvedJobType } from '../config';
import type { FakeProvider } from '../local/fake-provider';
import {
  declaredJobFacts,
  declaredJobMessage,
  declaredJobTypes,
  declaredProviderCalls,
  judgeDeclaredJob,
  type DeclaredJob,
  type DeclaredJobIds,
  type DeclaredJobVerdict,
} from '../local/scenario-declared-jobs';
import type { DrillInfo } from '../ops/drills/catalog';
import type { DrillCheck, DrillContext } from './drill';
import {
  jobTarget,
  ledgerEntriesFor,
  oncePerOrderChecks,
  orderStates,
  placePaidOrders,
  queueDepth,
  untilNotifiedAndDrained,
  type JobTarget,
  type PlacedOrder,
} from './support';

/** Requests the providers received so far, all together (retry-storm, permission-denied). */
export function providerRequests(providers: readonly FakeProvider[]): number {
  return providers.reduce((n, p) => n + p.requestCount(), 0);
}

/** Jobs a drill sends through one job type's consumer, and how it judges them. */
export interface DrillJobs {
  readonly target: JobTarget;
  /** The local fakes of the providers the jobs call (a retry storm takes them down). */
  readonly providers: readonly FakeProvider[];
  /** Sends `count` more jobs. */
  send(count: number): Promise<void>;
  /** How many of the jobs sent are done. */
  done(): Promise<number>;
  /** Waits until every job sent is done and the job type's queue is drained. */
  untilDone(): Promise<void>;
  /** The checks that every job sent was done exactly once. */
  checks(): Promise<DrillCheck[]>;
}

/**
 * The job type a drill plays its incident on: `--job-type`, else the drill's own; in an app that
 * does not declare the drill's own (an app of its own, not the reference), its first job type
 * with a samplePayload. Undefined for the drill's own, so the drill keeps its reference incident.
 */
export function declaredDrillJobType(ctx: DrillContext, drill: DrillInfo): ResolvedJobType | undefined {
  if (ctx.jobType === undefined && drill.jobType !== undefined) {
    if (ctx.config.jobTypes.some((j) => j.name === drill.jobType)) return undefined;
    const first = declaredJobTypes(ctx.config.jobTypes)[0];
    if (first === undefined)
      throw new Error(
        `drill ${drill.name} needs a job type with a samplePayload (its jobs are made from it); the pipeline declares none`,
      );
    return first;
  }
  if (ctx.jobType === undefined || ctx.jobType === drill.jobType) return undefined;
  if (drill.jobType === undefined)
    throw new Error(`drill ${drill.name} is about a reference job type and takes no --job-type`);
  const declared = declaredJobTypes(ctx.config.jobTypes).find((j) => j.name === ctx.jobType);
  if (declared === undefined)
    throw new Error(
      `--job-type ${ctx.jobType}: drill ${drill.name} takes its own ${drill.jobType} or a job type the pipeline declares beyond the reference's with a samplePayload (its jobs are made from it): ${
        declaredJobTypes(ctx.config.jobTypes)
          .map((j) => j.name)
          .join(', ') || 'none declared'
      }`,
    );
  return declared;
}

/** The paid orders' notifications: the reference traffic of the pause drills. */
export function orderNotifications(ctx: DrillContext): DrillJobs {
  const target = jobTarget(ctx, 'notification.send');
  const orders: PlacedOrder[] = [];
  return {
    target,
    providers: [ctx.platform.providers.messaging],
    async send(count) {
      orders.push(...(await placePaidOrders(ctx, count)));
    },
    done: () =>
      Promise.resolve(orders.filter((o) => ledgerEntriesFor(ctx, 'messaging', o.orderId) > 0).length),
    untilDone: () => untilNotifiedAndDrained(ctx, orders, target.queueUrl),
    async checks() {
      const states = await orderStates(
        ctx,
        orders.map((o) => o.orderId),
      );
      return oncePerOrderChecks(ctx, orders, states);
    },
  };
}

/** Jobs of a declared job type, made from its `samplePayload`. */
export class DeclaredDrillJobs implements DrillJobs {
  public readonly target: JobTarget;
  public readonly providers: readonly FakeProvider[];
  private readonly sent: DeclaredJob[] = [];

  public constructor(
    private readonly ctx: DrillContext,
    public readonly jobType: ResolvedJobType,
  ) {
    this.target = jobTarget(ctx, jobType.name);
    this.providers = jobType.resources.providers.map((name) => {
      const fake = ctx.platform.providers.declared.get(providerVariable(name));
      if (fake === undefined) throw new Error(`no local fake for provider ${name} of ${jobType.name}`);
      return fake;
    });
  }

  /** The ids of the drill's `n`-th job of this job type (its key is unique to the drill's run). */
  public ids(n: number | string): DeclaredJobIds & DeclaredJob {
    return {
      jobType: this.jobType.name,
      idempotencyKey: `${this.ctx.runId}:${this.jobType.name}:${n}`,
      correlationId: `drill-${this.ctx.runId}-${n}`,
    };
  }

  /** The SendMessage input of job `ids` to `queueUrl` (the job type's queue or its DLQ). */
  public message(ids: DeclaredJobIds, queueUrl: string): ReturnType<typeof declaredJobMessage> {
    return declaredJobMessage(this.jobType, queueUrl, ids);
  }

  public async send(count: number): Promise<void> {
    for (let i = 0; i < count; i += 1) await this.sendOne(this.sent.length + 1);
  }

  /** Sends job `n` to the job type's queue; it is judged with the others. */
  public async sendOne(n: number | string): Promise<DeclaredJob> {
    const ids = this.ids(n);
    await this.ctx.sqs.send(new SendMessageCommand(this.message(ids, this.target.queueUrl)));
    this.track(ids);
    return ids;
  }

  /** Judges job `ids` with the others from now on (a job the drill put somewhere else, e.g. a DLQ). */
  public track(ids: DeclaredJob): void {
    if (!this.sent.some((j) => j.idempotencyKey === ids.idempotencyKey))
      this.sent.push({
        jobType: ids.jobType,
        idempotencyKey: ids.idempotencyKey,
        correlationId: ids.correlationId,
      });
  }

  /** Each tracked job with its verdict (read now). */
  public async verdicts(): Promise<(DeclaredJob & DeclaredJobVerdict)[]> {
    const table =
      this.ctx.platform.deployment.functions.get(this.target.functionName)?.environment.IDEMPOTENCY_TABLE ??
      '';
    const facts = await declaredJobFacts(this.ctx.dynamodb, table, [this.jobType], this.sent);
    const calls = declaredProviderCalls(
      this.ctx.platform.providers.declared,
      this.jobType.resources.providers,
    );
    return facts.map((fact) => ({
      ...fact,
      ...judgeDeclaredJob(fact, this.jobType.resources.providers, calls),
    }));
  }

  /** The verdict of one tracked job. */
  public async verdictOf(job: DeclaredJob): Promise<DeclaredJobVerdict> {
    const found = (await this.verdicts()).find((v) => v.idempotencyKey === job.idempotencyKey);
    if (found === undefined) throw new Error(`job ${job.idempotencyKey} is not tracked by the drill`);
    return found;
  }

  public async done(): Promise<number> {
    return (await this.verdicts()).filter((v) => v.outcome !== 'lost').length;
  }

  public async untilDone(): Promise<void> {
    await this.ctx.until(
      async () => ((await this.done()) >= this.sent.length ? true : undefined),
      `every ${this.jobType.name} job done`,
      90_000,
    );
    await this.ctx.until(async () => {
      const d = await queueDepth(this.ctx.sqs, this.target.queueUrl);
      return d.visible + d.inFlight === 0 ? true : undefined;
    }, `the ${this.jobType.name} queue to drain`);
  }

  public async checks(): Promise<DrillCheck[]> {
    const verdicts = await this.verdicts();
    return [
      this.ctx.check(
        `every ${this.jobType.name} job done once`,
        verdicts.length > 0 && verdicts.every((v) => v.outcome === 'ok'),
        verdicts.map((v) => `${v.correlationId}: ${v.outcome} (${v.detail})`).join('; '),
      ),
    ];
  }
}

/** The drill's jobs: the reference's own traffic, or a declared job type's (`--job-type`). */
export function drillJobs(
  ctx: DrillContext,
  drill: DrillInfo,
  reference: (ctx: DrillContext) => DrillJobs,
): DrillJobs {
  const declared = declaredDrillJobType(ctx, drill);
  return declared === undefined ? reference(ctx) : new DeclaredDrillJobs(ctx, declared);
}
