/**
 * An invalid declaration stops `cdk synth` with its listed problems, not a stack trace: buildApp
 * throws a PipelineConfigError whose `stack` is its message, and Node prints an uncaught error as
 * util.inspect shows it (what `npx cdk synth` then relays from the app's process).
 */
import * as path from 'node:path';
import { inspect } from 'node:util';
import { App } from 'aws-cdk-lib';
import { PipelineConfigError, type PipelineInput } from '../../../lib/config';
import { buildApp } from '../../../lib/infra/app';
import { referencePipeline } from '../../../examples/reference/pipeline';

const APP_DIR = path.resolve(__dirname, '..', '..', '..', 'examples', 'reference');
const PROBLEM = 'jobTypes[0].resources.providers: "payment" has no URL in stage.providers (known: messaging)';

/** The reference declaration without the payment provider's URL, which its first job type uses. */
function withoutPaymentProvider(stage: string, region: string): PipelineInput {
  const declaration = referencePipeline(stage, region);
  const { payment: _dropped, ...providers } = declaration.stage.providers as Record<string, string>;
  return { ...declaration, stage: { ...declaration.stage, providers } };
}

describe('Function: buildApp, on an invalid declaration', () => {
  function build(): unknown {
    try {
      buildApp(new App({ context: { 'tenang:stage': 'qa' } }), withoutPaymentProvider, 'us-east-1', {
        appDir: APP_DIR,
      });
    } catch (error) {
      return error;
    }
    throw new Error('buildApp accepted an invalid declaration');
  }

  it('when a job type names a provider with no URL, it throws the stage and the listed problems', () => {
    // Act
    const error = build();

    // Assess
    expect(error).toBeInstanceOf(PipelineConfigError);
    expect((error as PipelineConfigError).message).toBe(
      `Invalid pipeline declaration for stage "qa" (1 problem):\n  - ${PROBLEM}`,
    );
    expect((error as PipelineConfigError).problems).toEqual([PROBLEM]);
  });

  it('when Node prints it uncaught (as under cdk synth), it shows the problems once and no stack trace', () => {
    // Act
    const printed = inspect(build());

    // Assess
    expect(printed).not.toMatch(/\n\s+at /);
    expect(printed).toContain(`Invalid pipeline declaration for stage "qa" (1 problem):\n  - ${PROBLEM}`);
    expect(printed.split(PROBLEM)).toHaveLength(2);
  });
});
