/**
 * Function environment parsing: one zod schema per function, one error listing every missing or
 * invalid variable (config fails early and completely, as loadPipelineConfig does).
 */
import type * as z from '../config/zod';
import { decodePipeline, type PipelineConfig } from '../config';

/** A function's environment is missing or malformed. */
export class FunctionEnvError extends Error {
  /** One line per variable. */
  public readonly problems: readonly string[];

  public constructor(functionName: string, problems: readonly string[]) {
    super(`Invalid environment of ${functionName}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'FunctionEnvError';
    this.problems = problems;
  }
}

/** Parses `env` with `schema`, or throws one FunctionEnvError naming every bad variable. */
export function parseFunctionEnv<S extends z.ZodMiniType>(
  functionName: string,
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  const checked = checkFunctionEnv(schema, env);
  if (checked.success) return checked.data;
  throw new FunctionEnvError(functionName, checked.problems);
}

/** Parses `env` with `schema`: its data, or one line per missing or invalid variable. */
export function checkFunctionEnv<S extends z.ZodMiniType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
):
  | { readonly success: true; readonly data: z.output<S> }
  | { readonly success: false; readonly problems: readonly string[] } {
  const parsed = schema.safeParse(env);
  if (parsed.success) return { success: true, data: parsed.data };
  return {
    success: false,
    problems: parsed.error.issues.map((i) => {
      const name = i.path.map(String).join('.') || 'environment';
      return i.code === 'invalid_type' && (env as Record<string, unknown>)[name] === undefined
        ? `${name}: is not set`
        : `${name}: ${i.message}`;
    }),
  };
}

/**
 * The app's pipeline config for the function's stage (TENANG_STAGE) and region (AWS_REGION).
 * The declaration is the one the stack was built with: written as `process.env.TENANG_PIPELINE`
 * so that esbuild replaces it with the JSON at bundle time (lib/infra/tenang-function.ts); a
 * process that runs this code unbundled (a test, the CLI) sets the variable instead. A bundle
 * also carries the config the synth loaded from it (`process.env.TENANG_PIPELINE_RESOLVED`,
 * pipelineBundleDefines); when its stage and region are the function's, that is used as it is.
 */
export function stageConfig(stage: string, region: string | undefined): PipelineConfig {
  const where = region ?? 'us-east-1';
  const resolved = process.env.TENANG_PIPELINE_RESOLVED;
  if (resolved !== undefined && resolved !== '') {
    const config = JSON.parse(resolved) as PipelineConfig;
    if (config.stage.name === stage && config.stage.region === where) return config;
  }
  return decodePipeline(process.env.TENANG_PIPELINE, 'function bundle', stage, where);
}
