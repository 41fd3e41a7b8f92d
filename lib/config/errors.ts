/** Raised when the pipeline declaration is invalid; lists every problem at once. */
export class PipelineConfigError extends Error {
  /** One line per problem, each starting with the path of the offending field. */
  public readonly problems: readonly string[];

  public constructor(problems: readonly string[]) {
    super(
      `Invalid pipeline config (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
        problems.map((p) => `  - ${p}`).join('\n'),
    );
    this.name = 'PipelineConfigError';
    this.problems = problems;
  }
}
