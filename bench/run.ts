/**
 * `npm run bench`: every comparison measured side by side in one run; writes
 * bench/results.json and bench/REPORT.md.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command } from 'commander';
import {
  CONTENTION_PROTOCOLS,
  callsPerAttempt,
  type BackoffFigure,
  type BackoffSimulationResults,
  type BackoffStrategyName,
  type ContentionProtocol,
} from './backoff';
import {
  backoffResultsByProtocol,
  measureBackoff,
  ratioToExponential,
  type BackoffResults,
  type LegacyBackoffResults,
  type PerProtocol,
} from './backoff-emulator';
import { backlogSection, measureBacklog, type BacklogResults } from './backlog';
import { latencySection, measureLatency, type LatencyResults, type LatencySizes } from './latency';
import {
  handlerTimeSection,
  measureHandlerTime,
  type HandlerTimeResults,
  type HandlerTimeSizes,
} from './handler-time';
import {
  measureBundles,
  READY_OVER_FLOOR_TARGET,
  READY_OVER_PEER_TARGET,
  type BundleResult,
} from './bundles';
import { measureCache, type CacheResults, type StampedeFigure } from './cache';
import { commandList, measureCalls, type CallsFigure, type CallsResults, type CapacityFigure } from './calls';
import { encodePipeline } from '../lib/config';
import { referencePipeline } from '../examples/reference/pipeline';

// The bench runs the reference app's code unbundled: it reads the app's declaration as tests do.
process.env.TENANG_PIPELINE ??= encodePipeline(referencePipeline('bench', 'us-east-1'));

export interface Results {
  readonly generatedAt: string;
  readonly machine: { readonly node: string; readonly cpus: number; readonly platform: string };
  readonly calls?: CallsResults;
  readonly bundles?: readonly BundleResult[];
  readonly cache?: CacheResults;
  /** Before there were protocols, the backoff section held read-then-write's figures alone. */
  readonly backoff?: BackoffResults | LegacyBackoffResults;
  readonly backlog?: BacklogResults;
  readonly latency?: LatencyResults;
  readonly handlerTime?: HandlerTimeResults;
  /** Sections measured in the run that wrote this file; the others were kept from an earlier run. */
  readonly measuredNow?: readonly string[];
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}

const CASE_LABEL: Record<CallsFigure['case'], string> = {
  success: 'success',
  duplicate: 'duplicate',
  'failed-then-retried': 'failed, then retried',
};

/** Up to two decimals, no trailing zeros: 2, 0.5, 1.05. */
function mean(n: number): string {
  return String(Number(n.toFixed(2)));
}

/**
 * The target for a successful capture: no more capacity than the Powertools baseline's
 * (3 write units + 1 read unit), the floor being 2 write units (one conditional write to claim,
 * one to complete). Judged on the units measured for each.
 */
function captureTarget(priced: readonly { f: CallsFigure; k: CapacityFigure }[]): string[] {
  const of = (system: CallsFigure['system']) =>
    priced.find(({ f }) => f.case === 'success' && f.system === system)?.k;
  const t = of('tenang');
  const b = of('powertools-baseline');
  if (t === undefined || b === undefined) return [];
  const met = t.writeUnitsPerJob <= b.writeUnitsPerJob && t.readUnitsPerJob <= b.readUnitsPerJob;
  return [
    `Target for a successful capture: no more capacity than the baseline's, aiming at the floor of 2 write units. tenang ${mean(t.writeUnitsPerJob)} WRU + ${mean(t.readUnitsPerJob)} RRU, baseline ${mean(b.writeUnitsPerJob)} WRU + ${mean(b.readUnitsPerJob)} RRU: **${met ? 'met' : 'not met'}**${met && t.writeUnitsPerJob <= 2 && t.readUnitsPerJob === 0 ? ', at the floor' : ''}.`,
    '',
  ];
}

