/**
 * Reads CloudWatch embedded metric format (EMF) documents out of the lines functions print, as
 * CloudWatch Logs extracts them: one sample per metric value and dimension set.
 */
import type { MetricSample } from './metric-store';

/** A line carried an `_aws` EMF directive CloudWatch would reject. */
export class EmfFormatError extends Error {
  override readonly name: string = 'EmfFormatError';

  /** Creates the error; pass the underlying failure as `cause`. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * The metric values of one output line: every `_aws.CloudWatchMetrics` directive, each of its
 * dimension sets, each value (Powertools writes an array when a metric was added repeatedly).
 * Lines that are not EMF documents give none; an EMF document CloudWatch would reject throws.
 */
export function parseEmf(line: string): MetricSample[] {
  if (!line.includes('"_aws"')) return [];
  const start = line.indexOf('{');
  if (start < 0) return [];
  let doc: unknown;
  try {
    doc = JSON.parse(line.slice(start));
  } catch {
    // A log line that mentions "_aws" without being a document.
    return [];
  }
  if (typeof doc !== 'object' || doc === null || !('_aws' in doc)) return [];
  const root = doc as Record<string, unknown>;
  const directives = (root._aws as { CloudWatchMetrics?: unknown } | null)?.CloudWatchMetrics;
  if (!Array.isArray(directives)) throw new EmfFormatError('_aws.CloudWatchMetrics is not an array');
  const samples: MetricSample[] = [];
  for (const directive of directives as unknown[]) {
    const d = directive as { Namespace?: unknown; Dimensions?: unknown; Metrics?: unknown };
    if (typeof d.Namespace !== 'string') throw new EmfFormatError('a directive has no Namespace');
    if (!Array.isArray(d.Dimensions) || !Array.isArray(d.Metrics))
      throw new EmfFormatError(`directive ${d.Namespace}: Dimensions and Metrics must be arrays`);
    const sets = (d.Dimensions as unknown[]).length === 0 ? [[]] : (d.Dimensions as unknown[]);
    for (const metric of d.Metrics as unknown[]) {
      const name = (metric as { Name?: unknown }).Name;
      if (typeof name !== 'string')
        throw new EmfFormatError(`directive ${d.Namespace}: a metric has no Name`);
      const raw = root[name];
      const values = Array.isArray(raw) ? (raw as unknown[]) : [raw];
      if (values.some((v) => typeof v !== 'number' || !Number.isFinite(v)))
        throw new EmfFormatError(
          `metric ${name}: value ${JSON.stringify(raw)} is not a number or an array of numbers`,
        );
      for (const set of sets) {
        if (!Array.isArray(set))
          throw new EmfFormatError(`directive ${d.Namespace}: a dimension set is not an array`);
        const dimensions: Record<string, string> = {};
        for (const key of set as unknown[]) {
          const value = typeof key === 'string' ? root[key] : undefined;
          if (typeof value !== 'string')
            throw new EmfFormatError(`metric ${name}: dimension ${String(key)} has no string value`);
          dimensions[key as string] = value;
        }
        for (const value of values as number[])
          samples.push({ namespace: d.Namespace, name, dimensions, value });
      }
    }
  }
  return samples;
}
