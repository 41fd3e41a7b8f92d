/** The local environment cannot be started or reached; the message says how to fix it. */
export class LocalEnvError extends Error {
  override readonly name: string = 'LocalEnvError';

  /** Creates the error; pass the underlying failure as `cause`. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** A poll gave up because its deadline passed before the awaited condition held. */
export class DeadlineExceededError extends LocalEnvError {
  override readonly name: string = 'DeadlineExceededError';
}
