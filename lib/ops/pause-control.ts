/**
 * Pausing is declarative (B4): the SSM flag is the desired state. The CLI writes it and then
 * reconciles the consumer's mapping at once, rather than waiting for the reconciler, and checks
 * that the Lambda API reports the final state.
 */
import { GetParameterCommand, ParameterNotFound, PutParameterCommand } from '@aws-sdk/client-ssm';
import { LambdaMappingControl } from '../adapters/aws/lambda-mappings';
import { pauseFlagSchema, readPauseFlag, type PauseFlag, type PauseState } from '../core/flags';
import { CommandFailedError, type CliContext } from './cli-context';
import { discoverResources, mappingOf, type ConsumerEntry } from './pipeline-resources';

/**
 * How long to wait for Enabling/Disabling to settle. @default 15 s. A pause whose mapping is
 * still Disabling then (a batch received before it still running) succeeds as Disabling.
 */
export const CONVERGE_TIMEOUT_MS = 15_000;
const POLL_MS = 250;

/** What a pause or resume did. */
export interface PauseResult {
  readonly consumer: string;
  readonly flagName: string;
  readonly flag: PauseFlag;
  readonly mappingId: string;
  readonly stateBefore: string;
  readonly stateAfter: string;
  readonly dryRun: boolean;
}

/** Writes `flag` for `entry` and makes its mapping Enabled = !paused, verified. */
export async function applyPause(
  context: CliContext,
  entry: ConsumerEntry,
  flag: PauseFlag,
  opts: { readonly dryRun: boolean; readonly timeoutMs?: number },
): Promise<PauseResult> {
  const value = pauseFlagSchema().parse(flag);
  const flagName = entry.kind === 'queue' ? entry.jobType.pauseFlagName : entry.stream.pauseFlagName;
  const resources = await discoverResources(context);
  const mapping = mappingOf(context, resources, entry.consumer);
  const base = {
    consumer: entry.consumer,
    flagName,
    flag: value,
    mappingId: mapping.uuid,
    stateBefore: mapping.state,
  };
  if (opts.dryRun) return { ...base, stateAfter: mapping.state, dryRun: true };

  await context.clients.ssm.send(
    new PutParameterCommand({
      Name: flagName,
      Value: JSON.stringify(value),
      Type: 'String',
      Overwrite: true,
    }),
  );
  const control = new LambdaMappingControl(context.clients.lambda);
  const enabled = !value.paused;
  await control.setEnabled(mapping.uuid, enabled);
  const deadline = Date.now() + (opts.timeoutMs ?? CONVERGE_TIMEOUT_MS);
  const wanted = enabled ? 'Enabled' : 'Disabled';
  for (;;) {
    const status = await control.get(mapping.uuid);
    if (status.state === wanted) return { ...base, stateAfter: status.state, dryRun: false };
    // Disabling: no new batches are taken; the ones received before may take up to the function's
    // timeout to finish. The pause is in effect, so it is not a failure.
    const late = Date.now() > deadline;
    if (late && !enabled && status.state === 'Disabling')
      return { ...base, stateAfter: status.state, dryRun: false };
    if (late) {
      throw new CommandFailedError(
        `the flag ${flagName} is written, but mapping ${mapping.uuid} reports ${status.state}, not ${wanted}, after ${
          (opts.timeoutMs ?? CONVERGE_TIMEOUT_MS) / 1000
        } s; the flag reconciler will retry (check "tenang status")`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** A consumer's pause flag as it stands (no parameter: not paused). */
export async function readConsumerPause(context: CliContext, flagName: string): Promise<PauseState> {
  let raw: string | undefined;
  try {
    const { Parameter } = await context.clients.ssm.send(new GetParameterCommand({ Name: flagName }));
    raw = Parameter?.Value;
  } catch (error) {
    if (!(error instanceof ParameterNotFound)) throw error;
  }
  return readPauseFlag(raw, context.now());
}
