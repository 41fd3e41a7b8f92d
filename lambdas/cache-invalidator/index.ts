/** cache-invalidator: implemented by the Runtime issue; until then it refuses every invocation loudly. */
export const handler = (): Promise<never> =>
  Promise.reject(new Error('cache-invalidator is not implemented yet (Runtime issue)'));
