/**
 * Function environment parsing: one zod schema per function, one error listing every missing or
 * invalid variable (config fails early and completely, as loadPipelineConfig does).
 */
import type * as z from '../config/zod';
import { decodePipeline, restagePipeline, type PipelineConfig } from '../config';

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
 * A function bundled by the stack carries the config the synth loaded from the app's declaration
 * (`process.env.TENANG_PIPELINE_RESOLVED`, written in by esbuild, lib/infra/tenang-function.ts):
 * it is used as it is, or, in another stage or region, with the names derived from them derived
 * again (restagePipeline). A process that runs this code unbundled (a test, the CLI) sets
 * `TENANG_PIPELINE` to the declaration instead, which is then loaded and validated.
 */
export function stageConfig(stage: string, region: string | undefined): PipelineConfig {
  const where = region ?? 'us-east-1';
  // process.env.TENANG_PIPELINE_RESOLVED is written out each time, not read into a variable: in a
  // bundle esbuild then sees the constant, drops this branch and with it the declaration's loader
  // (its schemas and checks), which no bundled function runs.
  if (!process.env.TENANG_PIPELINE_RESOLVED)
    return decodePipeline(process.env.TENANG_PIPELINE, 'function bundle', stage, where);
  const config = JSON.parse(process.env.TENANG_PIPELINE_RESOLVED) as PipelineConfig;
  return config.stage.name === stage && config.stage.region === where
    ? config
    : restagePipeline(config, stage, where);
}