function callsSection(c: CallsResults): string[] {
  const lines = [
    '## DynamoDB and SQS calls per job',
    '',
    `Commands the function itself sent through its SDK clients, counted by a middleware (harness/aws/call-counter.ts: one per \`send\`, the SDK's own retries not included), mean per job over ${c.jobsPerCase} jobs per case, against moto. Each consumer has its own FIFO queue and DLQ and receives real messages through the local event source mapping (records built by lib/local/sqs-event.ts, as Lambda delivers them); the mapping's ReceiveMessage and DeleteMessageBatch are the Lambda service's, not the function's, and are not counted.`,
    '',
    "- **tenang**: the payment consumer (examples/reference/jobs/payment-capture.ts over the job runner's clients), its idempotency record kept on the order it guards: the claim is one conditional UpdateItem of the order (the capture guard and Powertools' claim condition), the completion another (the PAID transition and the record's completion); a transient failure releases the record and sets the retry's backoff with ChangeMessageVisibility, a permanent one sends to the DLQ.",
    '- **Powertools baseline** (harness/powertools-baseline.ts): makeIdempotent over DynamoDBPersistenceLayer, the order read for the capture guard, the PAID transition as its own write, SqsFifoPartialProcessorAsync (the processor Powertools documents for a FIFO queue, one record after another; it used BatchProcessor before the handler-time section, which changes no count); a failed message waits out the visibility timeout. Without the read it would make one call less per success (the 3 often quoted), and charge a cancelled order or a wrong amount.',
    '',
    `Cases: **success**, a new job for a PENDING order; **duplicate**, the same job delivered again after it succeeded; **failed, then retried**, the payment provider refuses the job's first request and its second delivery succeeds: the calls of both deliveries together. Every case is checked before its counts are kept: each order PAID once, one charge per job, nothing in the DLQ. The queues' visibility timeout is ${c.visibilityTimeoutSeconds} s here so the baseline's retry returns within the run; tenang's backoff is set to 0 s; neither changes the counts.`,
    '',
    'Columns: **DynamoDB / job** and **SQS / job**, the commands the function sent to each service, divided by the jobs; **all / job**, their sum; **by command**, the same calls split by command (mean per job); **deliveries / job**, times the mapping handed each job to the function; **provider requests / job**, HTTP requests that reached the payment provider, refused ones included.',
    '',
    '| case | consumer | DynamoDB / job | SQS / job | all / job | by command (per job) | deliveries / job | provider requests / job |',
    '|---|---|---|---|---|---|---|---|',
    ...c.figures.map(
      (f) =>
        `| ${CASE_LABEL[f.case]} | ${f.system === 'tenang' ? '**tenang**' : 'Powertools baseline'} | ${mean(f.dynamoDb.perJob)} | ${mean(f.sqs.perJob)} | ${mean(f.dynamoDb.perJob + f.sqs.perJob)} | ${commandList(f)} | ${mean(f.deliveriesPerJob)} | ${mean(f.providerRequestsPerJob)} |`,
    ),
    '',
  ];
  // Units and cost: only in results measured since they were added.
  const priced = c.figures.flatMap((f) => (f.capacity === undefined ? [] : [{ f, k: f.capacity }]));
  const p = c.prices;
  const fn = c.lambda;
  if (priced.length === 0 || p === undefined || fn === undefined) return lines;
  const usd = (n: number): string => `$${n.toFixed(n < 1 ? 3 : 2)}`;
  /** A published price as published: $0.40, $0.625, $0.0000133334. */
  const price = (n: number): string =>
    `$${Number.isInteger(Math.round(n * 1e6) / 1e4) ? n.toFixed(2) : String(n)}`;
  const units = (k: CapacityFigure): string =>
    Object.entries(k.unitsByCommand)
      .map(
        ([name, u]) =>
          `${name} ${[u.write > 0 ? `${mean(u.write)} W` : '', u.read > 0 ? `${mean(u.read)} R` : ''].filter(Boolean).join(' + ') || '0'}`,
      )
      .join(', ') || 'none';
  const fifo = c.queueKind === 'fifo';
  const others = c.unmeasuredJobTypes ?? [];
  const totals = (kind: CallsFigure['case']): string => {
    const of = (system: CallsFigure['system']): number | undefined =>
      priced.find(({ f }) => f.case === kind && f.system === system)?.k.costPerMillionJobs.total;
    const t = of('tenang');
    const b = of('powertools-baseline');
    return t === undefined || b === undefined
      ? ''
      : `${CASE_LABEL[kind]}: tenang ${usd(t)}, baseline ${usd(b)} per million jobs (${(t / b).toFixed(2)}×)`;
  };
  const sizedJobs = priced[0]?.k.sizedJobs ?? 0;
  const timedJobs = priced[0]?.k.timedJobs ?? 0;
  return [
    ...lines,
    '### Units and cost per job',
    '',
    `What the calls above are billed by AWS's published rules (harness/aws/capacity.ts, each rule with its source), and what a million jobs cost at on-demand prices. **Job types:** only **${c.jobType ?? 'payment.capture'}** is measured${others.length > 0 ? `; the pipeline's other job types (${others.join(', ')}) are not, and have no figures here` : ''}.`,
    '',
    `- **DynamoDB read and write request units** (RRU, WRU; the same units as provisioned RCU and WCU), recorded per request by recordDynamoDbCapacity (harness/aws/call-counter.ts), which reads each item a request touches aside, before and after it, through another client: the item's size as DynamoDB measures it (attribute names and values), writes in 1 KB units, reads in 4 KB units (half for an eventually consistent read), twice in a transaction; PutItem and UpdateItem on the larger of the item before and after, DeleteItem on the item deleted, a failed condition on the item found (1 when none). Two rules are not in the documentation: a ConditionCheck is billed as a transactional write of the item checked (2 WRU per KB, what DynamoDB reports for one), and a cancelled transaction as a failed condition on every item, twice (DynamoDB reports nothing for it: an upper bound). Sized on each case's first ${sizedJobs} jobs: units do not vary between the jobs of a case.`,
    `- **SQS requests**, one per 64 KB chunk of an action's payload (a batch of up to 10 messages is one action): the function's own (ChangeMessageVisibility, DLQ sends) and the mapping's non-empty ReceiveMessage and its DeleteMessageBatch, per job. Left out: the mapping's empty long polls (an idle queue's, no job's) and the producer's send. The local mapping batches as it can, not as Lambda's pollers do: its share per job is indicative. ${fifo ? 'The queues are FIFO: FIFO request price.' : 'Standard queues: standard request price.'}`,
    `- **Lambda**: invocations per job (requests) and GB-seconds: each invocation's handler wall time, in process, rounded up to 1 ms, × the job type's ${fn.memoryMb} MB, priced for ${fn.architecture} (lib/infra/defaults.ts). Timed on the ${timedJobs} jobs of the other rounds (the first round's aside reads run inside the handler). Against moto over loopback on a shared machine: durations are this machine's, not Lambda's; compare them, do not forecast with them.${priced.some(({ k }) => k.durationIncludesSizing === true) ? ' ⚠ This run had a single round: its durations include the aside reads.' : ''}`,
    '',
    '| case | consumer | WRU / job | RRU / job | units by command (per job) | SQS requests / job (function + mapping) | invocations / job | billed ms / job | GB-s / job | DynamoDB | SQS | Lambda | **total / million jobs** |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...priced.map(
      ({ f, k }) =>
        `| ${CASE_LABEL[f.case]} | ${f.system === 'tenang' ? '**tenang**' : 'Powertools baseline'} | ${mean(k.writeUnitsPerJob)} | ${mean(k.readUnitsPerJob)} | ${units(k)} | ${mean(k.functionSqsRequestsPerJob + k.mappingSqsRequestsPerJob)} (${mean(k.functionSqsRequestsPerJob)} + ${mean(k.mappingSqsRequestsPerJob)}) | ${mean(k.invocationsPerJob)} | ${k.billedMsPerJob.toFixed(1)} | ${k.gbSecondsPerJob.toFixed(4)} | ${usd(k.costPerMillionJobs.dynamoDb)} | ${usd(k.costPerMillionJobs.sqs)} | ${usd(k.costPerMillionJobs.lambda)} | **${usd(k.costPerMillionJobs.total)}** |`,
    ),
    '',
    `Cost per million jobs: ${(['success', 'duplicate', 'failed-then-retried'] as const).map(totals).filter(Boolean).join('; ')}.`,
    '',
    ...captureTarget(priced),
    `**Prices** (${p.region}, ${p.currency}, on-demand, read ${p.asOf}; first tiers, free tiers left out):`,
    '',
    `- DynamoDB, Standard table class (after the November 2024 cut of on-demand throughput prices): ${price(p.dynamoDb.perMillionWriteRequestUnits)} per million write request units, ${price(p.dynamoDb.perMillionReadRequestUnits)} per million read request units — ${p.source.dynamoDb}`,
    `- SQS: ${price(p.sqs.perMillionStandardRequests)} per million standard-queue requests, ${price(p.sqs.perMillionFifoRequests)} per million FIFO requests — ${p.source.sqs}`,
    `- Lambda: ${price(p.lambda.perMillionRequests)} per million requests; ${price(p.lambda.perGbSecond.x86_64)} per GB-second on x86_64, ${price(p.lambda.perGbSecond.arm64)} on arm64 — ${p.source.lambda}`,
    '',
  ];
}

