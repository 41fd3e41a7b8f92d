/** Builds the CDK app: the pipeline stack for the selected stage, with cdk-nag packs attached. */
import { App, DefaultStackSynthesizer, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { PipelineConfigError, type PipelineConfig, type PipelineDeclaration } from '../config';
import { withAlarmEmail } from '../config/alarm-email';
import { TenangChecks } from '../audit/tenang-checks';
import { PipelineStack } from './pipeline-stack';
import { stackName } from './stack-name';
import { ALARM_EMAIL_CONTEXT_KEY, STAGE_CONTEXT_KEY, targetTraits } from './target';

export { withAlarmEmail };

/** Default region when neither the config nor the CDK environment names one. */
export const DEFAULT_REGION = 'us-east-1';

export { stackName } from './stack-name';

/** What buildApp created, for tests and the local platform. */
export interface BuiltApp {
  readonly app: App;
  readonly stack: PipelineStack;
  readonly config: PipelineConfig;
}

/**
 * An invalid declaration as `cdk synth` should show it: the stage and the listed problems, no stack
 * trace. Node prints an uncaught error's `stack` and its own enumerable properties, and CDK prints
 * what the app wrote: a trace would point into tenang's loader, never at the mistake, and the
 * problems would be printed twice. Still thrown (not printed and exited): callers, tests among
 * them, get the PipelineConfigError with its `problems`.
 */
export function declarationError(error: PipelineConfigError, stage: string): PipelineConfigError {
  const reported = new PipelineConfigError(error.problems);
  const count = `${error.problems.length} problem${error.problems.length === 1 ? '' : 's'}`;
  reported.message = [
    `Invalid pipeline declaration for stage "${stage}" (${count}):`,
    ...error.problems.map((p) => `  - ${p}`),
  ].join('\n');
  reported.stack = `${reported.name}: ${reported.message}`;
  Object.defineProperty(reported, 'problems', { enumerable: false });
  return reported;
}

/**
 * Creates the pipeline stack of the app's declaration `pipeline` inside `app` and attaches the AwsSolutions, Serverless and Tenang
 * (worker-queue audit, P4) nag packs; an unacknowledged finding fails synthesis.
 */
export function buildApp(
  app: App,
  pipeline: PipelineDeclaration,
  region: string = DEFAULT_REGION,
  opts: { readonly appDir?: string } = {},
): BuiltApp {
  const stage: unknown = app.node.tryGetContext(STAGE_CONTEXT_KEY) ?? 'dev';
  if (typeof stage !== 'string') throw new Error(`CDK context ${STAGE_CONTEXT_KEY} must be a string`);
  const traits = targetTraits(app);
  let stack: PipelineStack;
  try {
    stack = new PipelineStack(app, stackName(stage), {
      pipeline: withAlarmEmail(pipeline(stage, region), app.node.tryGetContext(ALARM_EMAIL_CONTEXT_KEY)),
      ...(opts.appDir === undefined ? {} : { appDir: opts.appDir }),
      traits,
      // Account-agnostic on purpose: no context lookups, so synth is the same on every machine.
      env: { region },
      description: `tenang worker-queue pipeline (${stage}, target ${traits.target})`,
      synthesizer: new DefaultStackSynthesizer({ generateBootstrapVersionRule: traits.bootstrapVersionRule }),
    });
  } catch (error) {
    throw error instanceof PipelineConfigError ? declarationError(error, stage) : error;
  }
  Validations.of(app).addPlugins(
    new AwsSolutionsChecks(app),
    new ServerlessChecks(app),
    new TenangChecks(app),
  );
  return { app, stack, config: stack.config };
}
