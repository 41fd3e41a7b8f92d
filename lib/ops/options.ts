/** Command options are parsed by a schema; any problem is a usage error (exit 2) naming every option at fault. */
import * as z from '../config/zod';
import { UsageError } from './cli-context';

/** Parses commander's option object with `schema`; throws UsageError listing each problem. */
export function parseOptions<S extends z.ZodMiniType>(schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data as z.infer<S>;
  const problems = parsed.error.issues.map((issue) => {
    const name = issue.path.map(String).join('.');
    const flag = name === '' ? 'options' : `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    return `${flag}: ${issue.message}`;
  });
  throw new UsageError(problems.join('\n'));
}

/** A non-empty string option. */
export const nonEmpty = (what: string): z.ZodMiniString<string> =>
  z.string(`${what} is required`).check(z.minLength(1, `${what} must not be empty`));

/** `--rate 5/s` or `--rate 5`: messages per second, > 0. */
export const RateSchema = z.pipe(
  z.string().check(z.regex(/^[0-9]+(\.[0-9]+)?(\/s)?$/, 'must be a rate like 5/s')),
  z.pipe(
    z.transform((text: string): number => Number(text.replace('/s', ''))),
    z.number().check(z.positive('must be more than 0/s')),
  ),
);

/** A positive whole number given as text (commander passes strings). */
export const CountSchema = z.pipe(
  z.string().check(z.regex(/^[1-9][0-9]*$/, 'must be a whole number of at least 1')),
  z.transform((text: string): number => Number(text)),
);