const STRATEGY_LABEL: Record<BackoffStrategyName, string> = {
  none: 'no backoff',
  exponential: 'exponential, no jitter',
  'full-jitter': '**full jitter** (lib/core/backoff.ts)',
};

const PROTOCOL_LABEL: Record<ContentionProtocol, string> = {
  'read-then-write': '*read-then-write* (two calls per attempt)',
  'write-returns-current': '*write-returns-current* (one call per attempt)',
};

/** Up to two decimals, fixed: 0.40. */
function ratio(n: number): string {
  return n.toFixed(2);
}

/** One experiment's table; a target is full jitter's `metric` at most `target` × exponential's. */
function backoffTable(
  figures: readonly BackoffFigure[],
  unit: string,
  target?: { readonly metric: 'calls' | 'timeMs'; readonly ratio: number },
): string[] {
  const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
  return [
    `| strategy | ${unit} (median) | ${unit} (min–max) | time (median) | time (min–max) | ${unit} ÷ exponential | time ÷ exponential | target | met |`,
    '|---|---|---|---|---|---|---|---|---|',
    ...figures.map((f) => {
      const judged = target !== undefined && f.strategy === 'full-jitter';
      const goal = judged ? `${target.metric === 'calls' ? unit : 'time'} ≤ ${target.ratio}×` : '—';
      const met = judged
        ? ratioToExponential(figures, f.strategy, target.metric) <= target.ratio
          ? 'yes'
          : 'no ⚠'
        : '—';
      return `| ${STRATEGY_LABEL[f.strategy]} | ${f.calls.median} | ${f.calls.min}–${f.calls.max} | ${seconds(f.timeMs.median)} | ${seconds(f.timeMs.min)}–${seconds(f.timeMs.max)} | ${ratio(ratioToExponential(figures, f.strategy, 'calls'))} | ${ratio(ratioToExponential(figures, f.strategy, 'timeMs'))} | ${goal} | ${met} |`;
    }),
  ];
}

/** The protocols `byProtocol` holds, in report order, with their results. */
function present<T>(byProtocol: PerProtocol<T>): (readonly [ContentionProtocol, T])[] {
  return CONTENTION_PROTOCOLS.flatMap((p) => {
    const value = byProtocol[p];
    return value === undefined ? [] : [[p, value] as const];
  });
}

/** One table per protocol present, each under its protocol's name. */
function perProtocolTables<T extends { readonly figures: readonly BackoffFigure[] }>(
  byProtocol: PerProtocol<T>,
  unit: string,
  target?: { readonly metric: 'calls' | 'timeMs'; readonly ratio: number },
): string[] {
  return present(byProtocol).flatMap(([p, r]) => [
    PROTOCOL_LABEL[p],
    '',
    ...backoffTable(r.figures, unit, target),
    '',
  ]);
}

/** A strategy's median figure in `figures`, NaN when it is missing. */
function median(
  figures: readonly BackoffFigure[],
  strategy: BackoffStrategyName,
  metric: 'calls' | 'timeMs',
): number {
  return figures.find((f) => f.strategy === strategy)?.[metric].median ?? NaN;
}

/** Share of the time the model's server spent serving requests, with `strategy`. */
function modelBusy(model: BackoffSimulationResults, strategy: BackoffStrategyName): string {
  const requests =
    median(model.figures, strategy, 'calls') * callsPerAttempt(model.protocol ?? 'read-then-write');
  return `${((100 * requests * model.serviceMs) / median(model.figures, strategy, 'timeMs')).toFixed(0)} %`;
}

