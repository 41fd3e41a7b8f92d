/**
 * Building a value, typically a zod schema, on its first use rather than at module scope: a
 * schema a function does not need on every cold start (the declaration's, which a function
 * never validates; a job envelope's, which a producer never parses) then costs it nothing.
 */

/**
 * The value `build` returns, built on the first call and kept. Mark the call that declares a
 * module's schema with it `@__PURE__`, as lib/config/schema.ts does: esbuild then drops the
 * schema from a bundle that never uses it.
 */
export function onFirstUse<T>(build: () => T): () => T {
  let built: T | undefined;
  return () => (built ??= build());
}
