/**
 * Retry storm (runbooks/retry-storm.md): the provider a consumer calls is down, so every job fails
 * and comes back after its backoff. The runbook pauses the consumer instead of letting it hammer
 * the provider, and resumes it once the provider is back. Any job type that calls a provider: the
 * job type `--job-type` names, else the app's default for the drill (drill-jobs.ts).
 */
import { drillInfo } from '../ops/drills/catalog';
import type { Drill } from './drill';
import { drillJobs, providerRequests } from './drill-jobs';
import { consumerStatus, queueDepth } from './support';

const info = drillInfo('retry-storm');

export const retryStorm: Drill = {
  ...info,
  async run(ctx) {
    const jobs = drillJobs(ctx, info);
    const target = jobs.target;
    const { providers } = jobs;
    if (providers.length === 0)
      throw new Error(
        `drill retry-storm needs a job type that calls a provider; ${target.jobType} calls none`,
      );
    const sent = 3;
    // What an earlier incident left in the DLQ is not this drill's.
    const dlqBefore = await queueDepth(ctx.sqs, target.dlqUrl);
    // Incident: the provider is down; jobs keep arriving and fail against it.
    for (const p of providers) p.set({ outage: true });
    const before = providerRequests(providers);
    await jobs.send(sent);
    await ctx.until(
      () => Promise.resolve(providerRequests(providers) - before >= sent ? true : undefined),
      `the ${target.consumer} to fail against the provider`,
    );

    // Detect, then contain: pause the sheddable consumer (its pause cost is late e-mails).
    const detected = await consumerStatus(ctx, target.consumer);
    const paused = await ctx.tenang([
      'pause',
      target.consumer,
      '--reason',
      'provider outage (drill)',
      '--for',
      '30m',
    ]);
    // `tenang pause` returns once the mapping is Disabled (a batch already running finished); the
    // wait covers a reply still on its way from the provider.
    await new Promise((r) => setTimeout(r, 2_000));
    const requestsWhenPaused = providerRequests(providers);
    // Let the backoff of every failed message run out while paused: nothing reaches the provider.
    await new Promise((r) => setTimeout(r, 12_000));
    const requestsWhilePaused = providerRequests(providers) - requestsWhenPaused;

    // The provider recovers; return to normal.
    for (const p of providers) p.set({ outage: false });
    const resumed = await ctx.tenang(['resume', target.consumer]);
    await jobs.untilDone();
    const after = await consumerStatus(ctx, target.consumer);
    const dlq = await queueDepth(ctx.sqs, target.dlqUrl);
    return [
      ctx.check('pause accepted', paused.code === 0, `tenang pause exited ${paused.code}`),
      ctx.check(
        'no provider calls while paused',
        requestsWhilePaused === 0,
        `${requestsWhilePaused} request(s) reached the provider while the consumer was paused`,
      ),
      ctx.check('resume accepted', resumed.code === 0, `tenang resume exited ${resumed.code}`),
      ctx.check(
        'consumer running again',
        !after.paused && after.mappingState === 'Enabled',
        `paused=${after.paused}, mapping ${after.mappingState} (was ${detected.mappingState} at detection)`,
      ),
      ctx.check(
        'nothing dead-lettered',
        dlq.visible + dlq.inFlight === dlqBefore.visible + dlqBefore.inFlight,
        `DLQ holds ${dlq.visible + dlq.inFlight} (held ${dlqBefore.visible + dlqBefore.inFlight} before)`,
      ),
      ...(await jobs.checks()),
    ];
  },
};