/** What the emulator's and the model's figures say about the time target, per protocol. */
function backoffReading(b: BackoffResults): string[] {
  const lines: string[] = [];
  const target = b.targets.emulatorTime;
  for (const [p, emu] of present(b.emulator)) {
    const time = ratioToExponential(emu.figures, 'full-jitter', 'timeMs');
    const met = time <= target;
    const vsNone = (metric: 'calls' | 'timeMs'): string =>
      ratio(median(emu.figures, 'full-jitter', metric) / median(emu.figures, 'none', metric));
    const model = b.emulatorModel[p];
    const verdict = `against the emulator full jitter finishes in ${ratio(time)}× the time of exponential without jitter, with ${ratio(ratioToExponential(emu.figures, 'full-jitter', 'calls'))}× its calls: the time target (≤ ${target}×) is **${met ? 'met' : 'not met'}**${model === undefined ? '' : `; the model of the emulator gives ${ratio(ratioToExponential(model.figures, 'full-jitter', 'timeMs'))}×`}. Against no backoff, full jitter takes ${vsNone('timeMs')}× the time and ${vsNone('calls')}× the calls.`;
    let why = '';
    if (model !== undefined && p === 'read-then-write' && !met) {
      const sim = b.simulation[p];
      const simulationCalls =
        sim === undefined
          ? 'no figure'
          : `${ratio(ratioToExponential(sim.figures, 'full-jitter', 'calls'))}×`;
      why = ` Why: on a serializing server the queue itself desynchronizes the clients. Requests are answered one at a time (${model.serviceMs.toFixed(1)} ms each here), so clients that fail together hear it one request apart and, waiting equal delays, come back one request apart too. That spreading is what jitter does in the simulation, whose server never queues and where exponential's clients fail and return together. Each read-then-write attempt reads the version afresh, so a client the queue has set apart from the others can commit however long it waited: full jitter makes ${ratio(ratioToExponential(model.figures, 'full-jitter', 'calls'))}× exponential's attempts in the model and ${ratio(ratioToExponential(emu.figures, 'full-jitter', 'calls'))}× its calls against the emulator, against ${simulationCalls} in the simulation.`;
    }
    if (model !== undefined && p === 'write-returns-current') {
      const exponentialCalls = median(model.figures, 'exponential', 'calls');
      const rounds = (model.clients * (model.clients + 1)) / 2;
      why =
        exponentialCalls === rounds
          ? ` Here the queue's spreading works against exponential without jitter: a failed write tells its client the version at that moment, the failures are answered one request apart, and equal delays bring the clients back in the order they failed, so the first to return commits and every other carries a version from before that commit. One commit per round, as without backoff: ${exponentialCalls} attempts in the model, N(N+1)/2, with the server idle through the growing waits (busy ${modelBusy(model, 'exponential')} of the time). Full jitter reorders the returns, so more than one client commits per round (${median(model.figures, 'full-jitter', 'calls')} attempts in the model, busy ${modelBusy(model, 'full-jitter')}).`
          : ` In the model exponential without jitter makes ${exponentialCalls} attempts (N(N+1)/2 = ${rounds}), full jitter ${median(model.figures, 'full-jitter', 'calls')}.`;
    }
    lines.push(
      `- **${p === 'read-then-write' ? 'Read-then-write' : 'Write-returns-current'}**: ${verdict}${why}`,
    );
  }
  return lines.length === 0 ? [] : ['**What the figures say**', '', ...lines, ''];
}

