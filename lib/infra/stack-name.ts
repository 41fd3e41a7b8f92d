/**
 * The name of a stage's stack. Its own module, free of aws-cdk-lib: the CLI names the stack on
 * every command, and only `tenang audit` may load the CDK (bench/CLI.md).
 */

/** Name of a stage's stack. */
export function stackName(stage: string): string {
  return `tenang-${stage}`;
}
