/**
 * Flag reconciler failing (runbooks/flag-reconciler.md): the reconciler no longer runs, and a pause
 * flag written straight into SSM (by a teammate or an automation) is not enforced: the consumer
 * keeps running while its flag says paused. `tenang status` shows the drift; `tenang pause` and
 * `tenang resume` apply the mapping state themselves, so they work without the reconciler.
 * Any job type: `--job-type`, else the app's default for the drill (drill-jobs.ts).
 */
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { setTimeout as sleep } from 'node:timers/promises';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill, DrillCheck, DrillContext } from './drill';
import { drillJobs } from './drill-jobs';
import { consumerStatus } from './support';

const info = drillInfo('flag-reconciler');

export const flagReconciler: Drill = {
  ...info,
  async run(ctx) {
    try {
      return await drill(ctx);
    } finally {
      await ctx.platform.suspendReconciler(false);
    }
  },
};

async function drill(ctx: DrillContext): Promise<readonly DrillCheck[]> {
  const jobs = drillJobs(ctx, info);
  const target = jobs.target;
  const job = ctx.config.jobTypes.find((j) => j.name === target.jobType);
  if (job === undefined) throw new Error(`no ${target.jobType} job type`);
  await ctx.platform.suspendReconciler(true);
  const ssm = new SSMClient({ endpoint: ctx.platform.env.endpoint, region: ctx.platform.env.region });
  try {
    await ssm.send(
      new PutParameterCommand({
        Name: job.pauseFlagName,
        Value: JSON.stringify({
          paused: true,
          reason: 'set by hand in the console (drill)',
          until: new Date(Date.now() + 30 * 60_000).toISOString(),
          setBy: 'someone',
        }),
        Type: 'String',
        Overwrite: true,
      }),
    );
  } finally {
    ssm.destroy();
  }
  await sleep(3_000);
  const drifted = await consumerStatus(ctx, target.consumer);
  // Contain: enforce the pause through the CLI, which updates the mapping itself and verifies it.
  const paused = await ctx.tenang([
    'pause',
    target.consumer,
    '--reason',
    'enforcing the pause while the reconciler is down (drill)',
    '--for',
    '30m',
  ]);
  const enforced = await consumerStatus(ctx, target.consumer);
  await jobs.send(2);
  // Recover: the reconciler is fixed; resume and watch the work done once.
  await ctx.platform.suspendReconciler(false);
  const resumed = await ctx.tenang(['resume', target.consumer]);
  await jobs.untilDone();
  const after = await consumerStatus(ctx, target.consumer);
  return [
    ctx.check(
      'drift shown',
      drifted.paused && drifted.drift && drifted.mappingState === 'Enabled',
      `flag paused=${drifted.paused}, mapping ${drifted.mappingState}, drift=${drifted.drift}`,
    ),
    ctx.check(
      'pause enforced without the reconciler',
      paused.code === 0 && enforced.mappingState === 'Disabled' && !enforced.drift,
      `pause exited ${paused.code}; mapping ${enforced.mappingState}, drift=${enforced.drift}`,
    ),
    ctx.check(
      'resumed',
      resumed.code === 0 && !after.paused && after.mappingState === 'Enabled' && !after.drift,
      `resume exited ${resumed.code}; mapping ${after.mappingState}, drift=${after.drift}`,
    ),
    ...(await jobs.checks()),
  ];
}