function backoffSection(stored: BackoffResults | LegacyBackoffResults): string[] {
  const b = backoffResultsByProtocol(stored);
  const sim = present(b.simulation)[0]?.[1];
  const emu = present(b.emulator)[0]?.[1];
  const models = present(b.emulatorModel);
  const model = models[0]?.[1];
  const clients = sim?.clients ?? emu?.clients ?? model?.clients ?? 0;
  return [
    '## Backoff under contention',
    '',
    `${clients} clients each make one optimistic-concurrency write to one hot item (a write on condition that the version has not changed since the client learned it) and retry until it commits, with **no backoff**, **exponential backoff without jitter** (min(cap, base × 2^(n−1)), lib/config/derive.ts) or **full jitter** (a whole number of ms drawn from 0 to that, lib/core/backoff.ts). Two protocols: **read-then-write**, Brooker's: each attempt reads the version, then writes on it, two calls; **write-returns-current**, one call per attempt, as DynamoDB clients do when they can (tenang's dedup store claims this way): a conditional UpdateItem with ReturnValuesOnConditionCheckFailure ALL_OLD, the first on version 0, the one the item was created with; a failed write returns the item, and after backing off the client writes again on the version it returned. Targets (reliability issue), judged for each protocol: in the simulation full jitter makes ≤ ${b.targets.simulationCalls}× the calls of exponential without jitter; against the emulator it finishes in ≤ ${b.targets.emulatorTime}× the time.`,
    '',
    ...(sim === undefined
      ? []
      : [
          `**Simulation** (bench/backoff.ts): a seeded discrete-event model after Marc Brooker's "Exponential Backoff And Jitter" (AWS Architecture Blog). One-way network delay |N(${sim.networkMeanMs}, ${sim.networkSdMs})| ms, a server that answers at once and never queues; of the writes that overlap in one contention window only one commits. Base ${sim.policy.baseDelaySeconds} ms, cap ${sim.policy.maxDelaySeconds} ms (Brooker's). Attempts are a read and a conditional write each with read-then-write (Brooker counts the writes), the conditional write alone with write-returns-current, so within a protocol the ratio of attempts is the ratio of calls; time is virtual, until the last client has committed. Median and range over ${sim.seeds} seeds.`,
          '',
          ...perProtocolTables(b.simulation, 'attempts', {
            metric: 'calls',
            ratio: b.targets.simulationCalls,
          }),
        ]),
    ...(emu === undefined
      ? []
      : [
          `**Emulator** (bench/backoff-emulator.ts): ${emu.clients} concurrent clients in one process against moto, with UpdateItem on condition \`version = :seen\`, backing off on ConditionalCheckFailedException: read-then-write reads the version with GetItem (consistent) before each UpdateItem; write-returns-current sends the UpdateItem alone, first on version 0, and takes the version from the item the exception returns. Base ${emu.policy.baseDelaySeconds} ms, cap ${emu.policy.maxDelaySeconds} ms. The clients share one SDK client with one connection and no SDK retries, so moto serves their requests one at a time in arrival order: the server queues. (Over many connections moto 5.2.1 serves requests on threads and its condition check and write are not atomic: two writes on the same version can both commit, and the counter ends below ${emu.clients}.) Calls are the SDK commands counted by harness/aws/call-counter.ts (two per attempt with read-then-write, one with write-returns-current, checked); time is wall time until all ${emu.clients} have committed. ${emu.runs} runs per protocol and strategy, interleaved in rotating order, each checked (counter and version end at ${emu.clients}) before it is kept; median and range.`,
          '',
          ...perProtocolTables(b.emulator, 'SDK calls', { metric: 'timeMs', ratio: b.targets.emulatorTime }),
        ]),
    ...(model === undefined
      ? []
      : [
          `**Model of the emulator**: the simulation with the emulator's conditions instead of Brooker's: one server that serves a request at a time in arrival order, ${models.map(([p, m]) => `${m.serviceMs.toFixed(1)} ms each with ${p}`).join(' and ')} (that protocol's no-backoff runs against the emulator: median time ÷ median calls; the connection is never idle there), no network delay beyond that, base ${model.policy.baseDelaySeconds} ms, cap ${model.policy.maxDelaySeconds} ms; attempts (two requests each with read-then-write, one with write-returns-current) and virtual time, over ${model.seeds} seeds. Serving one request of each of the ${model.clients} clients takes ${((model.clients * model.serviceMs) / 1000).toFixed(2)} s, against the ${model.policy.maxDelaySeconds} ms cap. Not a target: a check that the model explains the emulator's figures.`,
          '',
          ...perProtocolTables(b.emulatorModel, 'attempts'),
        ]),
    ...backoffReading(b),
  ];
}

function report(r: Results): string {
  const lines: string[] = [
    '# tenang benchmark report',
    '',
    `Generated ${r.generatedAt} on Node ${r.machine.node}, ${r.machine.cpus} CPUs (${r.machine.platform}). Counts are exact; times are medians of interleaved runs on a shared machine and move between runs — read the ratios.${r.measuredNow !== undefined && r.measuredNow.length < SECTIONS.length ? ` This run measured ${r.measuredNow.join(', ')}; the other sections are kept from an earlier run.` : ''}`,
    '',
  ];
  if (r.calls !== undefined) lines.push(...callsSection(r.calls));
  if (r.bundles !== undefined) lines.push(...bundlesSection(r.bundles));
  if (r.cache !== undefined) {
    lines.push(
      '## Cache',
      '',
      `Redis round trips per cache hit: **${r.cache.roundTripsPerHit.toFixed(2)}** over ${r.cache.hitReads} sequential warm reads (target 1).`,
      '',
      `Loader calls (reads reaching DynamoDB), Redis commands and read latency when one hot key expires under ${stampedeShape(r.cache.stampede[0])}, every process released at the same instant once all are connected (a process late by more than a few ms finds the key further along); the load takes 200 ms. ${stampedeRounds(r.cache.stampede[0])} Targets for ours: 1 loader call, at most ${STAMPEDE_COMMANDS_PER_READER_TARGET} Redis commands per reader, and a p99 no higher than naive cache-aside's in the same run. Waiters do not poll: a caller that loses the load lock is handed the position of the key's landing signal in the same script, blocks on it (XREAD BLOCK on a connection of its own) and is woken, and handed the value, by the script that releases the lock after the write-back (lib/core/cache-policy.ts, lib/adapters/redis/redis-cache.ts). Redis commands are every command the processes sent while their readers ran, blocking reads included (ioredis's command trace); connections are opened before the start, the blocking ones too, as on a warm instance. p99 is the slowest process's.`,
      '',
      '| protection | readers | loader calls | Redis commands | commands / reader | p99 ms (each round) | last process late by ms |',
      '|---|---|---|---|---|---|---|',
      ...r.cache.stampede.map(
        (s) =>
          `| ${s.protection === 'none' ? 'naive cache-aside' : s.protection === 'full' ? '**ours** (single-flight + Redis load lock)' : 'single-flight only'} | ${s.readers} | ${s.loaderCalls} | ${s.redisCommands} | ${(s.redisCommands / s.readers).toFixed(2)} | ${s.p99Ms.toFixed(0)}${s.p99MsByRound === undefined ? '' : ` (${s.p99MsByRound.map((ms) => ms.toFixed(0)).join(', ')})`} | ${s.lateStartMs === undefined ? '—' : s.lateStartMs.toFixed(0)} |`,
      ),
      '',
    );
    const ours = r.cache.stampede.find((s) => s.protection === 'full');
    const naive = r.cache.stampede.find((s) => s.protection === 'none');
    if (ours !== undefined) lines.push(stampedeVerdict(ours, naive), '');
  }
  if (r.backoff !== undefined) lines.push(...backoffSection(r.backoff));
  if (r.backlog !== undefined) lines.push(...backlogSection(r.backlog));
  if (r.latency !== undefined) lines.push(...latencySection(r.latency));
  if (r.handlerTime !== undefined) lines.push(...handlerTimeSection(r.handlerTime));
  return lines.join('\n');
}

