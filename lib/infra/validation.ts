/** Props validation for constructs: collect every problem, then fail once. */

/** Raised by a construct whose props are invalid; lists every problem. */
export class ConstructPropsError extends Error {
  /** One line per problem. */
  public readonly problems: readonly string[];

  public constructor(construct: string, problems: readonly string[]) {
    super(`Invalid props for ${construct}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConstructPropsError';
    this.problems = problems;
  }
}

/** A rule: returns a problem description, or undefined when the props satisfy it. */
export type PropsRule<P> = (props: P) => string | undefined;

/** Runs every rule and throws one ConstructPropsError listing all problems found. */
export function validateProps<P>(construct: string, props: P, rules: readonly PropsRule<P>[]): void {
  const problems = rules.map((rule) => rule(props)).filter((p): p is string => p !== undefined);
  if (problems.length > 0) throw new ConstructPropsError(construct, problems);
}

/** Rule helper: environment variable names are SCREAMING_SNAKE_CASE and carry no secret. */
export function environmentProblems(
  environment: Readonly<Record<string, string>> | undefined,
): string | undefined {
  const bad = Object.keys(environment ?? {}).filter((k) => !/^[A-Z][A-Z0-9_]*$/.test(k));
  const secret = Object.keys(environment ?? {}).filter((k) => /SECRET|PASSWORD|TOKEN|API_KEY/.test(k));
  const parts: string[] = [];
  if (bad.length > 0) parts.push(`environment names must be SCREAMING_SNAKE_CASE: ${bad.join(', ')}`);
  if (secret.length > 0) parts.push(`secrets never go into environment variables: ${secret.join(', ')}`);
  return parts.length > 0 ? parts.join('; ') : undefined;
}
