/**
 * Function environment parsing: one zod schema per function, one error listing every missing or
 * invalid variable (STYLE.md: config fails early and completely).
 */
import type * as z from '../config/zod';
import { loadPipelineConfig, referencePipeline, type PipelineConfig } from '../config';

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
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  throw new FunctionEnvError(
    functionName,
    parsed.error.issues.map((i) => {
      const name = i.path.map(String).join('.') || 'environment';
      return i.code === 'invalid_type' && (env as Record<string, unknown>)[name] === undefined
        ? `${name}: is not set`
        : `${name}: ${i.message}`;
    }),
  );
}

/** The pipeline config of the function's stage (TENANG_STAGE) and region (AWS_REGION). */
export function stageConfig(stage: string, region: string | undefined): PipelineConfig {
  return loadPipelineConfig(referencePipeline(stage, region ?? 'us-east-1'));
}
