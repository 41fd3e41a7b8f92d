/** The errors of local alarm evaluation: definitions it cannot evaluate, and evaluations that met problems. */

/** An alarm definition the local evaluator cannot evaluate (unsupported expression, operator, rule…). */
export class AlarmDefinitionError extends Error {
  override readonly name: string = 'AlarmDefinitionError';

  /** Creates the error; pass the underlying failure as `cause`. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** One evaluation met problems; every other alarm was still evaluated. */
export class AlarmEvaluationError extends Error {
  override readonly name: string = 'AlarmEvaluationError';

  /** Creates the error from every problem of the evaluation. */
  constructor(public readonly problems: readonly string[]) {
    super(`alarm evaluation: ${problems.length} problem(s):\n- ${problems.join('\n- ')}`);
  }
}
