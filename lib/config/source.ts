/**
 * Where a running part of the pipeline finds the app's declaration. The app passes its
 * declaration to the stack (lib/infra/app.ts); the stack writes it, as JSON, into every
 * function's bundle (esbuild replaces `process.env.TENANG_PIPELINE` at build time) and into the
 * template's metadata (`tenang:pipeline`), where the CLI and the local platform read it. No part
 * of the library knows any app's job types.
 */
import { PipelineConfigError } from './errors';
import { loadPipelineConfig, type PipelineConfig } from './load';
import type { PipelineInput } from './schema';

/** The variable (and bundle constant) holding the declaration as JSON. */
export const PIPELINE_VARIABLE = 'TENANG_PIPELINE';
/**
 * The bundle constant holding the declaration already loaded (PipelineConfig as JSON) for its
 * declared stage and region: a function bundled by the stack reads it with JSON.parse instead of
 * validating the declaration again on every cold start (about 3 ms, bench/REPORT.md), which the
 * synth already did. Never set as an environment variable.
 */
export const PIPELINE_RESOLVED_VARIABLE = 'TENANG_PIPELINE_RESOLVED';
/** The template metadata key holding the declaration. */
export const PIPELINE_METADATA_KEY = 'tenang:pipeline';
/** The construct context key under which a stack hands the declaration to its functions. */
export const PIPELINE_CONTEXT_KEY = 'tenang:pipeline-json';

/** A declaration as an app writes it: one per stage, stage name and region given. */
export type PipelineDeclaration = (stageName: string, region: string) => PipelineInput;

/** The declaration as JSON (what the bundle and the template carry). */
export function encodePipeline(input: PipelineInput): string {
  return JSON.stringify(input);
}

/**
 * What the stack compiles into every function's bundle (esbuild `define`): the declaration, and
 * the config loaded from it for its declared stage and region (PIPELINE_RESOLVED_VARIABLE).
 * @throws PipelineConfigError when the declaration is not valid: at synth, not at a cold start.
 */
export function pipelineBundleDefines(encoded: string): Record<string, string> {
  const config = decodePipeline(encoded, 'pipeline declaration');
  return {
    [`process.env.${PIPELINE_VARIABLE}`]: JSON.stringify(encoded),
    [`process.env.${PIPELINE_RESOLVED_VARIABLE}`]: JSON.stringify(JSON.stringify(config)),
  };
}

/**
 * Parses an encoded declaration and loads it for `stage` and `region` (a declaration read back
 * for another stage of the same app, e.g. in tests, keeps everything but those two).
 * @throws PipelineConfigError when it is missing, not JSON or not a valid declaration.
 */
export function decodePipeline(
  encoded: string | undefined,
  where: string,
  stage?: string,
  region?: string,
): PipelineConfig {
  if (encoded === undefined || encoded.trim() === '') {
    throw new PipelineConfigError([
      `${where}: no pipeline declaration (${PIPELINE_VARIABLE}); build the function through the tenang stack, or set ${PIPELINE_VARIABLE} to the declaration's JSON`,
    ]);
  }
  let input: PipelineInput;
  try {
    input = JSON.parse(encoded) as PipelineInput;
  } catch (cause) {
    throw new PipelineConfigError([
      `${where}: the pipeline declaration is not JSON: ${(cause as Error).message}`,
    ]);
  }
  if (
    typeof input !== 'object' ||
    input === null ||
    typeof input.stage !== 'object' ||
    input.stage === null
  ) {
    throw new PipelineConfigError([`${where}: the pipeline declaration has no stage`]);
  }
  return loadPipelineConfig({
    ...input,
    stage: {
      ...input.stage,
      ...(stage === undefined ? {} : { name: stage }),
      ...(region === undefined ? {} : { region }),
    },
  });
}

/**
 * The declaration a synthesized or deployed template carries in its metadata.
 * @throws PipelineConfigError when the template has none (not built by the tenang stack).
 */
export function pipelineFromTemplate(
  template: { readonly Metadata?: Readonly<Record<string, unknown>> },
  where: string,
  stage?: string,
  region?: string,
): PipelineConfig {
  const declared = template.Metadata?.[PIPELINE_METADATA_KEY];
  if (declared === undefined) {
    throw new PipelineConfigError([
      `${where}: the template has no ${PIPELINE_METADATA_KEY} metadata; was it built by tenang's PipelineStack?`,
    ]);
  }
  return decodePipeline(
    typeof declared === 'string' ? declared : JSON.stringify(declared),
    where,
    stage,
    region,
  );
}