/** "0.43 (met)" / "1.24 (**not met**)" against a ceiling. */
function judged(ratio: number, ceiling: number): string {
  return `${ratio.toFixed(2)} (${ratio <= ceiling ? 'met' : '**not met**'})`;
}

/** The report's bundles section: sizes, and cold starts against the floor and the peer. */
function bundlesSection(bundles: readonly BundleResult[]): string[] {
  const overFloor = (b: BundleResult): number => b.ready.handler / b.ready.floor;
  const overPeer = (b: BundleResult): number | undefined =>
    b.peer === undefined ? undefined : b.ready.handler / b.peer.readyMs;
  const peerRatios = bundles.flatMap((b) => overPeer(b) ?? []);
  /** "met by 3 of 8 (1.16–1.41)", or that there is none to judge. */
  const verdicts = (xs: readonly number[], ceiling: number, of: string): string =>
    xs.length === 0
      ? `no ${of} measured`
      : `**met by ${xs.filter((x) => x <= ceiling).length} of ${xs.length}** ${of} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
  return [
    '## Handler bundles and cold start',
    '',
    `Each handler bundled as TenangFunction has NodejsFunction bundle it (esbuild, minified, ESM, node22, the SDK inside), and timed in a fresh Node process: its **cold start** is the module load plus the first invocation, up to the invocation's first network request (http/https.request, tls.connect or a socket connect) or its return — the code a cold start runs before it waits on anything; the network then takes the same for any handler making the same calls, and the bench has no AWS to call. The first invocation is an empty batch for queue and stream consumers, the main route for the HTTP functions, a scheduled run for the flag reconciler. Beside it, in the same run and interleaved: the **bare** handler (constructs only the same SDK clients, and the Redis client where the handler has one, and when the first invocation's first network request is an AWS call, makes that call too: the same operation with an empty input, as the SDK's work for a first request — its middleware, endpoint rules, credentials, serialization and signing — comes before the network whatever code makes it), the **libraries floor** (the bare handler plus the Powertools packages and zod the bundle holds code of, each constructed as the handler does) and the **by-the-book peer**: the same handler written as the Powertools documentation shows it (Logger.addContext, Metrics.publishStoredMetrics, processPartialResponse over a BatchProcessor, makeIdempotent over a DynamoDBPersistenceLayer with registerLambdaContext, getParameter from parameters/ssm, a zod schema for its input; bench/bundles.ts PEERS; a job type's peer is its handler module in harness/peers/, which does the job's real work, as the handler-time section runs it) bundled with NodejsFunction's defaults (CommonJS, not minified, \`@aws-sdk/*\` left to the runtime's copy, loaded through NODE_PATH as Lambda does). Medians of interleaved runs.`,
    '',
    `**Targets**: cold start ≤ ${READY_OVER_FLOOR_TARGET} × the floor (our code adds at most 5 % to what the libraries cost): ${verdicts(bundles.map(overFloor), READY_OVER_FLOOR_TARGET, 'handlers')}. Cold start ≤ ${READY_OVER_PEER_TARGET} × the peer: ${verdicts(peerRatios, READY_OVER_PEER_TARGET, 'peered handlers')}.`,
    '',
    '| handler | first invocation | cold start ms | bare | floor | peer | ÷ floor | ÷ peer | load ms | floor load ms | bundle | peer bundle | libraries | SDK clients | largest packages |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...bundles.map(
      (b) =>
        `| ${b.handler} | ${b.firstInvocation}${b.firstAwsCall === undefined ? '' : ` → ${b.firstAwsCall.split('.').pop() ?? ''}`} | ${b.ready.handler.toFixed(1)} | ${b.ready.bare.toFixed(1)} | ${b.ready.floor.toFixed(1)} | ${b.peer === undefined ? '—' : b.peer.readyMs.toFixed(1)} | ${judged(overFloor(b), READY_OVER_FLOOR_TARGET)} | ${b.peer === undefined ? 'no peer' : judged(b.ready.handler / b.peer.readyMs, READY_OVER_PEER_TARGET)} | ${b.loadMsMedian.toFixed(1)} | ${b.floorLoadMsMedian.toFixed(1)} | ${kib(b.bytes)} | ${b.peer === undefined ? '—' : kib(b.peer.bytes)} | ${b.floorLibraries.join(', ')} | ${b.sdkClients.join(', ')} | ${b.topPackages.map((p) => `${p.name} ${kib(p.bytes)}`).join(', ')} |`,
    ),
    '',
    ...COLD_START_FINDINGS,
    '',
  ];
}

/**
 * Where the cold start over the floor goes, from isolated bundles and CPU profiles of the
 * unminified handler bundles (2026-12-06): written down here, not measured by each run.
 */
