/**
 * The jobs a drill that takes any job type (`tenang drill <name> --job-type <type>`, a catalog
 * `anyJobType`) sends and judges. By default they are built from the job type's declared
 * `samplePayload`, sent straight to its queue and judged done once by what holds for any job
 * type: its idempotency record COMPLETED and one call per idempotency key in each of its
 * providers' fakes (lib/local/scenario-declared-jobs.ts, as the scenario and the chaos suite judge
 * them). An app whose job type needs its own domain to make a job (an order to charge) hands in
 * its own DrillJobs for it through its extensions (drillJobs).
 */
import { SendMessageCommand, type SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { providerVariable, type ResolvedJobType } from '../config';
import type { FakeProvider } from '../local/fake-provider';
import {
  declaredJobFacts,
  declaredJobMessage,
  declaredProviderCalls,
  judgeDeclaredJob,
  type DeclaredJob,
  type DeclaredJobIds,
  type DeclaredJobVerdict,
} from '../local/scenario-declared-jobs';
import type { DrillInfo } from '../ops/drills/catalog';
import type { DrillCheck, DrillContext } from './drill';
import { jobTarget, queueDepth, type JobTarget } from './support';

/** Requests the providers received so far, all together (retry-storm, permission-denied). */
export function providerRequests(providers: readonly FakeProvider[]): number {
  return providers.reduce((n, p) => n + p.requestCount(), 0);
}

/** One job a drill sent or put aside, by the ids its message carries. */
export interface DrillJob {
  readonly idempotencyKey: string;
  readonly correlationId: string;
}

/** What became of one job: done exactly once, never, or more than once. */
export type DrillJobVerdict = DeclaredJobVerdict;

/** Jobs a drill sends through one job type's consumer, and how it judges them. */
export interface DrillJobs {
  readonly target: JobTarget;
  /** The local fakes of the providers the jobs call (a retry storm takes them down). */
  readonly providers: readonly FakeProvider[];
  /** Sends `count` more jobs. */
  send(count: number): Promise<void>;
  /** Sends one more job, named `tag` within the drill's run; it is judged with the others. */
  sendOne(tag: string): Promise<DrillJob>;
  /**
   * A job never sent to the queue, judged with the others from now on: the drill puts its message
   * somewhere else (dlqMessage). May prepare what the job needs (the order it charges).
   */
  unsent(tag: string): Promise<DrillJob>;
  /** The SendMessage input of a copy of `job` in the job type's DLQ (its own deduplication id). */
  dlqMessage(job: DrillJob): SendMessageCommandInput;
  /** What became of `job` so far. */
  verdictOf(job: DrillJob): Promise<DrillJobVerdict>;
  /** How many of the jobs sent are done. */
  done(): Promise<number>;
  /** Waits until every job sent is done and the job type's queue is drained. */
  untilDone(): Promise<void>;
  /** The checks that every job sent was done exactly once. */
  checks(): Promise<DrillCheck[]>;
}

/** Whether a drill can play on `jobType`: jobs made from its samplePayload, or the app's own. */
function playable(ctx: DrillContext, jobType: ResolvedJobType): boolean {
  return jobType.samplePayload !== undefined || ctx.extensions.drillJobs?.[jobType.name] !== undefined;
}

/**
 * The job type a drill that takes any job type plays its incident on: `--job-type`, else the one
 * the app's extensions name for the drill (drillJobTypes), else the pipeline's first job type
 * with a samplePayload.
 */
export function drillJobType(ctx: DrillContext, drill: DrillInfo): ResolvedJobType {
  if (drill.anyJobType !== true) throw new Error(`drill ${drill.name} takes no job type`);
  const named = ctx.jobType ?? ctx.extensions.drillJobTypes?.[drill.name];
  if (named === undefined) {
    const first = ctx.config.jobTypes.find((j) => j.samplePayload !== undefined);
    if (first === undefined)
      throw new Error(
        `drill ${drill.name} needs a job type with a samplePayload (its jobs are made from it); the pipeline declares none`,
      );
    return first;
  }
  const found = ctx.config.jobTypes.find((j) => j.name === named && playable(ctx, j));
  if (found === undefined)
    throw new Error(
      `${ctx.jobType === undefined ? "the app's drillJobTypes name" : '--job-type'} ${named}: drill ${drill.name} plays on a job type the pipeline declares with a samplePayload (its jobs are made from it) or whose jobs the app's extensions make (drillJobs): ${
        ctx.config.jobTypes
          .filter((j) => playable(ctx, j))
          .map((j) => j.name)
          .join(', ') || 'none declared'
      }`,
    );
  return found;
}

/** The drill's jobs on the job type it plays on (drillJobType): the app's own, else declared ones. */
export function drillJobs(ctx: DrillContext, drill: DrillInfo): DrillJobs {
  const jobType = drillJobType(ctx, drill);
  const own = ctx.extensions.drillJobs?.[jobType.name];
  return own === undefined ? new DeclaredDrillJobs(ctx, jobType) : own(ctx);
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

  public unsent(tag: string): Promise<DeclaredJob> {
    const ids = this.ids(tag);
    this.track(ids);
    return Promise.resolve(ids);
  }

  public dlqMessage(job: DrillJob): SendMessageCommandInput {
    return this.message({ ...job, deduplicationId: `${job.idempotencyKey}-dead` }, this.target.dlqUrl);
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
  public async verdictOf(job: DrillJob): Promise<DeclaredJobVerdict> {
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
