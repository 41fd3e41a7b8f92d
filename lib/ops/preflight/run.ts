/**
 * What `tenang preflight` does (lib/ops/commands/preflight.ts is its command): finds what the
 * stage needs (a synthesized cdk.out, else the deployed stack's template, else the declaration),
 * reads the account read-only (lib/audit/preflight-reader.ts) and judges it
 * (lib/audit/preflight.ts). Loaded only when the command runs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  evaluatePreflight,
  stageFromConfig,
  stageFromTemplate,
  type ManifestBootstrap,
  type PreflightCheck,
  type StageModel,
} from '../../audit/preflight';
import { deployedTemplate, readPreflightFacts, stackPresence } from '../../audit/preflight-reader';
import { PIPELINE_VARIABLE, type PipelineConfig } from '../../config';
import { UsageError, type CliContext } from '../cli-context';

/** The cloud assembly `cdk synth` writes by default, looked for in the working directory. */
export const DEFAULT_CDK_OUT = 'cdk.out';

/** Options of a preflight run. */
export interface PreflightOptions {
  /** A cdk.out directory to read the stage from. @default ./cdk.out when it holds the stage's stack */
  readonly cdkOut?: string;
  /** Shards assumed per stream that does not exist yet. */
  readonly assumedShards: number;
}

/** What a preflight found, and from what. */
export interface PreflightResult {
  /** Where the stage model came from. */
  readonly source: string;
  readonly notes: readonly string[];
  readonly checks: readonly PreflightCheck[];
}

interface ManifestArtifact {
  readonly type?: string;
  readonly properties?: {
    readonly templateFile?: string;
    readonly stackName?: string;
    readonly requiresBootstrapStackVersion?: number;
    readonly bootstrapStackVersionSsmParameter?: string;
  };
  readonly dependencies?: readonly string[];
}

/**
 * The stage's stack in a cdk.out: its template and the bootstrap its artifact and asset manifests
 * require (the highest of them). Undefined when the assembly holds no such stack.
 */
export function readCdkOut(
  dir: string,
  stackName: string,
): { template: unknown; templateFile: string; bootstrap: ManifestBootstrap } | undefined {
  const manifestFile = path.join(dir, 'manifest.json');
  if (!fs.existsSync(manifestFile))
    throw new UsageError(`--cdk-out ${dir}: no manifest.json (run cdk synth first)`);
  const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as {
    artifacts?: Record<string, ManifestArtifact>;
  };
  const artifacts = manifest.artifacts ?? {};
  const entry = Object.entries(artifacts).find(
    ([id, a]) => a.type === 'aws:cloudformation:stack' && (a.properties?.stackName ?? id) === stackName,
  );
  if (entry === undefined) return undefined;
  const [, stack] = entry;
  const templateFile = path.join(dir, stack.properties?.templateFile ?? `${stackName}.template.json`);
  const related = [stack, ...(stack.dependencies ?? []).map((id) => artifacts[id])].filter(
    (a): a is ManifestArtifact => a !== undefined,
  );
  const versions = related
    .map((a) => a.properties?.requiresBootstrapStackVersion)
    .filter((v): v is number => typeof v === 'number');
  const parameter = related
    .map((a) => a.properties?.bootstrapStackVersionSsmParameter)
    .find((p): p is string => typeof p === 'string');
  return {
    template: JSON.parse(fs.readFileSync(templateFile, 'utf8')) as unknown,
    templateFile,
    bootstrap: {
      ...(versions.length === 0 ? {} : { requiresBootstrapStackVersion: Math.max(...versions) }),
      ...(parameter === undefined ? {} : { bootstrapStackVersionSsmParameter: parameter }),
    },
  };
}

/** The stage's declaration; without one there is nothing to check against (a usage error). */
function declared(ctx: CliContext): PipelineConfig {
  try {
    return ctx.config;
  } catch (error) {
    throw new UsageError(
      `nothing says what stage "${ctx.stage}" deploys: stack ${ctx.stackName} does not exist and no ${DEFAULT_CDK_OUT} holds it; give --cdk-out <dir> (after cdk synth) or set ${PIPELINE_VARIABLE} (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

/** Runs the preflight of the context's stage. */
export async function runPreflight(ctx: CliContext, options: PreflightOptions): Promise<PreflightResult> {
  const stack = await stackPresence(ctx.clients.cloudformation, ctx.stackName);
  let stage: StageModel;
  const dir = options.cdkOut ?? DEFAULT_CDK_OUT;
  const assembly =
    options.cdkOut !== undefined || fs.existsSync(path.join(dir, 'manifest.json'))
      ? readCdkOut(dir, ctx.stackName)
      : undefined;
  if (assembly !== undefined) {
    stage = stageFromTemplate(assembly.template, ctx.stackName, assembly.templateFile, assembly.bootstrap);
  } else if (options.cdkOut !== undefined) {
    throw new UsageError(
      `--cdk-out ${options.cdkOut}: no stack ${ctx.stackName} in it (synthesize stage ${ctx.stage})`,
    );
  } else if (stack.exists) {
    stage = stageFromTemplate(
      await deployedTemplate(ctx.clients.cloudformation, ctx.stackName),
      ctx.stackName,
      `the deployed stack ${ctx.stackName}`,
    );
  } else {
    stage = stageFromConfig(declared(ctx), ctx.stackName);
  }
  const facts = await readPreflightFacts(ctx.clients, stage, {
    region: ctx.region,
    assumedShards: options.assumedShards,
    stack,
  });
  return { source: stage.source, notes: stage.notes, checks: evaluatePreflight(facts) };
}