const COLD_START_FINDINGS = [
  "**Where the time over the floor goes** (not re-measured by the bench; 2026-12-06): from isolated bundles timed as the bench times them (medians of 21 to 31 interleaved runs), from CPU profiles of the unminified handler bundles (node --cpu-prof, 0.1 ms sampling) and, as the machine the bench ran on was shared, from instruction counts (valgrind, node --predictable: the same count on every run), net of an empty bundle's.",
  "- The pipeline config. The declaration's schemas (lib/config/schema.ts) are built on their first use, and a bundled function reads the config the synth loaded (`TENANG_PIPELINE_RESOLVED`) without the declaration's loader: `stageConfig` tests the compiled-in constant itself, so esbuild drops the loader, and in another stage or region than declared the config's derived names are derived again (restagePipeline). A bundle that only imports `stageConfig` loads in 2.7 ms against 0.8 ms for an empty one and 2.4 ms for zod/mini alone (it was 10.4 ms; 26 KB where it was 62 KB; 9.5 M instructions over the empty bundle where it was 45 M).",
  "- The floor was corrected twice. The bare handler (and so the floor) now makes the AWS call the handler's first invocation makes before anything else reaches the network (ingress: PutItem, flag-reconciler: GetParameters): the SDK's work for a first request is the SDK's, about 10 ms on this machine, and the floor stopped before it while the handler could not. And a Powertools package counts as used when the bundle holds what the floor constructs of it, not a few constants a barrel's re-export keeps (ingress and order-reader held 172 bytes of batch's constants and no processor, yet their floor built a BatchProcessor).",
  "- What remains is mostly code loaded, not code run. For payment-capture (instructions): its first invocation runs 2.1 M past the floor's constructions (under 1 %), while loading the 85 KB its bundle holds past the floor's costs 28 M (10 %): 9.3 M to parse it and the rest to run the module scope of what it imports (the runner, the DynamoDB document client, the transactional persistence layer, the domain's schemas) and to compile what runs. The job handlers and outbox-relay no longer publish metrics when none was recorded, which on an empty batch only logged Powertools' warning (4.6 M).",
  "- cache-invalidator: the ElastiCache IAM signer its bundle holds (the SigV4 signer and the token code: on AWS the cache functions authenticate with IAM) costs 9.1 M instructions of its 25 M over the floor, though the bench's Redis takes no token; the environment check 3 M to 6 M over the floor's (a zod object of ten variables and a cross-field check against the floor's two). The SDK's fromEnv (19 KB of @aws-sdk/core's endpoint rules in every cache function) was replaced by reading the same variables. Defining the cache's Lua scripts on first use saved 2.3 M; that change was not kept, as the cache's scripts changed with the stampede waiters (they are defined when the cache is built).",
  "- ingress: its first request takes 5 ms of CPU more than the floor's, which makes the same SDK call: ours goes through the DynamoDB document client (marshalling), validates the order first (1 ms in the profile, zod compiling the object's parser) and builds a child logger per request (0.9 ms in the profile). Its module load is 3 ms over the floor's to parse the larger bundle and about 4 ms to run the module scope of what it imports.",
];

/** The target for one hot-key expiry under ours: Redis commands per reader. */
const STAMPEDE_COMMANDS_PER_READER_TARGET = 2;

/** Ours against the three stampede targets, each judged, and whether all are met. */
function stampedeVerdict(ours: StampedeFigure, naive: StampedeFigure | undefined): string {
  const perReader = ours.redisCommands / ours.readers;
  const targets = [
    { met: ours.loaderCalls === 1, text: `${ours.loaderCalls} loader call(s) (target 1)` },
    {
      met: perReader <= STAMPEDE_COMMANDS_PER_READER_TARGET,
      text: `${perReader.toFixed(2)} Redis commands per reader (target ≤ ${STAMPEDE_COMMANDS_PER_READER_TARGET})`,
    },
    naive === undefined
      ? { met: false, text: `p99 ${ours.p99Ms.toFixed(0)} ms (no naive run to judge it against)` }
      : {
          met: ours.p99Ms <= naive.p99Ms,
          text: `p99 ${ours.p99Ms.toFixed(0)} ms against naive cache-aside's ${naive.p99Ms.toFixed(0)} ms in the same rounds (target ≤)`,
        },
  ];
  const verdicts = targets.map((t) => `${t.text}: ${t.met ? 'met' : '**not met**'}`);
  const all = targets.every((t) => t.met);
  return `Ours: ${verdicts.join('; ')}. The targets are **${all ? 'met' : 'not met'}**.`;
}

/** How the rounds make the figures, or nothing for results from before there were rounds. */
function stampedeRounds(s: StampedeFigure | undefined): string {
  const rounds = s?.p99MsByRound?.length;
  if (rounds === undefined) return '';
  return `Each protection runs ${rounds} time(s), the protections interleaved in a rotating order: loader calls and Redis commands are the most in any round, the p99 the median of the rounds' (a latency on a shared machine moves between runs; a count does not).`;
}

/** "500 concurrent readers spread over 10 processes of 5 simulated instances each (…)". */
function stampedeShape(s: StampedeFigure | undefined): string {
  if (s === undefined) return 'concurrent readers';
  return `${s.readers} concurrent readers spread over ${s.processes} processes of ${s.instancesPerProcess} simulated instances each (${s.processes * s.instancesPerProcess} instances, each with its own Redis connections and in-process single-flight)`;
}

export const SECTIONS = ['calls', 'bundles', 'cache', 'backoff', 'backlog', 'latency', 'handler-time'];

function readPrevious(file: string, log: (line: string) => void): Partial<Results> {
  if (!fs.existsSync(file)) return {};
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Results>;
  } catch (error) {
    log(`ignoring unreadable ${file}: ${error instanceof Error ? error.message : String(error)}`);
    return {};
  }
}

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined)
    throw new Error(`${name} is not set: run through \`npm run bench\`, which starts the local servers`);
  return value;
}

/** What one bench run measures and where it writes. */
export interface BenchOptions {
  /** Sections to measure; the others keep their figures from `out`'s results.json. */
  readonly only: ReadonlySet<string>;
  /** Where results.json and REPORT.md go. */
  readonly out: string;
  /** Fresh-process cold starts per handler and per comparison (bundles); 1 in a smoke. */
  readonly runs: number;
  /** Jobs per case and consumer (calls); 1 in a smoke. */
  readonly jobs: number;
  /**
   * Every section at a tiny size, for `npm test` (test/integration/bench-smoke.test.ts): it shows
   * that each section still produces its figures and the report renders, not what they are.
   */
  readonly smoke?: boolean;
  readonly log: (line: string) => void;
}

/** The smoke's sizes: each section's smallest run that still exercises all of its code. */
const SMOKE = {
  cache: { processes: 2, instancesPerProcess: 2, readersPerProcess: 4, rounds: 1, warmReads: 2 },
  backoff: { clients: 4, runs: 1, seeds: 2 },
  backlog: { backlog: 6, expired: 2, critical: 2 },
  latency: {
    jobsPerType: 3,
    warmupPerType: 1,
    ratePerSecond: 5,
    rounds: 1,
    invalidations: 3,
  } satisfies LatencySizes,
  handlerTime: { warmupRounds: 1, rounds: 2 } satisfies HandlerTimeSizes,
} as const;

/** Measures `opts.only`, writes results.json and REPORT.md into `opts.out`; returns what it wrote. */
export async function runBench(opts: BenchOptions): Promise<Results> {
  const { only, log } = opts;
  const unknown = [...only].filter((s) => !SECTIONS.includes(s));
  if (unknown.length > 0)
    throw new Error(`unknown section(s) ${unknown.join(', ')}: choose from ${SECTIONS.join(', ')}`);
  // Sections not measured in this run keep their figures from the previous results.json, so a
  // partial run (--only) updates its sections without dropping the others.
  const previous = readPrevious(path.join(opts.out, 'results.json'), log);
  const smoke = opts.smoke === true;
  const results: Results = {
    generatedAt: new Date().toISOString(),
    machine: { node: process.version, cpus: os.cpus().length, platform: process.platform },
    calls: only.has('calls')
      ? await measureCalls({ awsEndpoint: requireEnv('AWS_ENDPOINT_URL'), jobs: smoke ? 1 : opts.jobs, log })
      : previous.calls,
    bundles: only.has('bundles')
      ? await measureBundles({ runs: smoke ? 1 : opts.runs, log })
      : previous.bundles,
    cache: only.has('cache')
      ? await measureCache({
          redisUrl: requireEnv('REDIS_URL'),
          log,
          ...(smoke ? { sizes: SMOKE.cache } : {}),
        })
      : previous.cache,
    backoff: only.has('backoff')
      ? await measureBackoff({
          awsEndpoint: requireEnv('AWS_ENDPOINT_URL'),
          log,
          ...(smoke ? { sizes: SMOKE.backoff } : {}),
        })
      : previous.backoff,
    backlog: only.has('backlog')
      ? await measureBacklog({ log, ...(smoke ? { sizes: SMOKE.backlog } : {}) })
      : previous.backlog,
    latency: only.has('latency')
      ? await measureLatency({ log, ...(smoke ? { sizes: SMOKE.latency } : {}) })
      : previous.latency,
    handlerTime: only.has('handler-time')
      ? await measureHandlerTime({ log, ...(smoke ? { sizes: SMOKE.handlerTime } : {}) })
      : previous.handlerTime,
    measuredNow: [...only],
  };
  fs.mkdirSync(opts.out, { recursive: true });
  fs.writeFileSync(path.join(opts.out, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  fs.writeFileSync(path.join(opts.out, 'REPORT.md'), `${report(results)}\n`);
  log(`wrote ${path.join(opts.out, 'results.json')} and REPORT.md`);
  return results;
}

async function main(): Promise<void> {
  const program = new Command('bench')
    .description(
      "Measure calls per job and their cost, cache round trips, stampede protection, bundle size and cold start, backoff under contention, a backlog behind a paused consumer, enqueue → done and invalidation latency, the handler's own time per batch against its by-the-book peer.",
    )
    .option(
      '--runs <n>',
      'fresh-process cold starts per handler and per comparison (bare, floor, peer)',
      '15',
    )
    .option('--jobs <n>', 'jobs per case and consumer in the calls section', '20')
    .option('--only <sections>', `comma-separated: ${SECTIONS.join(',')}`, SECTIONS.join(','))
    .option('--out <dir>', 'where results.json and REPORT.md go', path.resolve(__dirname))
    .option(
      '--smoke',
      "every section at a tiny size, as npm test runs it: checks that the sections work, not what they measure (use with --out, or it overwrites the report's figures)",
    )
    .option(
      '--render',
      "measure nothing: write REPORT.md again from --out's results.json (after the report's text changed)",
    );
  program.parse();
  const opts = program.opts<{
    runs: string;
    jobs: string;
    only: string;
    out: string;
    smoke?: boolean;
    render?: boolean;
  }>();
  if (opts.render === true) {
    const file = path.join(opts.out, 'results.json');
    if (!fs.existsSync(file)) program.error(`--render: there is no ${file} to render; run the bench first`);
    fs.writeFileSync(
      path.join(opts.out, 'REPORT.md'),
      `${report(JSON.parse(fs.readFileSync(file, 'utf8')) as Results)}\n`,
    );
    process.stderr.write(`[bench] wrote ${path.join(opts.out, 'REPORT.md')} from ${file}\n`);
    return;
  }
  const only = new Set(opts.only.split(','));
  const unknown = [...only].filter((s) => !SECTIONS.includes(s));
  if (unknown.length > 0)
    program.error(`unknown section(s) ${unknown.join(', ')}: choose from ${SECTIONS.join(', ')}`);
  await runBench({
    only,
    out: opts.out,
    runs: Number(opts.runs),
    jobs: Number(opts.jobs),
    smoke: opts.smoke === true,
    log: (line) => void process.stderr.write(`[bench] ${line}\n`),
  });
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
